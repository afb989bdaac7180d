package format

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

const openAIBody = `{"model":"gpt-4o","temperature":0,
 "messages":[
  {"role":"system","content":"You are terse."},
  {"role":"developer","content":"Use tools."},
  {"role":"user","content":[{"type":"text","text":"what is here?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}}]},
  {"role":"assistant","content":null,"tool_calls":[
    {"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.go\"}"}},
    {"id":"call_2","type":"function","function":{"name":"grep","arguments":"oops"}}]},
  {"role":"tool","tool_call_id":"call_1","content":"package a"},
  {"role":"tool","tool_call_id":"call_2","content":"no match"},
  {"role":"system","content":"Mid-conversation rule."},
  {"role":"assistant","content":"A package.","function_call":{"name":"done","arguments":"{}"}},
  {"role":"function","name":"done","content":"ok"}]}`

func TestOpenAI(t *testing.T) {
	imp := importOne(t, KindOpenAI, []byte(openAIBody), Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{
		"user:what is here?|[image]", "assistant:call call_1|call call_2", "tool:call_1=package a", "tool:call_2=no match",
		"system:Mid-conversation rule.", "assistant:A package.|call call_8", "tool:call_8=ok",
	})
	equal(t, "system prompt", imp.Share.Meta.SystemPrompt, "You are terse.\n\nUse tools.")
	var names []string
	for _, m := range imp.Share.Messages {
		if m.Role == session.RoleTool {
			names = append(names, m.Name)
		}
	}
	equal(t, "tool names", names, []string{"read", "grep", "done"})
	a := imp.Share.Messages[1]
	equal(t, "inputs", []string{string(a.Content.Blocks[0].Input), string(a.Content.Blocks[1].Input)}, []string{`{"path":"a.go"}`, `"oops"`})
	if src := gjson.GetBytes(fieldValue(imp.Share.Meta.Extra, "imported_from"), "source"); src.Get("model").Str != "gpt-4o" || src.Get("messages").Exists() {
		t.Errorf("request fields: %s", src.Raw)
	}
	// A bare array works too.
	imp = importOne(t, KindOpenAI, []byte(`[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]`), Options{})
	equal(t, "array", texts(imp.Share.Messages), []string{"user:hi", "assistant:hello"})
}

const anthropicBody = `{"model":"claude-sonnet-4","max_tokens":1024,
 "system":[{"type":"text","text":"You are terse.","cache_control":{"type":"ephemeral"}}],
 "messages":[
  {"role":"user","content":"fix the bug"},
  {"role":"assistant","content":[
     {"type":"thinking","thinking":"look first","signature":"c2ln"},
     {"type":"text","text":"Looking."},
     {"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"a.go"}},
     {"type":"tool_use","id":"toolu_2","name":"run","input":{}}]},
  {"role":"user","content":[
     {"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"package a"},{"type":"text","text":"func A()"}]},
     {"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"see"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}],"is_error":true},
     {"type":"text","text":"also this"}]},
  {"role":"assistant","content":[{"type":"redacted_thinking","data":"opaque"},{"type":"text","text":"Fixed."}]}]}`

func TestAnthropic(t *testing.T) {
	imp := importOne(t, KindAnthropic, []byte(anthropicBody), Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{
		"user:fix the bug", "assistant:[thinking]|Looking.|call toolu_1|call toolu_2",
		"tool:toolu_1=package a\nfunc A()", "tool:toolu_2=!", "user:also this", "assistant:[redacted_thinking]|Fixed.",
	})
	equal(t, "system prompt", imp.Share.Meta.SystemPrompt, "You are terse.")
	th := imp.Share.Messages[1].Content.Blocks[0]
	equal(t, "thinking", []any{th.Text, th.Signature, th.HasSignature}, []any{"look first", "c2ln", true})
	img := imp.Share.Messages[3]
	if !img.IsError || img.Name != "run" || !img.Content.IsBlocks || len(img.Content.Blocks) != 2 || img.Content.Blocks[1].Type != session.BlockImage {
		t.Errorf("an error result with an image: %s", img.AppendJSON(nil))
	}
	if src := gjson.GetBytes(fieldValue(imp.Share.Meta.Extra, "imported_from"), "source"); !src.Get("system.0.cache_control").Exists() {
		t.Errorf("the system blocks were not kept: %s", src.Raw)
	}
}

func TestNative(t *testing.T) {
	share := `{"id":"abc","title":"Mine","title_source":"manual","messages":[
	  {"role":"user","content":"hi","created_at":"2026-01-01T00:00:00Z"},
	  {"role":"assistant","content":[{"type":"tooluse","id":"t1","name":"read","input":{}}]},
	  {"role":"tool","content":"x","tool_call_id":"t1","name":"read"}],
	 "branches":[{"name":"old","messages":[{"role":"user","content":"hi","created_at":"2026-01-01T00:00:00Z"}]}],
	 "system_prompt":"S","project_path":"/p","usage":{"input_tokens":3,"output_tokens":4}}`
	imp := importOne(t, KindNative, []byte(share), Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{"user:hi", "assistant:call t1", "tool:t1=x"})
	equal(t, "meta", []any{imp.SourceID, imp.Share.Meta.Title, imp.Share.Meta.SystemPrompt, imp.Share.Meta.Usage.OutputTokens, len(imp.Share.Branches)}, []any{"abc", "Mine", "S", uint64(4), 1})

	stream := "{\"role\":\"user\",\"content\":\"hi\",\"created_at\":\"2026-01-01T00:00:00Z\"}\n{\"role\":\"assistant\",\"content\":\"yo\",\"created_at\":\"2026-01-01T00:01:00Z\"}\n"
	imp = importOne(t, KindNative, []byte(stream), Options{})
	equal(t, "stream", texts(imp.Share.Messages), []string{"user:hi", "assistant:yo"})
	equal(t, "stream times", []string{imp.Share.Meta.CreatedAt, imp.Share.Meta.UpdatedAt}, []string{"2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"})
}

func TestProviderErrors(t *testing.T) {
	cases := []struct {
		kind Kind
		data string
		msg  string
	}{
		{KindOpenAI, `{"model":"x"}`, "openai input needs a messages array"},
		{KindOpenAI, `not json`, "openai input is not valid json"},
		{KindOpenAI, `[{"role":"wizard","content":"x"}]`, `message 1: unknown role "wizard" (want user, assistant, system or tool)`},
		{KindOpenAI, `[{"role":"system","content":"only a prompt"}]`, "no user or assistant messages"},
		{KindAnthropic, `{"messages":[1]}`, "message 1 is not an object"},
		{KindAnthropic, `{"system":"s","messages":[]}`, "no user or assistant messages"},
		{KindNative, `{"messages":[]}`, "no user or assistant messages"},
		{KindNative, `{"title":"x"}`, "a share needs a messages array"},
		{KindOpencode, `{"info":{}}`, "an opencode export needs info and a messages array"},
		{KindOpencode, `{"info":{},"messages":[{"info":{"role":"user"},"parts":[]}]}`, "no user or assistant messages"},
	}
	for _, c := range cases {
		_, err := Import(c.kind, []byte(c.data), Options{})
		if err == nil || !isInvalid(err) || err.Error() != c.msg {
			t.Errorf("Import(%s, %s) = %v, want %q", c.kind, c.data, err, c.msg)
		}
	}
}

// Ours: whycodes' usage_from_chat_completion keeps prompt_tokens as input
// and leaves the cache fields unset, since OpenAI's cached_tokens is a
// subset of prompt_tokens (types.rs: cache reads are not counted in
// input_tokens); the cached count is then lost. We keep it as Anthropic
// counts it: out of input, into cache reads, so that Usage.Total is still
// prompt plus completion and nothing is counted twice.
func TestDepartureUsageFromChatCompletionLeavesCacheUnset(t *testing.T) {
	body := `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],` +
		`"usage":{"prompt_tokens":1200,"completion_tokens":80,"total_tokens":1280,"prompt_tokens_details":{"cached_tokens":1024}}}`
	b, err := ParseMessages([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	u := b.Usage
	if u == nil || u.InputTokens != 176 || u.OutputTokens != 80 || u.CacheReadInputTokens == nil || *u.CacheReadInputTokens != 1024 || u.CacheCreationInputTokens != nil {
		t.Fatalf("usage %+v", u)
	}
	if u.Total() != 1280 {
		t.Errorf("total %d, want total_tokens 1280", u.Total())
	}
	// A cached count over the prompt is not believed.
	b, err = ParseMessages([]byte(strings.Replace(body, `"cached_tokens":1024`, `"cached_tokens":5000`, 1)))
	if err != nil || b.Usage.InputTokens != 1200 || b.Usage.CacheReadInputTokens != nil {
		t.Errorf("usage %+v, %v", b.Usage, err)
	}
}
