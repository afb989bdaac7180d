package format

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// cx writes one rollout line.
func cx(typ string, payload map[string]any) string {
	b, err := json.Marshal(map[string]any{"timestamp": "2026-02-23T12:00:00.000Z", "type": typ, "payload": payload})
	if err != nil {
		panic(err)
	}
	return string(b)
}

func cxMsg(role, text string) string {
	part := "input_text"
	if role == "assistant" {
		part = "output_text"
	}
	return cx("response_item", map[string]any{"type": "message", "role": role, "content": []any{map[string]any{"type": part, "text": text}}})
}

func cxCall(id, args string) string {
	return cx("response_item", map[string]any{"type": "function_call", "name": "exec_command", "arguments": args, "call_id": id})
}

func cxOut(id, out string) string {
	return cx("response_item", map[string]any{"type": "function_call_output", "call_id": id, "output": out})
}

func cxEvent(typ string, fields map[string]any) string {
	p := map[string]any{"type": typ}
	for k, v := range fields {
		p[k] = v
	}
	return cx("event_msg", p)
}

func cxTokens(in, cached, out int) string {
	u := map[string]any{"input_tokens": in, "cached_input_tokens": cached, "output_tokens": out, "reasoning_output_tokens": 0, "total_tokens": in + out}
	return cxEvent("token_count", map[string]any{"info": map[string]any{"total_token_usage": u, "last_token_usage": u}})
}

func cxTurn(prompt string) []string {
	return []string{
		cxEvent("task_started", map[string]any{"turn_id": "t-" + prompt}),
		cxMsg("user", prompt),
		cxEvent("user_message", map[string]any{"message": prompt}),
		cx("turn_context", map[string]any{"turn_id": "t-" + prompt, "model": "gpt-test"}),
	}
}

func TestCodexSteps(t *testing.T) {
	var lines []string
	lines = append(lines,
		cx("session_meta", map[string]any{"id": "th-1", "timestamp": "2026-02-23T11:59:00.000Z", "cwd": "/repo", "base_instructions": map[string]any{"text": "be terse"}, "cli_version": "0.1"}),
		cxMsg("developer", "sandbox rules"),
		cxMsg("user", "<environment_context>cwd</environment_context>"),
	)
	lines = append(lines, cxTurn("fix it")...)
	lines = append(lines,
		cx("response_item", map[string]any{"type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": "plan"}}, "content": nil, "encrypted_content": "ENC"}),
		cx("response_item", map[string]any{"type": "message", "role": "assistant", "phase": "commentary", "content": []any{map[string]any{"type": "output_text", "text": "checking"}}}),
		cxCall("c1", `{"cmd":"ls"}`),
		cxCall("c2", `not json`),
		cxEvent("token_count", map[string]any{"info": nil}),
		cxTokens(100, 40, 10),
		cxOut("c1", "a.go"),
		cxOut("c2", "b.go"),
		cx("turn_context", map[string]any{"turn_id": "t-fix it", "model": "gpt-test"}),
		cxTokens(100, 40, 10), // repeated snapshot
		cxMsg("assistant", "done"),
		cxEvent("agent_message", map[string]any{"message": "done"}),
		cxTokens(250, 140, 30),
		cxEvent("task_complete", nil),
		cx("response_item", map[string]any{"type": "ghost_snapshot"}),
		`not json at all`,
	)
	imp := importOne(t, KindCodex, jsonl(lines...), Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{
		"system:sandbox rules", "user/note:<environment_context>cwd</environment_context>", "user:fix it",
		"assistant:[thinking]|checking|call c1|call c2", "tool:c1=a.go", "tool:c2=b.go", "assistant:done",
	})
	meta := imp.Share.Meta
	equal(t, "system prompt", meta.SystemPrompt, "be terse")
	equal(t, "project", meta.ProjectPath, "/repo")
	equal(t, "source id", imp.SourceID, "th-1")
	equal(t, "created", meta.CreatedAt, "2026-02-23T11:59:00.000Z")
	u := meta.Usage
	if u.InputTokens != 110 || *u.CacheReadInputTokens != 140 || u.OutputTokens != 30 || u.Total() != 280 {
		t.Errorf("usage %+v: want the last total, cached input apart", u)
	}
	equal(t, "skipped", imp.Skipped, map[string]int{
		"event_msg:agent_message": 1, "event_msg:task_complete": 1, "response_item:ghost_snapshot": 1, "(not json)": 1,
	})
	a := imp.Share.Messages[3]
	th := a.Content.Blocks[0]
	if th.Text != "plan" || string(fieldValue(th.Extra, "encrypted_content")) != `"ENC"` || fieldValue(th.Extra, "content") != nil {
		t.Errorf("reasoning block %s", a.AppendJSON(nil))
	}
	equal(t, "phase", string(fieldValue(a.Content.Blocks[1].Extra, "phase")), `"commentary"`)
	equal(t, "parsed input", string(a.Content.Blocks[2].Input), `{"cmd":"ls"}`)
	equal(t, "unparsed input", string(a.Content.Blocks[3].Input), `"not json"`)
	equal(t, "step usage", gjson.GetBytes(fieldValue(a.Extra, "codex"), "usage.input_tokens").Int(), int64(100))
	equal(t, "model", gjson.GetBytes(fieldValue(a.Extra, "codex"), "model").Str, "gpt-test")
	if m := imp.Share.Messages[4]; m.Name != "exec_command" || m.ToolCallID != "c1" {
		t.Errorf("tool message %+v", m)
	}
}

// thread_rolled_back takes turns off the active path; they stay a branch.
func TestCodexRollback(t *testing.T) {
	var lines []string
	lines = append(lines, cx("session_meta", map[string]any{"id": "th-2"}))
	lines = append(lines, cxTurn("one")...)
	lines = append(lines, cxMsg("assistant", "first"))
	lines = append(lines, cxTurn("two")...)
	lines = append(lines, cxMsg("assistant", "second"))
	lines = append(lines, cxEvent("thread_rolled_back", map[string]any{"num_turns": 1}))
	lines = append(lines, cxTurn("three")...)
	lines = append(lines, cxMsg("assistant", "third"))
	imp := importOne(t, KindCodex, jsonl(lines...), Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{"user:one", "assistant:first", "user:three", "assistant:third"})
	equal(t, "branches", branchTexts(&imp.Share), [][]string{{"user:one", "assistant:first", "user:two", "assistant:second"}})
	_, nodes := session.FromShare(&imp.Share, testID(0), t0)
	equal(t, "nodes", len(nodes), 6)
}

// compacted replaces the active path; the old one stays as a branch.
func TestCodexCompacted(t *testing.T) {
	var lines []string
	lines = append(lines, cxMsg("developer", "rules"))
	lines = append(lines, cxTurn("one")...)
	lines = append(lines, cxMsg("assistant", "first"))
	t.Run("replacement history", func(t *testing.T) {
		l := append(append([]string(nil), lines...),
			cx("compacted", map[string]any{"message": "SUMMARY", "replacement_history": []any{
				map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "rules"}}},
				map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "prefix SUMMARY"}}},
			}}),
			cxMsg("assistant", "after"))
		imp := importOne(t, KindCodex, jsonl(l...), Options{})
		equal(t, "path", texts(imp.Share.Messages), []string{"system:rules", "user/summary:prefix SUMMARY", "assistant:after"})
		equal(t, "branches", branchTexts(&imp.Share), [][]string{{"system:rules", "user:one", "assistant:first"}})
	})
	t.Run("summary only", func(t *testing.T) {
		l := append(append([]string(nil), lines...), cx("compacted", map[string]any{"message": "SUMMARY"}), cxMsg("assistant", "after"))
		imp := importOne(t, KindCodex, jsonl(l...), Options{})
		equal(t, "path", texts(imp.Share.Messages), []string{"system:rules", "user:one", "user/summary:SUMMARY", "assistant:after"})
		equal(t, "branches", len(imp.Share.Branches), 1)
	})
}

// The fixtures README's final totals, and its turn structure.
func TestCodexFixtureFacts(t *testing.T) {
	dir := filepath.Join(fixturesDir(t), "codex")
	cases := []struct {
		name                           string
		input, cached, output, total   uint64
		assistant, tools, calls, typed int
	}{
		{"rollout-a.jsonl", 1751428, 1651968, 14600, 1766028, 28, 118, 118, 1},
		{"rollout-b.jsonl", 34469, 3456, 431, 34900, 1, 0, 1, 1},
		{"rollout-c.jsonl", 298373, 238848, 1123, 299496, 6, 5, 5, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			imp := importOne(t, KindCodex, readFile(t, filepath.Join(dir, c.name)), Options{})
			u := imp.Share.Meta.Usage
			got := []uint64{u.InputTokens + *u.CacheReadInputTokens, *u.CacheReadInputTokens, u.OutputTokens, u.Total()}
			equal(t, "usage", got, []uint64{c.input, c.cached, c.output, c.total})
			var assistant, tools, calls, typed int
			for _, m := range imp.Share.Messages {
				switch {
				case m.Role == session.RoleAssistant:
					assistant++
				case m.Role == session.RoleTool:
					tools++
					if m.Name == "" {
						t.Errorf("tool message %s without a name", m.ToolCallID)
					}
				case m.IsUserTurn():
					typed++
				}
				for _, b := range m.Content.Blocks {
					if b.Type == session.BlockToolUse {
						calls++
					}
				}
			}
			equal(t, "assistant/tools/calls/typed", []int{assistant, tools, calls, typed}, []int{c.assistant, c.tools, c.calls, c.typed})
		})
	}
}

func TestCodexErrors(t *testing.T) {
	for name, data := range map[string][]byte{
		"events only": jsonl(cx("session_meta", map[string]any{"id": "x"}), cxEvent("task_started", nil), cxTokens(1, 0, 1)),
		"garbage":     []byte("{\n[\n"),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Import(KindCodex, data, Options{}); err == nil || !isInvalid(err) {
				t.Fatalf("err = %v, want an InvalidError", err)
			}
		})
	}
}

func ExampleImport() {
	rollout := jsonl(
		cx("session_meta", map[string]any{"id": "th-9", "cwd": "/repo"}),
		cxMsg("user", "hi"),
		cxMsg("assistant", "hello"),
	)
	imps, err := Import(KindAuto, rollout, Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range imps[0].Share.Messages {
		fmt.Println(m.Role, contentText(&m.Content))
	}
	// Output:
	// user hi
	// assistant hello
}

// A prompt that exists only as a user_message event (Codex Desktop, a
// filtered rollout) is a user turn where the event stands, with its time;
// a prompt both an item and an event carry is imported once.
func TestCodexEventOnlyPrompts(t *testing.T) {
	ev := func(ts, text string) string {
		b, _ := json.Marshal(map[string]any{"timestamp": ts, "type": "event_msg", "payload": map[string]any{"type": "user_message", "message": text, "images": []any{}}})
		return string(b)
	}
	lines := []string{
		cx("session_meta", map[string]any{"id": "th-ev"}),
		cxMsg("developer", "rules"),
		cxMsg("user", "<environment_context>cwd</environment_context>"),
		cxEvent("task_started", nil),
		ev("2026-02-23T12:00:01.000Z", "first prompt"),
		cxMsg("assistant", "one"),
		cxEvent("task_started", nil),
		cxMsg("user", "second prompt"),
		ev("2026-02-23T12:00:03.000Z", "second prompt"),
		cxMsg("assistant", "two"),
		cxEvent("task_started", nil),
		ev("2026-02-23T12:00:05.000Z", "third prompt"),
		cxMsg("assistant", "three"),
	}
	imp := importOne(t, KindCodex, jsonl(lines...), Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{"system:rules", "user/note:<environment_context>cwd</environment_context>",
		"user:first prompt", "assistant:one", "user:second prompt", "assistant:two", "user:third prompt", "assistant:three"})
	equal(t, "first prompt's time", imp.Share.Messages[2].CreatedAt, "2026-02-23T12:00:01.000Z")
	meta, _ := session.FromShare(&imp.Share, testID(0), t0)
	equal(t, "title", meta.Title, "first prompt")
	turns := 0
	for i := range imp.Share.Messages {
		if imp.Share.Messages[i].IsUserTurn() {
			turns++
		}
	}
	equal(t, "user turns", turns, 3)
	if len(imp.Skipped) != 0 {
		t.Errorf("skipped %v", imp.Skipped)
	}
}

// A multi-agent subagent's rollout whose messages exist only as events
// imports them: the prompt from user_message, the replies from
// agent_message and agent_reasoning.
func TestCodexEventOnlySubagent(t *testing.T) {
	lines := []string{
		cx("session_meta", map[string]any{"id": "th-sub", "source": map[string]any{"subagent": "review"}}),
		cxEvent("task_started", nil),
		cxEvent("user_message", map[string]any{"message": "review the diff"}),
		cxEvent("agent_reasoning", map[string]any{"text": "looking"}),
		cxEvent("agent_message", map[string]any{"message": "looks fine"}),
		cxEvent("task_complete", map[string]any{"last_agent_message": "looks fine"}),
	}
	imp := importOne(t, KindAuto, jsonl(lines...), Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{"user:review the diff", "assistant:[thinking]|looks fine"})
}

// An image prompt's item wraps the image in tags the event leaves out: it
// is still the typed prompt, a user turn with an image block.
func TestCodexImagePrompt(t *testing.T) {
	part := func(text string) map[string]any { return map[string]any{"type": "input_text", "text": text} }
	lines := []string{
		cx("session_meta", map[string]any{"id": "th-img"}),
		cxEvent("task_started", nil),
		cx("response_item", map[string]any{"type": "message", "role": "user", "content": []any{
			part("<image name=[Image #1]>"),
			map[string]any{"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
			part("</image>"),
			part("[Image #1]\n\nwhy is the model unknown?"),
		}}),
		cxEvent("user_message", map[string]any{"message": "[Image #1]\n\nwhy is the model unknown?", "images": []any{"data:image/png;base64,iVBORw0KGgo="}}),
		cxMsg("assistant", "a stale cache"),
	}
	imp := importOne(t, KindCodex, jsonl(lines...), Options{})
	m := imp.Share.Messages[0]
	if !m.IsUserTurn() {
		t.Fatalf("the image prompt is not a user turn: %s", m.AppendJSON(nil))
	}
	equal(t, "blocks", outline(&m), "2026-02-23T12:00:00.000Z user text image text text")
	meta, _ := session.FromShare(&imp.Share, testID(0), t0)
	equal(t, "title", meta.Title, "why is the model unknown?") // the placeholder line says nothing
	equal(t, "messages", len(imp.Share.Messages), 2)
}

// An image without a label is wrapped in "<image>" (codex-rs), and a
// redacted rollout turns each wrapper into a marker
// (testdata/fixtures/codex/images-compacted.jsonl: 13 image prompts): the
// item is still the typed prompt, imported once with its image.
func TestCodexImagePromptWrappers(t *testing.T) {
	part := func(text string) map[string]any { return map[string]any{"type": "input_text", "text": text} }
	img := map[string]any{"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
	marker := func(kind string, n int, sha string) string {
		return fmt.Sprintf("[REDACTED_%s len=%d sha=%s]", kind, n, sha)
	}
	lines := []string{
		cx("session_meta", map[string]any{"id": "th-img"}),
		cxEvent("task_started", nil),
		cx("response_item", map[string]any{"type": "message", "role": "user", "content": []any{part("what is this?"), part("<image>"), img, part("</image>")}}),
		cxEvent("user_message", map[string]any{"message": "what is this?", "images": []any{"data:image/png;base64,iVBORw0KGgo="}}),
		cxMsg("assistant", "a cat"),
		cxEvent("task_started", nil),
		cx("response_item", map[string]any{"type": "message", "role": "user", "content": []any{
			part(marker("TEXT", 1, "01ba4719")), part(marker("TEXT", 7, "92b00aa2")), img, part(marker("TEXT", 8, "74dc9557")),
		}}),
		cxEvent("user_message", map[string]any{"message": marker("MESSAGE", 1, "01ba4719"), "images": []any{"data:image/png;base64,iVBORw0KGgo="}}),
		cxMsg("assistant", "a dog"),
	}
	imp := importOne(t, KindCodex, jsonl(lines...), Options{})
	var outlines []string
	for i := range imp.Share.Messages {
		outlines = append(outlines, outline(&imp.Share.Messages[i]))
	}
	equal(t, "messages", outlines, []string{
		"2026-02-23T12:00:00.000Z user text text image text", "2026-02-23T12:00:00.000Z assistant text",
		"2026-02-23T12:00:00.000Z user text text image text", "2026-02-23T12:00:00.000Z assistant text",
	})
	for _, i := range []int{0, 2} {
		if !imp.Share.Messages[i].IsUserTurn() {
			t.Errorf("message %d, an image prompt, is not a user turn", i)
		}
	}
}

// A step's usage goes in its codex member; another snapshot for the same
// step makes it an array of them, in order, beside the member's others.
func TestCodexAddMember(t *testing.T) {
	extra := []session.Field{{Key: "claude", Value: json.RawMessage(`{"usage":1}`)}, {Key: "codex", Value: json.RawMessage(`{"model":"m"}`)}}
	for i, want := range []string{
		`{"model":"m","usage":{"a":1}}`,
		`{"model":"m","usage":[{"a":1},{"a":2}]}`,
		`{"model":"m","usage":[{"a":1},{"a":2},{"a":3}]}`,
	} {
		extra = addMember(extra, "codex", "usage", fmt.Sprintf(`{ "a": %d }`, i+1))
		equal(t, "members", len(extra), 2)
		equal(t, "the other member", string(extra[0].Value), `{"usage":1}`)
		equal(t, fmt.Sprintf("after %d", i+1), string(extra[1].Value), want)
	}
	fresh := addMember(nil, "codex", "usage", `{"a": [1, 2]}`)
	if len(fresh) != 1 || fresh[0].Key != "codex" || string(fresh[0].Value) != `{"usage":{"a":[1,2]}}` {
		t.Errorf("a new member: %+v", fresh)
	}
}
