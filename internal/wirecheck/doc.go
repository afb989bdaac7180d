// Package wirecheck holds, for tests only, models of what wc's output must
// satisfy outside wc: the structural rules of Anthropic's Messages API and
// OpenAI's Chat Completions API for request bodies (CheckAnthropic,
// CheckOpenAI), and whycodes' serde types for a share (LoadWhycodes). Each
// is written from the providers' documentation and whycodes' source, not
// from wc's code, so that a test of wc against it can fail.
//
// It imports the standard library only: nothing of wc.
package wirecheck
