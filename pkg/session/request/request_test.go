package request

import (
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/internal/wirecheck"
	"github.com/wctoolkit/wc/pkg/session"
)

// path decodes messages given as the JSON wc stores.
func path(t *testing.T, msgs ...string) []session.Message {
	t.Helper()
	var out []session.Message
	for _, raw := range msgs {
		m, err := session.DecodeMessage([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		out = append(out, m)
	}
	return out
}

var opt = Options{Model: "m"}

// bodies builds both bodies of a path and checks them against the
// providers' rules.
func bodies(t *testing.T, msgs []session.Message) (anthropic, openai gjson.Result) {
	t.Helper()
	a, err := Anthropic("be brief", msgs, opt)
	if err != nil {
		t.Fatalf("anthropic: %v", err)
	}
	if err := wirecheck.CheckAnthropic(a, wirecheck.AnthropicOptions{}); err != nil {
		t.Errorf("anthropic body breaks a rule: %v\n%s", err, a)
	}
	o, err := OpenAI("be brief", msgs, opt)
	if err != nil {
		t.Fatalf("openai: %v", err)
	}
	if err := wirecheck.CheckOpenAI(o); err != nil {
		t.Errorf("openai body breaks a rule: %v\n%s", err, o)
	}
	return gjson.ParseBytes(a), gjson.ParseBytes(o)
}

const (
	prompt = `{"role":"user","content":"look at it"}`
	png    = `{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}`
	call   = `{"role":"assistant","content":[{"type":"tooluse","id":"toolu_1","name":"Read","input":{"file_path":"a.png"}}]}`
	after  = `{"role":"user","content":"and now?"}`
)

// Class 1: images inside tool results reach both providers: in the
// tool_result for Anthropic, in a user message after the tool messages for
// OpenAI. Claude Code's Read of a PNG (an Anthropic block list), an MCP
// screenshot and Codex view_image (a tool message of blocks).
func TestToolResultImages(t *testing.T) {
	for name, result := range map[string]string{
		"claude code read": `{"role":"user","content":[{"type":"toolresult","tool_use_id":"toolu_1","content":[{"type":"image","source":` + png + `}],"is_error":null}]}`,
		"tool message":     `{"role":"tool","content":[{"type":"text","text":"screenshot"},{"type":"image","source":` + png + `}],"tool_call_id":"toolu_1","name":"Read"}`,
	} {
		a, o := bodies(t, path(t, prompt, call, result, after))
		res := a.Get("messages.2.content.0")
		if res.Get("type").Str != "tool_result" || !res.Get("content").IsArray() {
			t.Fatalf("%s: anthropic result %s", name, res.Raw)
		}
		img := res.Get(`content.#(type=="image")`)
		if img.Get("source.media_type").Str != "image/png" || img.Get("source.data").Str != "iVBORw0KGgo=" {
			t.Errorf("%s: anthropic lost the image: %s", name, res.Raw)
		}
		msgs := o.Get("messages").Array()
		if msgs[3].Get("role").Str != "tool" || msgs[4].Get("role").Str != "user" ||
			msgs[4].Get(`content.#(type=="image_url").image_url.url`).Str != "data:image/png;base64,iVBORw0KGgo=" ||
			!strings.Contains(msgs[4].Get("content.0.text").Str, "toolu_1") {
			t.Errorf("%s: openai messages %s", name, o.Get("messages").Raw)
		}
		if msgs[5].Get("content").Str != "and now?" {
			t.Errorf("%s: the user's own message %s", name, msgs[5].Raw)
		}
	}
}

// Class 2: whitespace-only text blocks (Claude Code writes "\n\n") are left
// out; a message of nothing else goes with them.
func TestWhitespaceText(t *testing.T) {
	a, _ := bodies(t, path(t, prompt,
		`{"role":"assistant","content":[{"type":"text","text":"\n\n"},{"type":"tooluse","id":"toolu_1","name":"Read","input":{}}]}`,
		`{"role":"tool","content":"x","tool_call_id":"toolu_1"}`,
		`{"role":"assistant","content":[{"type":"text","text":"  "}]}`, after))
	if strings.Contains(a.Raw, `"\n\n"`) || strings.Contains(a.Raw, `"  "`) {
		t.Errorf("whitespace text sent: %s", a.Raw)
	}
	if n := len(a.Get("messages").Array()); n != 3 {
		t.Errorf("%d messages: %s", n, a.Get("messages").Raw)
	}
}

// Class 3: what only its own provider can replay goes to it alone: Codex
// and opencode reasoning (thinking without a signature, carrying
// encrypted_content) and Codex items go to neither; a Codex
// custom_tool_call's text input is sent as an object; a signed thinking
// block and Anthropic's server tools go to Anthropic only.
func TestProviderOwnBlocks(t *testing.T) {
	msgs := path(t, prompt,
		`{"role":"assistant","content":[{"type":"thinking","text":"plan","id":"rs_1","encrypted_content":"gAAAA"},`+
			`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"query":"q"}},`+
			`{"type":"text","text":"patching"},`+
			`{"type":"tooluse","id":"call_1","name":"apply_patch","input":"*** Begin Patch\n*** End Patch","item_type":"custom_tool_call"}]}`,
		`{"role":"tool","content":"Done!","tool_call_id":"call_1","name":"apply_patch"}`,
		`{"role":"assistant","content":[{"type":"thinking","text":"t","signature":"EqQB"},{"type":"redacted_thinking","data":"opaque"},`+
			`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"go"}},`+
			`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},{"type":"text","text":"found"}]}`,
		after)
	a, o := bodies(t, msgs)
	for _, banned := range []string{"encrypted_content", "web_search_call", "item_type", `"plan"`} {
		if strings.Contains(a.Raw, banned) || strings.Contains(o.Raw, banned) {
			t.Errorf("%s was sent: %s\n%s", banned, a.Raw, o.Raw)
		}
	}
	use := a.Get(`messages.1.content.#(type=="tool_use")`)
	if use.Get("input.input").Str != "*** Begin Patch\n*** End Patch" {
		t.Errorf("custom tool input %s", use.Raw)
	}
	if args := o.Get("messages.2.tool_calls.0.function.arguments").Str; gjson.Get(args, "input").Str != "*** Begin Patch\n*** End Patch" {
		t.Errorf("openai arguments %q", args)
	}
	last := a.Get("messages.3.content")
	if last.Get("0.type").Str != "thinking" || last.Get("0.signature").Str != "EqQB" || last.Get("1.type").Str != "redacted_thinking" ||
		last.Get("2.type").Str != "server_tool_use" || last.Get("3.type").Str != "web_search_tool_result" {
		t.Errorf("anthropic's own blocks: %s", last.Raw)
	}
	for _, banned := range []string{"thinking", "srvtoolu", "opaque"} {
		if strings.Contains(o.Raw, banned) {
			t.Errorf("openai got %s: %s", banned, o.Raw)
		}
	}
}

// Class 4: no empty OpenAI assistant message (one that held only
// thinking), a PDF document as a file part, and a call without an id gets
// one, which its result answers.
func TestOpenAIShapes(t *testing.T) {
	pdf := `{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="},"title":"spec.pdf"}`
	a, o := bodies(t, path(t,
		`{"role":"user","content":[{"type":"text","text":"read this"},`+pdf+`]}`,
		`{"role":"assistant","content":[{"type":"thinking","text":"hmm","signature":"s"}]}`,
		`{"role":"user","content":"well?"}`,
		`{"role":"assistant","content":[{"type":"tooluse","id":"","name":"bash","input":{}}]}`,
		`{"role":"tool","content":"ok","tool_call_id":""}`, after))
	msgs := o.Get("messages").Array()
	if file := msgs[1].Get(`content.#(type=="file").file`); file.Get("filename").Str != "spec.pdf" || file.Get("file_data").Str != "data:application/pdf;base64,JVBERi0=" {
		t.Errorf("openai document %s", msgs[1].Raw)
	}
	if msgs[2].Get("role").Str != "user" || msgs[2].Get("content").Str != "well?" {
		t.Errorf("the thinking-only message was sent: %s", o.Get("messages").Raw)
	}
	if id := msgs[3].Get("tool_calls.0.id").Str; id == "" || msgs[4].Get("tool_call_id").Str != id || msgs[4].Get("content").Str != "ok" {
		t.Errorf("a call without an id: %s", o.Get("messages").Raw)
	}
	if a.Get(`messages.0.content.#(type=="document").source.media_type`).Str != "application/pdf" {
		t.Errorf("anthropic document: %s", a.Get("messages.0").Raw)
	}
}

// Class 5: a final assistant message is refused by default (Anthropic's
// prefill), left out with TrailingDrop, sent without its trailing
// whitespace with TrailingKeep; OpenAI sends it unless asked not to.
func TestTrailingAssistant(t *testing.T) {
	msgs := path(t, prompt, `{"role":"assistant","content":[{"type":"text","text":"Here is \n"}]}`)
	if _, err := Anthropic("", msgs, opt); !errors.As(err, new(*PrefillError)) {
		t.Errorf("default: %v", err)
	}
	drop := opt
	drop.Trailing = TrailingDrop
	b, err := Anthropic("", msgs, drop)
	if err != nil || gjson.GetBytes(b, "messages.#").Int() != 1 || wirecheck.CheckAnthropic(b, wirecheck.AnthropicOptions{}) != nil {
		t.Errorf("--no-prefill: %v %s", err, b)
	}
	keep := opt
	keep.Trailing = TrailingKeep
	b, err = Anthropic("", msgs, keep)
	if err != nil || gjson.GetBytes(b, "messages.1.content.0.text").Str != "Here is" || wirecheck.CheckAnthropic(b, wirecheck.AnthropicOptions{Prefill: true}) != nil {
		t.Errorf("--prefill: %v %s", err, b)
	}
	b, err = Anthropic("", path(t, prompt, `{"role":"assistant","content":[{"type":"text","text":"So"},{"type":"thinking","text":"t","signature":"s"}]}`), keep)
	if err != nil || gjson.GetBytes(b, "messages.1.content.#").Int() != 1 || wirecheck.CheckAnthropic(b, wirecheck.AnthropicOptions{Prefill: true}) != nil {
		t.Errorf("--prefill ending with thinking: %v %s", err, b)
	}
	b, err = OpenAI("", msgs, opt)
	if err != nil || gjson.GetBytes(b, "messages.#").Int() != 2 {
		t.Errorf("openai: %v %s", err, b)
	}
	b, _ = OpenAI("", msgs, drop)
	if gjson.GetBytes(b, "messages.#").Int() != 1 {
		t.Errorf("openai --no-prefill: %s", b)
	}
	// A call at the end is no prefill: its missing result comes after it.
	b, err = Anthropic("", path(t, prompt, call), opt)
	if err != nil || gjson.GetBytes(b, "messages.2.content.0.content").Str != MissingResult {
		t.Errorf("a final call: %v %s", err, b)
	}
	if _, err := Anthropic("", nil, opt); !errors.As(err, new(*NothingToSendError)) {
		t.Errorf("no message: %v", err)
	}
}

// Two user messages in a row (a compaction summary kept apart from the
// next prompt, as issue 22 may store it) are one Anthropic message; a
// path that begins with the assistant gets a first user message.
func TestUserMessagesInARow(t *testing.T) {
	a, o := bodies(t, path(t, `{"role":"assistant","content":"imported from the middle"}`,
		`{"role":"user","content":"[Compacted earlier conversation]\nGoals: x","kind":"summary"}`, prompt))
	msgs := a.Get("messages").Array()
	if len(msgs) != 3 || msgs[0].Get("content.0.text").Str != LeadingUser || len(msgs[2].Get("content").Array()) != 2 {
		t.Errorf("anthropic messages %s", a.Get("messages").Raw)
	}
	if n := len(o.Get("messages").Array()); n != 4 {
		t.Errorf("openai keeps them apart: %s", o.Get("messages").Raw)
	}
}

// Ids the Messages API refuses are mapped, the same way for a call and its
// result; repeated ids are made unique.
func TestCallIDs(t *testing.T) {
	a, o := bodies(t, path(t, prompt,
		`{"role":"assistant","content":[{"type":"tooluse","id":"functions.Bash:0","name":"bash","input":{}},{"type":"tooluse","id":"x","name":"bash","input":{}}]}`,
		`{"role":"tool","content":"one","tool_call_id":"functions.Bash:0"}`, `{"role":"tool","content":"two","tool_call_id":"x"}`,
		`{"role":"assistant","content":[{"type":"tooluse","id":"x","name":"bash","input":{}}]}`,
		`{"role":"tool","content":"three","tool_call_id":"x"}`, after))
	if id := a.Get("messages.1.content.0.id").Str; id != "functions_Bash_0" || a.Get("messages.2.content.0.tool_use_id").Str != id {
		t.Errorf("anthropic ids %s", a.Get("messages").Raw)
	}
	if id := a.Get("messages.3.content.0.id").Str; id != "x_2" || a.Get("messages.4.content.0.tool_use_id").Str != id || a.Get("messages.4.content.0.content").Str != "three" {
		t.Errorf("a repeated id %s", a.Get("messages").Raw)
	}
	if o.Get("messages.2.tool_calls.0.id").Str != "functions.Bash:0" {
		t.Errorf("openai ids are kept: %s", o.Get("messages").Raw)
	}
}
