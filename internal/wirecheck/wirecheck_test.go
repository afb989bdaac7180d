package wirecheck

import (
	"os"
	"strings"
	"testing"
)

// share is a minimal whycodes share holding messages.
func share(messages string, extra string) string {
	return `{"id":"s1","title":"t","title_source":"heuristic","messages":[` + messages + `],"branches":[],` +
		`"system_prompt":"","project_path":"/p","created_at":"2026-08-21T12:00:00Z","updated_at":"2026-08-21T12:00:00Z"` + extra + `}`
}

// The model refuses what whycodes' serde refuses, each class the issue
// found among them, and loads what it skips.
func TestLoadWhycodes(t *testing.T) {
	good, err := os.ReadFile("../../pkg/session/testdata/whycodes-share.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := LoadWhycodes(good)
	if err != nil {
		t.Fatalf("whycodes' own share: %v", err)
	}
	if s.Title != "fix the flaky auth test" || len(s.Messages) != 8 || len(s.Branches) == 0 || !s.HasCheckpoint {
		t.Errorf("kept %+v", s)
	}
	deep := strings.Repeat("[", 130) + strings.Repeat("]", 130)
	cases := []struct {
		name, doc, want string // want "" for a share that loads
	}{
		{"plain", share(`{"role":"user","content":"hi"}`, ""), ""},
		{"every block", share(`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"thinking","text":"t","signature":"s"},{"type":"redacted_thinking","data":"d"},{"type":"tooluse","id":"1","name":"n","input":{"a":[1,2.5,null]}},{"type":"image","source":{"type":"url","url":"u"}}]},{"role":"tool","content":[{"type":"toolresult","tool_use_id":"1","content":"x","is_error":null}],"tool_call_id":"1"}`, ""), ""},
		{"unknown members are skipped", share(`{"role":"user","content":"hi","kind":"note","x":`+deep+`,"y":"\ud800","z":1e999}`, `,"wc_tree":`+deep), ""},
		{"unknown block members are parsed", share(`{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]}`, ""), ""},
		{"server_tool_use block", share(`{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}]}`, ""), "unknown variant `server_tool_use`"},
		{"native compaction block", share(`{"role":"assistant","content":[{"type":"compaction","encrypted_content":"gAAA"}]}`, ""), "unknown variant `compaction`"},
		{"codex item", share(`{"role":"assistant","content":[{"type":"web_search_call","status":"completed"}]}`, ""), "unknown variant `web_search_call`"},
		{"anthropic spelling", share(`{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"n","input":{}}]}`, ""), "unknown variant `tool_use`"},
		{"tool result array", share(`{"role":"user","content":[{"type":"toolresult","tool_use_id":"1","content":[{"type":"text","text":"a"}]}]}`, ""), "expected a string"},
		{"file image", share(`{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"f"}}]}`, ""), "unknown variant `file`"},
		{"lone surrogate in content", share(`{"role":"user","content":[{"type":"text","text":"a","x":"\ud800"}]}`, ""), "lone leading surrogate"},
		{"lone surrogate in text", share(`{"role":"user","content":"\udc00"}`, ""), "lone leading surrogate"},
		{"Manual title_source", strings.Replace(share(`{"role":"user","content":"hi"}`, ""), `"heuristic"`, `"Manual"`, 1), "unknown variant `Manual`"},
		{"bogus title_source", strings.Replace(share(`{"role":"user","content":"hi"}`, ""), `"heuristic"`, `"bogus"`, 1), "unknown variant `bogus`"},
		{"unknown role", share(`{"role":"developer","content":"hi"}`, ""), "unknown variant `developer`"},
		{"duplicate field", share(`{"role":"user","role":"user","content":"hi"}`, ""), "duplicate field `role`"},
		{"duplicate block field", share(`{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}`, ""), "duplicate field `text`"},
		{"missing content", share(`{"role":"user"}`, ""), "missing field `content`"},
		{"missing input", share(`{"role":"assistant","content":[{"type":"tooluse","id":"1","name":"n"}]}`, ""), "missing field `input`"},
		{"null where no Option", share(`{"role":"user","content":"hi"}`, `,"usage":null`), "invalid type: null"},
		{"usage without its counters", share(`{"role":"user","content":"hi"}`, `,"usage":{}`), "missing field `input_tokens`"},
		{"float count", share(`{"role":"user","content":"hi"}`, `,"usage":{"input_tokens":1.5,"output_tokens":0}`), "floating point"},
		{"u32 past its range", share(`{"role":"user","content":"hi"}`, `,"cost":{"usd":0.0,"unpriced_steps":4294967296}`), "expected u32"},
		{"comma time", share(`{"role":"user","content":"hi","created_at":"2026-08-21T12:00:00,5Z"}`, ""), "RFC 3339"},
		{"checkpoint without started_at", share(`{"role":"user","content":"hi"}`, `,"checkpoint":{"keep_until":0,"goal":"g"}`), "missing field `started_at`"},
		{"nesting past serde_json's limit", share(`{"role":"assistant","content":[{"type":"tooluse","id":"1","name":"n","input":`+deep+`}]}`, ""), "recursion limit"},
		{"a number past f64", share(`{"role":"assistant","content":[{"type":"tooluse","id":"1","name":"n","input":{"x":1e400}}]}`, ""), "out of range"},
	}
	for _, c := range cases {
		_, err := LoadWhycodes([]byte(c.doc))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

const okAnthropic = `{"model":"m","max_tokens":10,"system":"s","tools":[{"name":"bash","input_schema":{"type":"object"}}],"messages":[` +
	`{"role":"user","content":"hi"},` +
	`{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"sig"},{"type":"text","text":"look"},{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"ls"}},` +
	`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}]},` +
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}],"is_error":true},{"type":"text","text":"and?"}]}]}`

// Each of the Messages API's rules fails a body that breaks it.
func TestCheckAnthropic(t *testing.T) {
	if err := CheckAnthropic([]byte(okAnthropic), AnthropicOptions{}); err != nil {
		t.Fatalf("a valid body: %v", err)
	}
	body := func(msgs string) string { return `{"model":"m","max_tokens":10,"messages":[` + msgs + `]}` }
	call := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"bash","input":{}}]}`
	result := `{"type":"tool_result","tool_use_id":"toolu_1","content":"x"}`
	cases := []struct{ name, body, want string }{
		{"no model", `{"max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{"no messages", `{"model":"m","max_tokens":1,"messages":[]}`, "non-empty array"},
		{"a system message", body(`{"role":"system","content":"s"},{"role":"user","content":"hi"}`), "must be user or assistant"},
		{"assistant first", body(`{"role":"assistant","content":"a"},{"role":"user","content":"hi"}`), "first message"},
		{"two users in a row", body(`{"role":"user","content":"a"},{"role":"user","content":"b"}`), "in a row"},
		{"whitespace text", body(`{"role":"user","content":[{"type":"text","text":"\n\n"}]}`), "non-whitespace"},
		{"empty content", body(`{"role":"user","content":[]}`), "non-empty content"},
		{"a call without result", body(`{"role":"user","content":"a"},` + call + `,{"role":"user","content":"b"}`), "without tool_result"},
		{"a result after text", body(`{"role":"user","content":"a"},` + call + `,{"role":"user","content":[{"type":"text","text":"b"},` + result + `]}`), "must come first"},
		{"a result of no call", body(`{"role":"user","content":[` + result + `]}`), "unexpected tool_use_id"},
		{"string input", body(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"bash","input":"*** Begin Patch"}]},{"role":"user","content":[` + result + `]}`), "input: must be an object"},
		{"a bad id", body(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"call.1","name":"b","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call.1"}]}`), "match pattern"},
		{"repeated ids", body(`{"role":"user","content":"a"},` + call + `,{"role":"user","content":[` + result + `]},` + call + `,{"role":"user","content":[` + result + `]}`), "unique"},
		{"thinking without signature", body(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"text","text":"x"}]},{"role":"user","content":"b"}`), "signature"},
		{"an unknown member", body(`{"role":"user","content":[{"type":"text","text":"a","caller":{"type":"direct"}}]}`), "Extra inputs"},
		{"a file image", body(`{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"f"}}]}`), "base64 or url"},
		{"a tiff", body(`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/tiff","data":"x"}}]}`), "media_type"},
		{"a block of another provider", body(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"reasoning","encrypted_content":"e"}]},{"role":"user","content":"b"}`), "not a block"},
		{"an unpaired server tool", body(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"w","input":{}}]},{"role":"user","content":"b"}`), "no result"},
		{"a prefill", body(`{"role":"user","content":"a"},{"role":"assistant","content":"b"}`), "prefill"},
	}
	for _, c := range cases {
		if err := CheckAnthropic([]byte(c.body), AnthropicOptions{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	prefill := body(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"text","text":"b"}]}`)
	if err := CheckAnthropic([]byte(prefill), AnthropicOptions{Prefill: true}); err != nil {
		t.Errorf("an allowed prefill: %v", err)
	}
	thinking := body(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"text","text":"b"},{"type":"thinking","thinking":"t","signature":"s"}]}`)
	if err := CheckAnthropic([]byte(thinking), AnthropicOptions{Prefill: true}); err == nil || !strings.Contains(err.Error(), "thinking block") {
		t.Errorf("a prefill ending with thinking: %v", err)
	}
	trailing := body(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"text","text":"b "}]}`)
	if err := CheckAnthropic([]byte(trailing), AnthropicOptions{Prefill: true}); err == nil || !strings.Contains(err.Error(), "trailing whitespace") {
		t.Errorf("a prefill ending in whitespace: %v", err)
	}
}

const okOpenAI = `{"model":"m","tools":[{"type":"function","function":{"name":"bash"}}],"messages":[` +
	`{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}},{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBE"}}]},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},` +
	`{"role":"tool","content":"a","tool_call_id":"call_1"},{"role":"user","content":"and?"},{"role":"assistant","content":"done"}]}`

// Each of the Chat Completions API's rules fails a body that breaks it.
func TestCheckOpenAI(t *testing.T) {
	if err := CheckOpenAI([]byte(okOpenAI)); err != nil {
		t.Fatalf("a valid body: %v", err)
	}
	body := func(msgs string) string { return `{"model":"m","messages":[` + msgs + `]}` }
	call := func(id, args string) string {
		return `{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"bash","arguments":` + args + `}}]}`
	}
	cases := []struct{ name, body, want string }{
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{"a call without answer", body(`{"role":"user","content":"a"},` + call("c1", `"{}"`) + `,{"role":"user","content":"b"}`), "did not have response messages"},
		{"a call at the end", body(`{"role":"user","content":"a"},` + call("c1", `"{}"`)), "did not have response messages"},
		{"an answer to nothing", body(`{"role":"user","content":"a"},{"role":"tool","content":"x","tool_call_id":"c1"}`), "must be a response"},
		{"an empty assistant", body(`{"role":"user","content":"a"},{"role":"assistant","content":""}`), "needs content or tool_calls"},
		{"a null assistant", body(`{"role":"user","content":"a"},{"role":"assistant","content":null}`), "needs content or tool_calls"},
		{"arguments as an object", body(`{"role":"user","content":"a"},` + call("c1", `{}`) + `,{"role":"tool","content":"x","tool_call_id":"c1"}`), "string of JSON"},
		{"arguments not JSON", body(`{"role":"user","content":"a"},` + call("c1", `"oops"`) + `,{"role":"tool","content":"x","tool_call_id":"c1"}`), "string of JSON"},
		{"an empty id", body(`{"role":"user","content":"a"},` + call("", `"{}"`) + `,{"role":"tool","content":"x","tool_call_id":""}`), "non-empty id"},
		{"repeated ids", body(`{"role":"user","content":"a"},` + call("c1", `"{}"`) + `,{"role":"tool","content":"x","tool_call_id":"c1"},` + call("c1", `"{}"`) + `,{"role":"tool","content":"x","tool_call_id":"c1"}`), "not unique"},
		{"an image in a tool message", body(`{"role":"user","content":"a"},` + call("c1", `"{}"`) + `,{"role":"tool","content":[{"type":"image_url","image_url":{"url":"https://x/a.png"}}],"tool_call_id":"c1"}`), "not a content part of a tool message"},
		{"a file that is no PDF", body(`{"role":"user","content":[{"type":"file","file":{"file_data":"data:text/plain;base64,eA=="}}]}`), "PDF"},
		{"an Anthropic block", body(`{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x"}}]}`), "not a content part"},
		{"an unknown member", body(`{"role":"user","content":"a","kind":"note"}`), "not a message member"},
	}
	for _, c := range cases {
		if err := CheckOpenAI([]byte(c.body)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
