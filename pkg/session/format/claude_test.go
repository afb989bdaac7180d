package format

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// rec writes one Claude Code record: the envelope plus fields.
func rec(typ, uuid, parent string, fields map[string]any) string {
	m := map[string]any{"type": typ, "sessionId": "s1", "cwd": "/p", "timestamp": "2026-01-01T10:00:00.000Z"}
	if uuid != "" {
		m["uuid"] = uuid
		if parent == "" {
			m["parentUuid"] = nil
		} else {
			m["parentUuid"] = parent
		}
	}
	for k, v := range fields {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func userRec(uuid, parent, text string) string {
	return rec("user", uuid, parent, map[string]any{"message": map[string]any{"role": "user", "content": text}})
}

func asstRec(uuid, parent, msgID string, out int, blocks ...any) string {
	return rec("assistant", uuid, parent, map[string]any{"message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": "claude-x", "content": blocks,
		"stop_reason": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": out, "cache_read_input_tokens": 100},
	}})
}

func resultRec(uuid, parent, callID, text string, isErr bool) string {
	return rec("user", uuid, parent, map[string]any{
		"message":       map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": callID, "content": text, "is_error": isErr}}},
		"toolUseResult": map[string]any{"stdout": text},
	})
}

func progressRec(uuid, parent string) string {
	return rec("progress", uuid, parent, map[string]any{"data": map[string]any{"type": "hook_progress"}})
}

func textBlock(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func useBlock(id, name string) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{"x": 1}}
}

func jsonl(lines ...string) []byte { return []byte(strings.Join(lines, "\n")) }

func importOne(t *testing.T, kind Kind, data []byte, opt Options) Imported {
	t.Helper()
	imps, err := Import(kind, data, opt)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if len(imps) != 1 {
		t.Fatalf("got %d sessions, want 1", len(imps))
	}
	checkImported(t, &imps[0])
	return imps[0]
}

// texts renders a path as role:text lines (tool calls and results by id).
func texts(msgs []session.Message) []string {
	var out []string
	for _, m := range msgs {
		s := string(m.Role)
		if m.Kind != session.KindNone {
			s += "/" + string(m.Kind)
		}
		s += ":"
		if m.Role == session.RoleTool {
			s += m.ToolCallID + "=" + m.Content.Text
			if m.IsError {
				s += "!"
			}
			out = append(out, s)
			continue
		}
		if !m.Content.IsBlocks {
			out = append(out, s+m.Content.Text)
			continue
		}
		var parts []string
		for _, b := range m.Content.Blocks {
			switch b.Type {
			case session.BlockText:
				parts = append(parts, b.Text)
			case session.BlockToolUse:
				parts = append(parts, "call "+b.ID)
			default:
				parts = append(parts, "["+b.Type+"]")
			}
		}
		out = append(out, s+strings.Join(parts, "|"))
	}
	return out
}

func branchTexts(sh *session.Share) [][]string {
	var out [][]string
	for _, b := range sh.Branches {
		out = append(out, texts(b.Messages))
	}
	return out
}

func equal(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %#v\n want %#v", what, got, want)
	}
}

// A split response whose parallel calls and results interleave, with a
// progress record in the chain, is one assistant message followed by its
// results in call order; its usage counts once, at the largest figure.
func TestClaudeSplitResponse(t *testing.T) {
	data := jsonl(
		progressRec("p0", ""),
		userRec("u1", "p0", "go"),
		asstRec("a1", "u1", "M", 25, textBlock("looking")),
		asstRec("a2", "a1", "M", 25, useBlock("c1", "Read")),
		asstRec("a3", "a2", "M", 173, useBlock("c2", "Glob")), // parallel: both calls back to back
		progressRec("p1", "a3"),
		resultRec("r2", "a3", "c2", "globbed", false),
		resultRec("r1", "a2", "c1", "read", true), // off the chain from the leaf
		asstRec("a4", "r1", "N", 5, textBlock("done")),
		userRec("u2", "a4", "thanks"),
	)
	imp := importOne(t, KindClaude, data, Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{
		"user:go", "assistant:looking|call c1|call c2", "tool:c1=read!", "tool:c2=globbed", "assistant:done", "user:thanks",
	})
	equal(t, "branches", len(imp.Share.Branches), 0)
	u := imp.Share.Meta.Usage
	if u.InputTokens != 20 || u.OutputTokens != 178 || *u.CacheReadInputTokens != 200 || u.CacheCreationInputTokens != nil {
		t.Errorf("usage %+v", u)
	}
	equal(t, "skipped", imp.Skipped, map[string]int{"progress": 2})
	if m := imp.Share.Messages[2]; m.Name != "Read" || !m.IsError || m.CreatedAt == "" {
		t.Errorf("tool message %+v", m)
	}
	if got := gjson.GetBytes(fieldValue(imp.Share.Messages[2].Extra, "claude"), "toolUseResult.stdout").Str; got != "read" {
		t.Errorf("toolUseResult not kept: %q", got)
	}
	if got := gjson.GetBytes(fieldValue(imp.Share.Messages[1].Extra, "claude"), "usage.output_tokens").Int(); got != 173 {
		t.Errorf("per-response usage %d, want the last line's 173", got)
	}
}

func fieldValue(fields []session.Field, key string) []byte {
	for _, f := range fields {
		if f.Key == key {
			return f.Value
		}
	}
	return nil
}

// A rewind adds a sibling: the path to the last record is active, the
// other leaf a branch. A compact boundary starts a new root, so the
// summary heads the active path and the history stays as branches.
func TestClaudeRewindAndCompaction(t *testing.T) {
	data := jsonl(
		userRec("u1", "", "start"),
		asstRec("a1", "u1", "A1", 5, textBlock("ready")),
		userRec("b1u", "a1", "first attempt"),
		asstRec("b1a", "b1u", "B1", 5, textBlock("first answer")),
		userRec("b2u", "a1", "second attempt"), // the rewind
		asstRec("b2a", "b2u", "B2", 5, textBlock("second answer")),
		rec("system", "cb", "", map[string]any{"subtype": "compact_boundary", "logicalParentUuid": "b2a", "content": "Conversation compacted", "compactMetadata": map[string]any{"trigger": "auto", "preTokens": 1500}}),
		rec("user", "cs", "cb", map[string]any{"isCompactSummary": true, "message": map[string]any{"role": "user", "content": "This session is being continued from a previous conversation that ran out of context. Summary: a plan."}}),
		userRec("p1u", "cs", "after"),
		asstRec("p1a", "p1u", "P1", 5, textBlock("final")),
	)
	imp := importOne(t, KindClaude, data, Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{
		"user/summary:This session is being continued from a previous conversation that ran out of context. Summary: a plan.",
		"user:after", "assistant:final",
	})
	equal(t, "branches", branchTexts(&imp.Share), [][]string{
		{"user:start", "assistant:ready", "user:first attempt", "assistant:first answer"},
		{"user:start", "assistant:ready", "user:second attempt", "assistant:second answer"},
	})
	cb := gjson.GetBytes(fieldValue(imp.Share.Messages[0].Extra, "claude"), "compact_boundary")
	if cb.Get("uuid").Str != "cb" || cb.Get("compactMetadata.preTokens").Int() != 1500 || cb.Get("logicalParentUuid").Str != "b2a" {
		t.Errorf("compact boundary not kept on the summary: %s", cb.Raw)
	}
	meta, nodes := session.FromShare(&imp.Share, testID(0), t0)
	equal(t, "nodes", len(nodes), 9) // start and ready are shared
	equal(t, "stored branches", len(meta.Branches), 2)
	equal(t, "usage", imp.Share.Meta.Usage.OutputTokens, uint64(20))
	equal(t, "skipped", imp.Skipped, map[string]int{})
}

// A compact boundary with no summary record after it becomes the summary
// carrier itself.
func TestClaudeBoundaryWithoutSummary(t *testing.T) {
	data := jsonl(
		userRec("u1", "", "one"),
		asstRec("a1", "u1", "A", 1, textBlock("two")),
		rec("system", "cb", "", map[string]any{"subtype": "compact_boundary", "logicalParentUuid": "a1"}),
		userRec("u2", "cb", "three"),
	)
	imp := importOne(t, KindClaude, data, Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{"user/summary:" + session.CompactedMarker, "user:three"})
	equal(t, "branches", branchTexts(&imp.Share), [][]string{{"user:one", "assistant:two"}})
}

// Hand-written files leave every parent null: file order links them.
// Records with a parent missing from the file continue the conversation
// too, and only exact duplicates of a uuid are dropped.
func TestClaudeNullAndDanglingParents(t *testing.T) {
	dup := userRec("u3", "", "again")
	data := jsonl(
		userRec("u1", "gone", "one"),
		asstRec("a1", "", "A", 1, useBlock("c1", "Bash")),
		resultRec("r1", "", "c1", "ok", false),
		asstRec("a2", "elsewhere", "B", 1, textBlock("two")),
		dup, dup,
	)
	imp := importOne(t, KindClaude, data, Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{"user:one", "assistant:call c1", "tool:c1=ok", "assistant:two", "user:again"})
	equal(t, "skipped", imp.Skipped, map[string]int{"(duplicate record)": 1})
}

// A resumed session writes the record it continues from again, under the
// new session id and a new time (testdata/fixtures/claude-code/resumed.jsonl,
// line 49): the same uuid and message are one record, so its tool result
// is imported once. A uuid with another message stays a record of its own.
func TestClaudeResumedRecordOnce(t *testing.T) {
	again := func(line, session, ts string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		m["sessionId"], m["timestamp"] = session, ts
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	result := resultRec("r1", "a1", "c1", "ok", false)
	data := jsonl(
		userRec("u1", "", "one"),
		asstRec("a1", "u1", "A", 1, useBlock("c1", "Bash")),
		result,
		again(result, "s2", "2026-01-01T10:05:00.000Z"),
		again(asstRec("a2", "r1", "B", 1, textBlock("two")), "s2", "2026-01-01T10:05:01.000Z"),
		again(userRec("u1", "a2", "three, under u1's uuid"), "s2", "2026-01-01T10:05:02.000Z"),
	)
	imp := importOne(t, KindClaude, data, Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{"user:one", "assistant:call c1", "tool:c1=ok", "assistant:two", "user:three, under u1's uuid"})
	equal(t, "skipped", imp.Skipped, map[string]int{"(duplicate record)": 1})
}

// Claude Code 2.1.39 keeps a prompt typed during a turn and given to the
// model in that turn only as queue operations (enqueue, then remove;
// testdata/fixtures/claude-code/queued-prompts.jsonl): it becomes a user
// message after the tool results of the turn's step. A queued task
// notification stays queued until a user record sends it, a dequeued
// prompt is a user record, and a queued slash command runs: those are not
// imported twice. What is left queued is counted.
func TestClaudeQueuedPrompts(t *testing.T) {
	q := func(op, content string) string {
		f := map[string]any{"operation": op}
		if content != "" {
			f["content"] = content
		}
		return rec("queue-operation", "", "", f)
	}
	note := "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>"
	data := jsonl(
		userRec("u1", "", "one"),
		asstRec("a1", "u1", "A", 1, useBlock("c1", "Bash")),
		q("enqueue", note),
		q("enqueue", "check again"),
		q("remove", ""),
		resultRec("r1", "a1", "c1", "ok", false),
		asstRec("a2", "r1", "B", 1, textBlock("two")),
		userRec("n1", "a2", note),
		asstRec("a3", "n1", "C", 1, useBlock("c2", "Bash")),
		q("enqueue", "/mcp"),
		q("remove", ""),
		resultRec("r2", "a3", "c2", "done", false),
		q("enqueue", "next"),
		q("dequeue", ""),
		userRec("u2", "r2", "next"),
		asstRec("a4", "u2", "D", 1, textBlock("three")),
		q("enqueue", "never sent"),
	)
	imp := importOne(t, KindClaude, data, Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{
		"user:one", "assistant:call c1", "tool:c1=ok", "user:check again", "assistant:two",
		"user/note:" + note, "assistant:call c2", "tool:c2=done", "user:next", "assistant:three",
	})
	equal(t, "skipped", imp.Skipped, map[string]int{"queue-operation": 7}) // all but the imported enqueue
	if at := imp.Share.Messages[3].CreatedAt; at != "2026-01-01T10:00:00.000Z" {
		t.Errorf("the queued prompt's time %q is not its enqueue's", at)
	}
}

// CRLF line ends, a byte order mark and a last line without a newline.
func TestClaudeLineEnds(t *testing.T) {
	data := "\ufeff" + userRec("u1", "", "one") + "\r\n\r\n" + asstRec("a1", "u1", "A", 1, textBlock("two"))
	imp := importOne(t, KindAuto, []byte(data), Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{"user:one", "assistant:two"})
	equal(t, "skipped", imp.Skipped, map[string]int{})
}

// Sidechains in a main file are counted and left out, or imported as
// sessions of their own.
func TestClaudeSidechains(t *testing.T) {
	side := func(uuid, parent string, line string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		m["isSidechain"], m["agentId"] = true, "ag1"
		if parent == "" {
			m["parentUuid"] = nil
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	data := jsonl(
		userRec("u1", "", "explore"),
		asstRec("a1", "u1", "A", 1, useBlock("task1", "Task")),
		side("s1", "", userRec("s1", "", "explore the repo")),
		side("s2", "s1", asstRec("s2", "s1", "S", 7, textBlock("found it"))),
		resultRec("r1", "a1", "task1", "report", false),
	)
	imp := importOne(t, KindClaude, data, Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{"user:explore", "assistant:call task1", "tool:task1=report"})
	equal(t, "skipped", imp.Skipped, map[string]int{"sidechain": 2})
	equal(t, "usage", imp.Share.Meta.Usage.OutputTokens, uint64(1))

	imps, err := Import(KindClaude, data, Options{Sidechains: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(imps) != 2 {
		t.Fatalf("got %d sessions, want 2", len(imps))
	}
	sc := imps[1]
	checkImported(t, &sc)
	equal(t, "sidechain path", texts(sc.Share.Messages), []string{"user:explore the repo", "assistant:found it"})
	equal(t, "sidechain ids", []string{sc.SourceID, sc.Parent}, []string{"ag1", "s1"})
	equal(t, "sidechain usage", sc.Share.Meta.Usage.OutputTokens, uint64(7))
	equal(t, "main skipped", imps[0].Skipped, map[string]int{})
}

// Titles: the newest custom title wins over an ai title and a summary.
// Each is a title hint, which from_imported makes manual, as whycodes does.
func TestClaudeTitles(t *testing.T) {
	base := []string{userRec("u1", "", "hello"), asstRec("a1", "u1", "A", 1, textBlock("hi"))}
	cases := []struct {
		name  string
		extra []string
		title string
		src   session.TitleSource
	}{
		{"none", nil, "", ""},
		{"summary", []string{rec("summary", "", "", map[string]any{"summary": "A summary.", "leafUuid": "a1"})}, "A summary", session.TitleManual},
		{"ai", []string{
			rec("summary", "", "", map[string]any{"summary": "A summary", "leafUuid": "a1"}),
			rec("ai-title", "", "", map[string]any{"aiTitle": "AI title"}),
		}, "AI title", session.TitleManual},
		{"custom", []string{
			rec("custom-title", "", "", map[string]any{"customTitle": "old"}),
			rec("ai-title", "", "", map[string]any{"aiTitle": "AI title"}),
			rec("custom-title", "", "", map[string]any{"customTitle": "Mine"}),
		}, "Mine", session.TitleManual},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			imp := importOne(t, KindClaude, jsonl(append(append([]string(nil), base...), c.extra...)...), Options{})
			equal(t, "title", []any{imp.Share.Meta.Title, imp.Share.Meta.TitleSource}, []any{c.title, c.src})
		})
	}
}

// Two session ids in one file are two sessions, unless a parent link joins
// them (a resumed session copies its history).
func TestClaudeSessionIDs(t *testing.T) {
	other := func(line string) string { return strings.Replace(line, `"sessionId":"s1"`, `"sessionId":"s2"`, 1) }
	separate := jsonl(userRec("u1", "", "one"), asstRec("a1", "u1", "A", 1, textBlock("x")), other(userRec("v1", "", "two")))
	imps, err := Import(KindClaude, separate, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, imp := range imps {
		ids = append(ids, imp.SourceID)
	}
	equal(t, "sessions", ids, []string{"s1", "s2"})

	joined := jsonl(userRec("u1", "", "one"), asstRec("a1", "u1", "A", 1, textBlock("x")), other(userRec("v1", "a1", "two")))
	imp := importOne(t, KindClaude, joined, Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{"user:one", "assistant:x", "user:two"})
	equal(t, "source id", imp.SourceID, "s2")
}

// Tool results whose call is not in the file stay tool messages; images
// and thinking signatures are kept; isMeta text and command markup are
// notes.
func TestClaudeBlocks(t *testing.T) {
	img := map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBO"}}
	data := jsonl(
		resultRec("r0", "", "elsewhere", "orphan", false),
		rec("user", "u1", "r0", map[string]any{"message": map[string]any{"role": "user", "content": []any{textBlock("look"), img}}}),
		asstRec("a1", "u1", "A", 1, map[string]any{"type": "thinking", "thinking": "hmm", "signature": "sig=="}, map[string]any{"type": "redacted_thinking", "data": "opaque"}, textBlock("a cat"), map[string]any{"type": "server_tool_use", "id": "srv", "name": "web_search"}),
		rec("user", "m1", "a1", map[string]any{"isMeta": true, "message": map[string]any{"role": "user", "content": "injected"}}),
		userRec("m2", "m1", "<command-name>/clear</command-name>"),
	)
	imp := importOne(t, KindClaude, data, Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{
		"tool:elsewhere=orphan", "user:look|[image]", "assistant:[thinking]|[redacted_thinking]|a cat|[server_tool_use]",
		"user/note:injected", "user/note:<command-name>/clear</command-name>",
	})
	th := imp.Share.Messages[2].Content.Blocks[0]
	if th.Text != "hmm" || !th.HasSignature || th.Signature != "sig==" {
		t.Errorf("thinking block %+v", th)
	}
	if raw := imp.Share.Messages[2].Content.Blocks[3].Raw; !gjson.ValidBytes(raw) || gjson.GetBytes(raw, "name").Str != "web_search" {
		t.Errorf("unknown block not kept whole: %s", raw)
	}
}

func TestClaudeErrors(t *testing.T) {
	cases := map[string][]byte{
		"only progress":  jsonl(progressRec("p1", ""), progressRec("p2", "p1")),
		"only snapshots": jsonl(rec("file-history-snapshot", "", "", nil), `{"silly":"this"}`, `42`),
		"not json":       []byte("hello\nworld\n"),
		"only malformed": jsonl(rec("user", "u1", "", map[string]any{"message": "error"})),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Import(KindClaude, data, Options{})
			if err == nil || !isInvalid(err) || err.Error() != "no user or assistant messages" {
				t.Fatalf("err = %v, want an InvalidError \"no user or assistant messages\"", err)
			}
		})
	}
}

// The fixtures' own figures, checked against the fixtures README.
func TestClaudeFixtureFacts(t *testing.T) {
	dir := filepath.Join(fixturesDir(t), "claude-code")
	t.Run("short", func(t *testing.T) {
		imp := importOne(t, KindClaude, readFile(t, filepath.Join(dir, "short.jsonl")), Options{})
		a := imp.Share.Messages[1]
		var types []string
		for _, b := range a.Content.Blocks {
			types = append(types, b.Type)
		}
		// five lines of one message.id, in file order
		equal(t, "blocks", types, []string{"text", "thinking", "text", "tooluse", "tooluse"})
		if !a.Content.Blocks[1].HasSignature || a.Content.Blocks[1].Signature == "" {
			t.Error("thinking signature lost")
		}
		for _, m := range imp.Share.Messages[2:4] {
			if m.Role != session.RoleTool || !m.IsError || m.Name == "" {
				t.Errorf("rejected call not an error tool message: %+v", m)
			}
		}
		equal(t, "first created_at", imp.Share.Messages[0].CreatedAt, "2026-02-10T21:11:56.846Z")
	})
	t.Run("tool-heavy", func(t *testing.T) {
		imp := importOne(t, KindClaude, readFile(t, filepath.Join(dir, "tool-heavy.jsonl")), Options{})
		calls, results := 0, 0
		for _, m := range imp.Share.Messages {
			for _, b := range m.Content.Blocks {
				if b.Type == session.BlockToolUse {
					calls++
				}
			}
			if m.Role == session.RoleTool {
				results++
			}
		}
		// The parallel Glob call and its result lie off the chain from
		// the leaf in the file; they are on the active path here.
		equal(t, "calls/results", []int{calls, results}, []int{6, 6})
		equal(t, "output tokens", imp.Share.Meta.Usage.OutputTokens, uint64(27+1+11+173))
	})
	t.Run("explore-subagent", func(t *testing.T) {
		imp := importOne(t, KindClaude, readFile(t, filepath.Join(dir, "explore-subagent.jsonl")), Options{})
		errs := 0
		for _, m := range imp.Share.Messages {
			if m.IsError {
				errs++
			}
		}
		equal(t, "errors", errs, 8)
		equal(t, "ids", []string{imp.SourceID, imp.Parent}, []string{"a2898e3", "4d5611e5-241a-462a-8d15-5122611a9569"})
	})
}

func at(ts string, line string) string {
	v, _ := sjsonSet(line, "timestamp", ts)
	return v
}

// sjsonSet sets one top-level string member of a JSON object line.
func sjsonSet(line, key, val string) (string, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		return "", err
	}
	m[key] = val
	b, err := json.Marshal(m)
	return string(b), err
}

func attachRec(uuid, parent string, a map[string]any) string {
	return rec("attachment", uuid, parent, map[string]any{"attachment": a})
}

// Attachments that are a message the user sent (a prompt queued while the
// agent was busy) or content the model saw (an @-mentioned file) are
// imported where they stand; hook responses and reminders are counted.
func TestClaudeAttachments(t *testing.T) {
	data := jsonl(
		userRec("u1", "", "read @a.txt"),
		attachRec("f1", "u1", map[string]any{"type": "file", "filename": "/p/a.txt", "displayPath": "a.txt",
			"content": map[string]any{"type": "text", "file": map[string]any{"filePath": "/p/a.txt", "content": "payload one\n", "numLines": 1}}}),
		asstRec("a1", "f1", "A1", 5, useBlock("t1", "Bash")),
		resultRec("r1", "a1", "t1", "ok", false),
		attachRec("q1", "r1", map[string]any{"type": "queued_command", "prompt": "also add tests", "commandMode": "prompt", "origin": map[string]any{"kind": "human"}}),
		attachRec("q2", "q1", map[string]any{"type": "queued_command", "prompt": "<task-notification><task-id>b3</task-id></task-notification>", "commandMode": "task-notification"}),
		attachRec("h1", "q2", map[string]any{"type": "async_hook_response", "hookEvent": "Stop", "stdout": ""}),
		asstRec("a2", "h1", "A2", 5, textBlock("done")),
	)
	imp := importOne(t, KindClaude, data, Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{
		"user:read @a.txt", "user/note:payload one\n", "assistant:call t1", "tool:t1=ok",
		"user:also add tests", "user/note:<task-notification><task-id>b3</task-id></task-notification>", "assistant:done",
	})
	equal(t, "skipped", imp.Skipped, map[string]int{"attachment:async_hook_response": 1})
	kept := gjson.GetBytes(fieldValue(imp.Share.Messages[1].Extra, "claude"), "attachment")
	if kept.Get("filename").Str != "/p/a.txt" || kept.Get("content").Exists() {
		t.Errorf("the file attachment's members: %s", kept.Raw)
	}
}

// What the system wrote in the user's role never titles a session, and
// the prompts before a compaction (on a branch) still do.
func TestClaudeTitleFromFirstRealPrompt(t *testing.T) {
	t.Run("task notification", func(t *testing.T) {
		data := jsonl(
			userRec("n1", "", "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>"),
			rec("user", "n2", "n1", map[string]any{"origin": map[string]any{"kind": "task-notification"}, "message": map[string]any{"role": "user", "content": "Background task finished"}}),
			userRec("u1", "n2", "fix the flaky login test"),
			asstRec("a1", "u1", "A1", 5, textBlock("fixed")),
		)
		imp := importOne(t, KindClaude, data, Options{})
		meta, _ := session.FromShare(&imp.Share, testID(0), t0)
		equal(t, "kinds", texts(imp.Share.Messages)[:2], []string{
			"user/note:<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>",
			"user/note:Background task finished"})
		equal(t, "title", meta.Title, "fix the flaky login test")
	})
	t.Run("after a compaction", func(t *testing.T) {
		data := jsonl(
			at("2026-01-01T10:00:00.000Z", userRec("u1", "", "port the parser to go")),
			at("2026-01-01T10:00:01.000Z", asstRec("a1", "u1", "A1", 5, textBlock("ported"))),
			at("2026-01-01T11:00:00.000Z", rec("system", "cb", "", map[string]any{"subtype": "compact_boundary", "logicalParentUuid": "a1"})),
			at("2026-01-01T11:00:00.000Z", rec("user", "cs", "cb", map[string]any{"isCompactSummary": true, "message": map[string]any{"role": "user", "content": "This session is being continued from a previous conversation that ran out of context."}})),
			at("2026-01-01T11:00:01.000Z", userRec("u2", "cs", "<command-name>/cost</command-name>")),
			at("2026-01-01T11:00:02.000Z", userRec("u3", "u2", "now add benchmarks")),
		)
		imp := importOne(t, KindClaude, data, Options{})
		meta, _ := session.FromShare(&imp.Share, testID(0), t0)
		equal(t, "title", meta.Title, "port the parser to go")
	})
}
