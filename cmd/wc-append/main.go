// Command wc-append adds messages and metadata to sessions.
package main

import (
	"github.com/urfave/cli/v2"

	"github.com/wctoolkit/wc/cmd/internal/command"
)

var spec = command.Spec{
	Name:      "wc-append",
	Summary:   "add messages, usage, cost and titles to a session",
	ArgsUsage: "[SESSION...]",
	Description: `Appends to the active path of each SESSION and prints its info as one line of JSON, with the seqs of the new messages under "appended".

With a SESSION argument the messages come from stdin: one message object, an array of them, NDJSON, the lines of wc-export --format jsonl (of one session's path, in its order: the lines of a tree, from --tree, would interleave its branches, and those of two sessions join two conversations; both are refused with status 65), or a provider response body (an Anthropic message or an OpenAI chat completion, whose usage is recorded too). With --role, stdin is instead the raw text of one message of that role. Messages use whycodes' JSON; the Anthropic and OpenAI spellings (tool_use, tool_result, tool_calls, image_url) are read as well, and members wc does not know are kept as they are (a lone surrogate escape in them, \ud800 without its other half, becomes \ufffd, as encoding/json reads it: whycodes and jq refuse it).

Without a SESSION argument the sessions are read from stdin (ids, JSON strings, or the JSON output of any wc command, one per line) and the content comes from --text, --file or --note. That is how wc-append sits in a pipeline.

Messages without created_at are stamped with the current time. Tool output over 32,768 characters is cut to that length with a notice (whycodes' cap; --no-cap keeps it whole). A tool message takes its tool's name from the matching tooluse, and results of the write, edit and apply_patch tools add the "[+N -M]" lines they end with to the session's edit stats. The first user message titles a session whose title is still the default; a session that holds user messages and still has its placeholder title (a legacy "New session - …" share, a path set by wc-branch set-messages) first takes the title of its first prompt, as whycodes' resume does, so that the new prompt does not become the title.

Each session gets every message of the input or, on an error, none. When a session of a list fails, those before it keep what was appended to them, and their lines are printed before the error.`,
	Flags: func() []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "role", Usage: "append one message with this `ROLE` (user, assistant, system, tool) from --text, --file or stdin"},
			&cli.StringFlag{Name: "text", Usage: "the message `TEXT`"},
			&cli.StringFlag{Name: "file", Usage: "read the message text from `FILE` (- for stdin)"},
			&cli.StringFlag{Name: "note", Usage: "append an agent note with `TEXT`: a user-role message that no compaction or undo takes for a user turn"},
			&cli.StringFlag{Name: "tool-call-id", Usage: "with --role tool: the `ID` of the tooluse this output answers"},
			&cli.BoolFlag{Name: "error", Usage: "with --role tool: the tool failed"},
			&cli.BoolFlag{Name: "no-cap", Usage: "store tool output whole instead of capping it at 32,768 characters"},
			&cli.StringFlag{Name: "usage", Usage: "add provider token usage, a `JSON` object with input_tokens, output_tokens and optionally cache_creation_input_tokens and cache_read_input_tokens"},
			&cli.StringFlag{Name: "cost", Usage: "add the cost of one model step in `USD`"},
			&cli.BoolFlag{Name: "unpriced", Usage: "count one model step whose price is unknown"},
			&cli.StringFlag{Name: "title", Usage: "set the title to `TITLE`; no automatic title replaces it"},
			&cli.StringFlag{Name: "generated-title", Usage: "set a model-written `TITLE`, unless a person set one"},
			&cli.StringFlag{Name: "system", Usage: "replace the system prompt with `TEXT`, or @FILE"},
			&cli.StringSliceFlag{Name: "stream-rule", Usage: "record that stream rule `NAME` fired in the current turn (repeatable)"},
		}
	},
	Examples: []command.Example{
		{Text: "Append a user message in a pipeline:", Command: `wc-new | wc-append --role user --text "fix the login bug"`},
		{Text: "Append messages written as NDJSON:", Command: `printf '%s\n' '{"role":"user","content":"hi"}' '{"role":"assistant","content":[{"type":"text","text":"hello"}]}' | wc-append 3f2a`},
		{Text: "Record a model response and what it cost:", Command: `curl -s https://api.anthropic.com/v1/messages ... | wc-append 3f2a --cost 0.0123`},
		{Text: "Append a tool result:", Command: `go test ./... 2>&1 | wc-append 3f2a --role tool --tool-call-id toolu_01`},
	},
	Differences: []command.Difference{
		{Whycodes: "usage_from_chat_completion keeps an OpenAI response's prompt_tokens as input and leaves the cache fields unset, since cached_tokens is a subset of prompt_tokens: the cached count is lost.",
			Wc:   "keeps it as Anthropic counts it: prompt_tokens minus cached_tokens as input, cached_tokens as cache reads, so that the total is still prompt plus completion tokens and nothing is counted twice.",
			Test: "TestDepartureUsageFromChatCompletionLeavesCacheUnset (pkg/session/format/provider_test.go)"},
	},
	Complete: command.Completion{Values: map[string][]string{"role": {"user", "assistant", "system", "tool"}}},
	Action:   appendTo,
}

func main() { command.Main(&spec) }
