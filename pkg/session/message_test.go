package session_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wctoolkit/wc/pkg/session"
)

// Every wire form of reference §1.1 decodes and encodes back to the same
// bytes.
func TestMessageRoundTripExact(t *testing.T) {
	cases := []struct{ name, json string }{
		{"text content", `{"role":"user","content":"hello"}`},
		{"empty text content", `{"role":"assistant","content":""}`},
		{"system", `{"role":"system","content":"You are terse."}`},
		{"text block", `{"role":"user","content":[{"type":"text","text":"..."}]}`},
		{"empty block list", `{"role":"assistant","content":[]}`},
		{"image base64", `{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}`},
		{"image url", `{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}`},
		{"tooluse", `{"role":"assistant","content":[{"type":"tooluse","id":"t1","name":"grep","input":{"any":"JSON"}}]}`},
		{"tooluse non-object input", `{"role":"assistant","content":[{"type":"tooluse","id":"t1","name":"echo","input":"raw text"}]}`},
		{"toolresult is_error true", `{"role":"user","content":[{"type":"toolresult","tool_use_id":"t1","content":"...","is_error":true}]}`},
		{"toolresult is_error false", `{"role":"user","content":[{"type":"toolresult","tool_use_id":"t1","content":"ok","is_error":false}]}`},
		{"toolresult is_error null", `{"role":"user","content":[{"type":"toolresult","tool_use_id":"t1","content":"ok","is_error":null}]}`},
		{"toolresult block list content", `{"role":"user","content":[{"type":"toolresult","tool_use_id":"t1","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"url","url":"u"}}],"is_error":null}]}`},
		{"thinking with signature", `{"role":"assistant","content":[{"type":"thinking","text":"hmm","signature":"EqQBCkYIARgC"}]}`},
		{"thinking without signature", `{"role":"assistant","content":[{"type":"thinking","text":"hmm"}]}`},
		{"thinking empty signature", `{"role":"assistant","content":[{"type":"thinking","text":"hmm","signature":""}]}`},
		{"redacted thinking", `{"role":"assistant","content":[{"type":"redacted_thinking","data":"EmwKAhgBEgy3va"}]}`},
		{"reference tool message", `{"role":"tool","content":"file body...","tool_call_id":"call-1","created_at":"2026-08-21T12:00:00.123456789+00:00"}`},
		{"reference assistant message", `{"role":"assistant","content":[{"type":"text","text":"hi"},{"type":"tooluse","id":"t1","name":"read","input":{"path":"a.rs"}}],"created_at":"2026-08-21T12:00:00Z"}`},
		// Ours: tool messages keep the tool name and the failure flag.
		{"tool message name and is_error", `{"role":"tool","content":"boom","tool_call_id":"c1","name":"bash","is_error":true}`},
		// Ours: kind marks user-role messages that are not user turns.
		{"kind note", `{"role":"user","content":"remember the style guide","kind":"note"}`},
		{"kind summary", `{"role":"user","content":"[Compacted earlier conversation]\nx","kind":"summary"}`},
		{"kind rewind", `{"role":"user","content":"Checkpoint completed.","kind":"rewind"}`},
		{"kind we do not know is data", `{"role":"user","content":"x","kind":"custom"}`},
		{"kind of another type is data", `{"role":"user","content":"x","kind":7}`},
		// Ours: unknown members and block types survive byte for byte.
		{"unknown message fields", `{"role":"assistant","content":"hi","model":"claude-opus-4-6","usage":{"input_tokens":3,"output_tokens":1},"stop_reason":null}`},
		{"unknown block field", `{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}`},
		{"provider signature on tooluse", `{"role":"assistant","content":[{"type":"tooluse","id":"t1","name":"grep","input":{},"caller":{"type":"direct"},"thought_signature":"c2lnbmF0dXJl"}]}`},
		{"compaction block", `{"role":"assistant","content":[{"type":"compaction","encrypted_content":"gAAAAABnX0…=="}]}`},
		{"reasoning block", `{"role":"assistant","content":[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA","extra":{"n":1.50,"z":[true,null]}}]}`},
		{"escapes", `{"role":"user","content":"q\"b\\n\nt\tr\rb\bf\fc\u0001\u001f"}`},
		{"non-ASCII kept literal", `{"role":"user","content":"café 中文 😀 ` + "\u2028\u2029" + `"}`},
		{"html stays literal", `{"role":"user","content":"<script>alert(1)</script> & a > b"}`},
		{"every optional member", `{"role":"tool","content":"x","tool_call_id":"c","name":"n","created_at":"2026-08-21T12:00:00Z","is_error":true,"kind":"note","x-extra":[1,2]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := decode(t, tc.json)
			if got := encode(m); got != tc.json {
				t.Errorf("round trip:\n got %s\nwant %s", got, tc.json)
			}
		})
	}
}

// Normalised and compacted input: the output is whycodes' spelling.
func TestMessageDecodeNormalises(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"anthropic tool_use",
			`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]}`,
			`{"role":"assistant","content":[{"type":"tooluse","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]}`},
		{"anthropic tool_result keeps is_error false",
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"x","is_error":false}]}`,
			`{"role":"user","content":[{"type":"toolresult","tool_use_id":"toolu_1","content":"x","is_error":false}]}`},
		{"anthropic tool_result without is_error",
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"x"}]}`,
			`{"role":"user","content":[{"type":"toolresult","tool_use_id":"toolu_1","content":"x","is_error":null}]}`},
		{"tool_result member order is ours",
			`{"role":"user","content":[{"is_error":true,"content":"e","type":"tool_result","tool_use_id":"t"}]}`,
			`{"role":"user","content":[{"type":"toolresult","tool_use_id":"t","content":"e","is_error":true}]}`},
		{"anthropic thinking field",
			`{"role":"assistant","content":[{"type":"thinking","thinking":"The user is…","signature":"EqQB"}]}`,
			`{"role":"assistant","content":[{"type":"thinking","text":"The user is…","signature":"EqQB"}]}`},
		{"null signature is absent",
			`{"role":"assistant","content":[{"type":"thinking","text":"t","signature":null}]}`,
			`{"role":"assistant","content":[{"type":"thinking","text":"t"}]}`},
		{"openai tool_calls after text",
			`{"role":"assistant","content":"Let me look.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\": \"a.go\"}"}}]}`,
			`{"role":"assistant","content":[{"type":"text","text":"Let me look."},{"type":"tooluse","id":"call_1","name":"read","input":{"path":"a.go"}}]}`},
		{"openai tool_calls with null content",
			`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"ls","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"cat","arguments":"{\"f\":[1, 2]}"}}]}`,
			`{"role":"assistant","content":[{"type":"tooluse","id":"a","name":"ls","input":{}},{"type":"tooluse","id":"b","name":"cat","input":{"f":[1,2]}}]}`},
		{"openai arguments that are not JSON stay text",
			`{"role":"assistant","content":"","tool_calls":[{"id":"a","function":{"name":"sh","arguments":"ls -l"}}]}`,
			`{"role":"assistant","content":[{"type":"tooluse","id":"a","name":"sh","input":"ls -l"}]}`},
		{"openai empty arguments",
			`{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"now","arguments":""}}]}`,
			`{"role":"assistant","content":[{"type":"tooluse","id":"a","name":"now","input":{}}]}`},
		{"openai blank arguments",
			`{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"now","arguments":" \n"}}]}`,
			`{"role":"assistant","content":[{"type":"tooluse","id":"a","name":"now","input":{}}]}`},
		{"openai object arguments",
			`{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":{"x": 1}}}]}`,
			`{"role":"assistant","content":[{"type":"tooluse","id":"a","name":"f","input":{"x":1}}]}`},
		{"openai empty tool_calls",
			`{"role":"assistant","content":null,"tool_calls":[]}`,
			`{"role":"assistant","content":[]}`},
		{"openai image_url",
			`{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x.test/a.png","detail":"high"}}]}`,
			`{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"url","url":"https://x.test/a.png"}}]}`},
		{"openai data url",
			`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ"}}]}`,
			`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4AAQ"}}]}`},
		{"openai data url without base64 is a url",
			`{"role":"user","content":[{"type":"image_url","image_url":"data:text/plain,hi"}]}`,
			`{"role":"user","content":[{"type":"image","source":{"type":"url","url":"data:text/plain,hi"}}]}`},
		{"openai bare string parts",
			`{"role":"user","content":["one",{"type":"text","text":"two"}]}`,
			`{"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}`},
		{"openai developer role", `{"role":"developer","content":"Be brief."}`, `{"role":"system","content":"Be brief."}`},
		{"openai tool message", `{"role":"tool","tool_call_id":"call_1","content":"ok"}`, `{"role":"tool","content":"ok","tool_call_id":"call_1"}`},
		{"null members dropped",
			`{"role":"tool","content":"x","tool_call_id":null,"name":null,"created_at":null,"is_error":null}`,
			`{"role":"tool","content":"x"}`},
		{"missing content is empty text", `{"role":"assistant"}`, `{"role":"assistant","content":""}`},
		{"is_error false is the default", `{"role":"tool","content":"x","is_error":false}`, `{"role":"tool","content":"x"}`},
		{"member order is ours, unknown last",
			`{"zz":1,"created_at":"2026-08-21T12:00:00Z","content":"x","role":"user"}`,
			`{"role":"user","content":"x","created_at":"2026-08-21T12:00:00Z","zz":1}`},
		{"whitespace compacted outside strings only",
			"{ \"role\" : \"user\",\n \"content\" : [ { \"type\" : \"text\", \"text\" : \"a  b\" , \"meta\" : { \"k\" : [ 1 , \"x  y\" ] } } ],\n \"extra\" : { \"n\" : 1e3 } }",
			`{"role":"user","content":[{"type":"text","text":"a  b","meta":{"k":[1,"x  y"]}}],"extra":{"n":1e3}}`},
		{"unknown block compacted",
			`{"role":"assistant","content":[ {"type": "compaction", "encrypted_content": "ab  cd"} ]}`,
			`{"role":"assistant","content":[{"type":"compaction","encrypted_content":"ab  cd"}]}`},
		{"duplicate members: the first wins",
			`{"role":"user","role":"assistant","content":"a","content":"b","x":1,"x":2}`,
			`{"role":"user","content":"a","x":1}`},
		{"escaped key is its text",
			`{"rol\u0065":"user","content":"x","k\u00e9y":1}`,
			`{"role":"user","content":"x","kéy":1}`},
		{"escaped string becomes literal",
			`{"role":"user","content":"\u003cb\u003e \u00e9 \/"}`,
			`{"role":"user","content":"<b> é /"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := decode(t, tc.in)
			got := encode(m)
			if got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
			// The normalised form is a fixed point.
			if again := encode(decode(t, got)); again != got {
				t.Errorf("not stable: %s", again)
			}
		})
	}
}

func TestMessageDecodeFields(t *testing.T) {
	m := decode(t, `{"role":"assistant","content":[{"type":"tool_use","id":"t9","name":"edit","input":{"path":"a"}},{"type":"thinking","thinking":"x","signature":"s"},{"type":"x-new","a":1}],"tool_call_id":"c","created_at":"2026-08-21T12:00:00+02:00","kind":"note"}`)
	if m.Role != session.RoleAssistant || m.ToolCallID != "c" || m.CreatedAt != "2026-08-21T12:00:00+02:00" || m.Kind != session.KindNote {
		t.Errorf("message fields: %+v", m)
	}
	if !m.Content.IsBlocks || len(m.Content.Blocks) != 3 {
		t.Fatalf("content: %+v", m.Content)
	}
	tu, th, unk := m.Content.Blocks[0], m.Content.Blocks[1], m.Content.Blocks[2]
	if tu.Type != session.BlockToolUse || tu.ID != "t9" || tu.Name != "edit" || string(tu.Input) != `{"path":"a"}` {
		t.Errorf("tooluse: %+v", tu)
	}
	if th.Type != session.BlockThinking || th.Text != "x" || !th.HasSignature || th.Signature != "s" || !th.IsThinking() {
		t.Errorf("thinking: %+v", th)
	}
	if unk.Type != "x-new" || string(unk.Raw) != `{"type":"x-new","a":1}` || unk.IsThinking() {
		t.Errorf("unknown block: %+v", unk)
	}
	rt := session.Block{Type: session.BlockRedactedThinking}
	if !rt.IsThinking() {
		t.Error("redacted_thinking is thinking")
	}
}

func TestMessageDecodeErrors(t *testing.T) {
	cases := []struct{ name, in, mention string }{
		{"unknown role", `{"role":"robot","content":"x"}`, `"robot"`},
		{"role not a string", `{"role":1,"content":"x"}`, "role"},
		{"no role", `{"content":"x"}`, "role"},
		{"array", `[]`, "an array"},
		{"string", `"hi"`, "a string"},
		{"null", `null`, "null"},
		{"number", `3`, "a number"},
		{"content number", `{"role":"user","content":3}`, "content"},
		{"content object", `{"role":"user","content":{"text":"x"}}`, "an object"},
		{"content bool", `{"role":"user","content":true}`, "a boolean"},
		{"block without type", `{"role":"user","content":[{"text":"x"}]}`, "type"},
		{"block type not a string", `{"role":"user","content":[{"type":5}]}`, "type"},
		{"block not an object", `{"role":"user","content":[7]}`, "block 1"},
		{"second block bad", `{"role":"user","content":[{"type":"text","text":"ok"},null]}`, "block 2"},
		{"text not a string", `{"role":"user","content":[{"type":"text","text":1}]}`, "text"},
		{"thinking text not a string", `{"role":"assistant","content":[{"type":"thinking","thinking":[]}]}`, "thinking"},
		{"tooluse name not a string", `{"role":"assistant","content":[{"type":"tool_use","id":"a","name":{},"input":{}}]}`, "name"},
		{"toolresult is_error not bool", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"x","is_error":"yes"}]}`, "is_error"},
		{"created_at not RFC 3339", `{"role":"user","content":"x","created_at":"yesterday"}`, "yesterday"},
		{"created_at with a space", `{"role":"user","content":"x","created_at":"2026-08-21 12:00:00"}`, "RFC 3339"},
		{"created_at without zone", `{"role":"user","content":"x","created_at":"2026-08-21T12:00:00"}`, "RFC 3339"},
		{"created_at number", `{"role":"user","content":"x","created_at":1}`, "created_at"},
		{"tool_call_id number", `{"role":"tool","content":"x","tool_call_id":5}`, "tool_call_id"},
		{"name bool", `{"role":"tool","content":"x","name":false}`, "name"},
		{"is_error string", `{"role":"tool","content":"x","is_error":"true"}`, "is_error"},
		{"tool_calls not an array", `{"role":"assistant","tool_calls":{}}`, "tool_calls"},
		{"tool_calls without function name", `{"role":"assistant","tool_calls":[{"id":"a"}]}`, "function.name"},
		{"image_url without url", `{"role":"user","content":[{"type":"image_url","image_url":{}}]}`, "url"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := session.DecodeMessage([]byte(tc.in))
			if err == nil {
				t.Fatal("no error")
			}
			if !isInvalid(err) {
				t.Errorf("error %T is not *session.InvalidError", err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

func TestMessageJSONInterfaces(t *testing.T) {
	const in = `{"role":"user","content":"<b>x</b>","created_at":"2026-08-21T12:00:00Z","meta":{"a":1}}`
	var holder struct {
		Msg session.Message `json:"msg"`
	}
	if err := json.Unmarshal([]byte(`{"msg":`+in+`}`), &holder); err != nil {
		t.Fatal(err)
	}
	if got := encode(holder.Msg); got != in {
		t.Errorf("UnmarshalJSON: %s", got)
	}
	// encoding/json HTML-escapes what a Marshaler returns unless told not
	// to; AppendJSON itself never does.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(holder.Msg); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSuffix(buf.String(), "\n"); got != in {
		t.Errorf("MarshalJSON: %s", got)
	}
	t.Run("invalid JSON", func(t *testing.T) {
		var m session.Message
		err := m.UnmarshalJSON([]byte(`{"role":`))
		if !isInvalid(err) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("invalid message", func(t *testing.T) {
		var m session.Message
		err := json.Unmarshal([]byte(`{"role":"bot"}`), &m)
		if err == nil || !strings.Contains(err.Error(), "bot") {
			t.Errorf("got %v", err)
		}
	})
}

func TestMessageNoHTMLEscaping(t *testing.T) {
	m := blocks(session.RoleAssistant,
		session.Block{Type: session.BlockText, Text: "<script>alert('x')</script> & \u2028"},
		toolUse("t<1>", "a&b", `{"q":"<p>"}`),
	)
	m.Name = "<n>"
	got := encode(m)
	want := `{"role":"assistant","content":[{"type":"text","text":"<script>alert('x')</script> & ` + "\u2028" + `"},{"type":"tooluse","id":"t<1>","name":"a&b","input":{"q":"<p>"}}],"name":"<n>"}`
	if got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	if strings.Contains(got, `\u003c`) || strings.Contains(got, `\u0026`) {
		t.Error("HTML-escaped output")
	}
}

// Invalid UTF-8 is the caller's to reject, but what AppendJSON writes is
// still valid JSON: strings the package writes get U+FFFD.
func TestMessageInvalidUTF8(t *testing.T) {
	cases := []struct {
		name string
		msg  session.Message
		want string
	}{
		{"text", text(session.RoleUser, "a\xffb"), `{"role":"user","content":"a` + "\uFFFD" + `b"}`},
		{"truncated rune", text(session.RoleUser, "é"[:1]), `{"role":"user","content":"` + "\uFFFD" + `"}`},
		{"block fields", blocks(session.RoleAssistant, toolUse("\xc0", "n\xfe", `{}`)),
			`{"role":"assistant","content":[{"type":"tooluse","id":"` + "\uFFFD" + `","name":"n` + "\uFFFD" + `","input":{}}]}`},
		{"extra key", session.Message{Role: session.RoleUser, Content: session.TextContent("x"), Extra: []session.Field{{Key: "k\xff", Value: json.RawMessage(`1`)}}},
			`{"role":"user","content":"x","k` + "\uFFFD" + `":1}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.msg.AppendJSON(nil)
			if string(got) != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
			if !json.Valid(got) || !utf8.Valid(got) {
				t.Errorf("invalid JSON: %q", got)
			}
		})
	}
	t.Run("decoded", func(t *testing.T) {
		m, err := session.DecodeMessage([]byte("{\"role\":\"user\",\"content\":\"a\xffb\",\"k\xfe\":1}"))
		if err != nil {
			t.Fatal(err)
		}
		got := m.AppendJSON(nil)
		if !json.Valid(got) || !utf8.Valid(got) {
			t.Errorf("invalid JSON: %q", got)
		}
	})
}

func TestAppendJSONAppends(t *testing.T) {
	m := text(session.RoleUser, "x")
	got := m.AppendJSON([]byte("prefix:"))
	if string(got) != `prefix:{"role":"user","content":"x"}` {
		t.Errorf("got %s", got)
	}
}

func TestAsText(t *testing.T) {
	cases := []struct {
		name string
		msg  session.Message
		want string
		ok   bool
	}{
		{"text", text(session.RoleUser, "hi"), "hi", true},
		{"empty text", text(session.RoleUser, ""), "", true},
		{"first text block", blocks(session.RoleUser,
			session.Block{Type: session.BlockImage},
			session.Block{Type: session.BlockText, Text: "one"},
			session.Block{Type: session.BlockText, Text: "two"}), "one", true},
		{"no text block", blocks(session.RoleAssistant, toolUse("t", "n", `{}`)), "", false},
		{"no blocks", blocks(session.RoleAssistant), "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.msg.AsText()
			if got != tc.want || ok != tc.ok {
				t.Errorf("AsText() = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestIsUserTurn(t *testing.T) {
	note := text(session.RoleUser, "note")
	note.Kind = session.KindNote
	summary := text(session.RoleUser, "summary")
	summary.Kind = session.KindSummary
	rewind := text(session.RoleUser, "report")
	rewind.Kind = session.KindRewind
	cases := []struct {
		name string
		msg  session.Message
		want bool
	}{
		{"user text", text(session.RoleUser, "fix it"), true},
		{"user blocks", blocks(session.RoleUser, session.Block{Type: session.BlockImage}), true},
		{"assistant", text(session.RoleAssistant, "ok"), false},
		{"system", text(session.RoleSystem, "be terse"), false},
		{"tool", toolMsg("c", "out"), false},
		{"note", note, false},
		{"summary", summary, false},
		{"rewind", rewind, false},
		// Ours: compaction stubs from whycodes (no kind) are not turns either.
		{"compacted stub", text(session.RoleUser, "[Compacted earlier conversation]\nGoals: x"), false},
		{"continuation carrier", text(session.RoleUser, "  This session is being continued from a previous conversation"), false},
		{"stub text in blocks is a turn", blocks(session.RoleUser, session.Block{Type: session.BlockText, Text: "[Compacted earlier"}), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.msg.IsUserTurn(); got != tc.want {
				t.Errorf("IsUserTurn() = %v", got)
			}
		})
	}
}

func TestResultText(t *testing.T) {
	cases := []struct {
		name, json, want string
	}{
		{"string", `{"type":"toolresult","tool_use_id":"a","content":"body"}`, "body"},
		{"parts", `{"type":"toolresult","tool_use_id":"a","content":[{"type":"text","text":"a"},{"type":"image","source":{}},"b",{"type":"text","text":"c"}]}`, "a\nb\nc"},
		{"no text parts", `{"type":"toolresult","tool_use_id":"a","content":[{"type":"image","source":{}}]}`, ""},
		{"null", `{"type":"toolresult","tool_use_id":"a","content":null}`, ""},
		{"object is its JSON", `{"type":"toolresult","tool_use_id":"a","content":{"type":"text","text":"x"}}`, `{"type":"text","text":"x"}`},
		{"number is its JSON", `{"type":"toolresult","tool_use_id":"a","content":5}`, "5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := decode(t, `{"role":"user","content":[`+tc.json+`]}`)
			if got := m.Content.Blocks[0].ResultText(); got != tc.want {
				t.Errorf("ResultText() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCompactSummaryText(t *testing.T) {
	cases := []struct {
		in   string
		want bool
	}{
		{session.CompactedMarker + "\nx", true},
		{"[Compacted", true},
		{session.CompactContinuationPreamble, true},
		{"\n\t This session is being continued", true},
		{"[other]", false},
		{"this session is being continued", false},
		{"", false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			if got := session.IsCompactSummaryText(tc.in); got != tc.want {
				t.Errorf("IsCompactSummaryText(%q) = %v", tc.in, got)
			}
		})
	}
	const preamble = "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation."
	if session.CompactContinuationPreamble != preamble {
		t.Error("preamble differs from reference §2.1")
	}
}
