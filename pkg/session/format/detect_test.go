package format

import (
	"testing"
)

func TestDetectFixtures(t *testing.T) {
	for _, fx := range fixtures(t) {
		t.Run(fx.dir+"/"+fx.name, func(t *testing.T) {
			got, err := Detect(readFile(t, fx.path))
			if err != nil || got != fx.kind {
				t.Fatalf("Detect = %q, %v; want %q", got, err, fx.kind)
			}
		})
	}
}

func TestDetectSamples(t *testing.T) {
	cases := []struct {
		name string
		data string
		want Kind
	}{
		{"native share", `{"id":"x","title":"t","messages":[{"role":"user","content":"hi"}],"branches":[]}`, KindNative},
		{"whycodes session wrapper", `{"session":{},"messages":[]}`, KindNative},
		{"native array with wc blocks", `[{"role":"assistant","content":[{"type":"tooluse","id":"1","name":"n","input":{}}]},{"role":"tool","content":"x","tool_call_id":"1"}]`, KindNative},
		{"plain message array", `[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]`, KindNative},
		{"native stream", "{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"assistant\",\"content\":\"yo\"}\n", KindNative},
		{"shares a line", "{\"title\":\"a\",\"messages\":[]}\n{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n", KindNative},
		{"array of shares", `[{"title":"a","messages":[]},{"messages":[]}]`, KindNative},
		{"openai body", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`, KindOpenAI},
		{"openai body with system", `{"model":"o3","messages":[{"role":"developer","content":"be brief"},{"role":"user","content":"hi"}]}`, KindOpenAI},
		{"openai array", `[{"role":"system","content":"s"},{"role":"user","content":"hi"}]`, KindOpenAI},
		{"openai tool calls", `[{"role":"assistant","content":null,"tool_calls":[]}]`, KindOpenAI},
		{"anthropic body", `{"model":"x","max_tokens":10,"system":"s","messages":[{"role":"user","content":"hi"}]}`, KindAnthropic},
		{"anthropic body by model", `{"model":"claude-sonnet-4","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, KindAnthropic},
		{"anthropic array", `[{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"n","input":{}}]}]`, KindAnthropic},
		{"anthropic thinking", `[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"}]}]`, KindAnthropic},
		{"opencode", `{"info":{"id":"ses_1"},"messages":[]}`, KindOpencode},
		{"codex", "{\"type\":\"session_meta\",\"payload\":{}}\n", KindCodex},
		{"codex after junk", "garbage\n{\"timestamp\":\"t\",\"type\":\"response_item\",\"payload\":{}}\n", KindCodex},
		{"claude summary first", "{\"type\":\"summary\",\"summary\":\"s\",\"leafUuid\":\"u\"}\n{\"type\":\"user\",\"uuid\":\"u\"}\n", KindClaude},
		{"byte order mark", "\ufeff{\"type\":\"session_meta\",\"payload\":{}}\n", KindCodex},
		{"wc-export jsonl", `{"id":"x","seq":1,"parent":0,"message":{"role":"user","content":"hi"}}`, KindNative},
		{"claude after non-records", "42\n{\"silly\":1}\n{\"type\":\"progress\",\"uuid\":\"p\"}", KindClaude},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Detect([]byte(c.data))
			if err != nil || got != c.want {
				t.Fatalf("Detect = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestDetectErrors(t *testing.T) {
	cases := []struct {
		name, data, msg string
	}{
		{"empty", "", "empty input"},
		{"blank", " \n\t\n", "empty input"},
		{"not json", "hello world\n", "input is not json"},
		{"json without messages", `{"foo":1}`, "unrecognised input: a JSON object (members foo) that is not a known transcript format"},
		{"pretty-printed object", "{\n  \"foo\": 1,\n  \"bar\": [\n    2\n  ]\n}\n", "unrecognised input: a JSON object (members foo, bar) that is not a known transcript format"},
		{"claude -p json", `{"type":"result","subtype":"success","result":"4","session_id":"s"}`, "this looks like the output of claude -p --output-format json (the final reply only, no transcript), which wc cannot read"},
		{"gemini json", "{\n  \"session_id\": \"s\",\n  \"response\": \"4\",\n  \"stats\": {}\n}", "this looks like the output of gemini --output-format json (the final reply only, no transcript), which wc cannot read"},
		{"array of numbers", `[1,2,3]`, "unrecognised input: not a known transcript format"},
		{"jsonl without records", "{\"a\":1}\n{\"b\":2}\n", "unrecognised input: not a known transcript format"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Detect([]byte(c.data))
			if err == nil || !isInvalid(err) || err.Error() != c.msg {
				t.Fatalf("Detect = %v, want an InvalidError %q", err, c.msg)
			}
			// Import in auto mode fails the same way.
			if _, err := Import(KindAuto, []byte(c.data), Options{}); err == nil || !isInvalid(err) || err.Error() != c.msg {
				t.Fatalf("Import = %v, want an InvalidError %q", err, c.msg)
			}
		})
	}
}

// A pretty-printed document is read like a compact one: a message, or a
// transcript's single record.
func TestDetectPrettyPrinted(t *testing.T) {
	for name, c := range map[string]struct {
		data string
		kind Kind
	}{
		"message":        {"{\n  \"role\": \"user\",\n  \"content\": \"hi\"\n}\n", KindNative},
		"claude record":  {"{\n  \"type\": \"user\",\n  \"uuid\": \"u1\",\n  \"parentUuid\": null,\n  \"sessionId\": \"s\",\n  \"message\": {\"role\": \"user\", \"content\": \"hi\"}\n}\n", KindClaude},
		"gemini session": {"{\n  \"sessionId\": \"s\",\n  \"projectHash\": \"h\",\n  \"messages\": [\n    {\"id\": \"m1\", \"type\": \"user\", \"content\": \"hi\"}\n  ]\n}\n", KindGemini},
	} {
		t.Run(name, func(t *testing.T) {
			k, err := Detect([]byte(c.data))
			if err != nil || k != c.kind {
				t.Fatalf("Detect = %q, %v; want %q", k, err, c.kind)
			}
			imp := importOne(t, KindAuto, []byte(c.data), Options{})
			equal(t, "messages", texts(imp.Share.Messages), []string{"user:hi"})
		})
	}
}

func TestParseKind(t *testing.T) {
	cases := map[string]Kind{
		"": KindAuto, "auto": KindAuto, " Auto ": KindAuto, "native": KindNative, "whycodes": KindNative,
		"claude": KindClaude, "Claude-Code": KindClaude, "codex": KindCodex, "opencode": KindOpencode,
		"openai": KindOpenAI, "ANTHROPIC": KindAnthropic,
	}
	for in, want := range cases {
		got, err := ParseKind(in)
		if err != nil || got != want {
			t.Errorf("ParseKind(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseKind("pi"); err == nil || !isInvalid(err) || err.Error() != `unknown import format "pi"` {
		t.Errorf("ParseKind(pi) = %v", err)
	}
	for _, k := range Kinds {
		if got, err := ParseKind(string(k)); err != nil || got != k {
			t.Errorf("ParseKind(%q) = %q, %v", k, got, err)
		}
	}
}
