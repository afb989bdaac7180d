package format

import (
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// Claude Code's stream-json: the run's cost and usage come from its result
// line (the assistant lines carry streaming snapshots), and no message is
// given a time the stream does not have.
func TestClaudeStreamJSON(t *testing.T) {
	imp := importOne(t, KindAuto, readFile(t, filepath.Join(fixturesDir(t), "claude-stream", "tool-call.ndjson")), Options{})
	equal(t, "format", imp.Format, KindClaude)
	equal(t, "source", imp.SourceID, "40e7b02d-c0f9-4876-9010-f514d4eb0603")
	equal(t, "cost", imp.Share.Meta.Cost.USD, 0.24722425)
	equal(t, "usage", usageOf(imp.Share.Meta.Usage), [4]uint64{18, 424, 25067, 17254})
	equal(t, "project", imp.Share.Meta.ProjectPath, "/home/cyou/claude-agent-sdk-gleam")
	for _, m := range imp.Share.Messages {
		if m.CreatedAt != "" {
			t.Errorf("a time the stream does not have: %s", m.AppendJSON(nil))
		}
	}
	equal(t, "path", texts(imp.Share.Messages)[1][:len("tool:toolu_01BeipFBP3sUY3EAwVg3qQnE=")], "tool:toolu_01BeipFBP3sUY3EAwVg3qQnE=")
}

// cursor-agent's stream-json: the echoed prompt, the thinking streamed
// before the reply, calls and their results in call order, and the times
// the lines carry.
func TestCursorStreamJSON(t *testing.T) {
	imp := importOne(t, KindAuto, readFile(t, filepath.Join(fixturesDir(t), "cursor", "stream-json.jsonl")), Options{})
	equal(t, "format", imp.Format, KindCursor)
	msgs := imp.Share.Messages
	if !msgs[0].IsUserTurn() {
		t.Fatalf("the prompt is not a user turn: %s", msgs[0].AppendJSON(nil))
	}
	equal(t, "reply", outline(&msgs[1]), "2026-02-11T15:24:09.274Z assistant thinking text tooluse:lsToolCall tooluse:shellToolCall")
	equal(t, "thinking", msgs[1].Content.Blocks[0].Text, "The user wants a directory listing.")
	equal(t, "results in call order", []string{msgs[2].ToolCallID, msgs[3].ToolCallID}, []string{"call_ls1", "call_sh1"})
	equal(t, "shell output", msgs[3].Content.Text, "3\n")
	meta, _ := session.FromShare(&imp.Share, testID(0), t0)
	equal(t, "title", meta.Title, "list the files here and say how many")
}

// A reply recorded with the model's parts (PartListUnion, as Gemini CLI
// 2026 recordings write it): its thought parts are its thinking, and the
// CLI's thoughts summaries stay on the message; a functionCall part of a
// call toolCalls records is that call; a call whose result holds the
// whole batch's responses gets its own. Gemini CLI's retry prompt is a note.
func TestGeminiReplyParts(t *testing.T) {
	resp := func(id, out string) string {
		return `{"functionResponse":{"id":"` + id + `","name":"f","response":{"output":"` + out + `"}}}`
	}
	batch := "[" + resp("c1", "one") + "," + resp("c2", "two") + "]"
	data := []byte(`{"sessionId":"g2","projectHash":"h","startTime":"2026-06-12T04:14:14.031Z","lastUpdated":"2026-06-12T04:18:00.000Z","kind":"main","messages":[
	 {"id":"u1","timestamp":"2026-06-12T04:16:58.419Z","type":"user","content":[{"text":"explain the error"}]},
	 {"id":"a1","timestamp":"2026-06-12T04:17:09.308Z","type":"gemini","content":[
	   {"text":"**Analyzing** the traceback","thought":true},
	   {"functionCall":{"id":"c1","name":"f","args":{"x":1}},"thoughtSignature":"sig1"},
	   {"functionCall":{"id":"c2","name":"f","args":{"x":2}}}],
	  "thoughts":[{"subject":"Analyzing","description":"the traceback","timestamp":"2026-06-12T04:17:07.158Z"}],
	  "tokens":{"input":100,"output":10,"cached":40,"thoughts":5,"tool":0,"total":115},"model":"gemini-3-flash-preview",
	  "toolCalls":[
	   {"id":"c1","name":"f","args":{"x":1},"result":` + batch + `,"status":"success","timestamp":"2026-06-12T04:17:54.266Z"},
	   {"id":"c2","name":"f","args":{"x":2},"result":` + batch + `,"status":"success","timestamp":"2026-06-12T04:17:54.266Z"}]},
	 {"id":"u2","timestamp":"2026-06-12T04:17:55.000Z","type":"user","content":[{"text":"System: Please continue."}]},
	 {"id":"a2","timestamp":"2026-06-12T04:17:59.000Z","type":"gemini","content":"Flask is missing."}]}`)
	imp := importOne(t, KindAuto, data, Options{})
	msgs := imp.Share.Messages
	equal(t, "path", texts(msgs), []string{"user:explain the error", "assistant:[thinking]|call c1|call c2", "tool:c1=one", "tool:c2=two", "user/note:System: Please continue.", "assistant:Flask is missing."})
	equal(t, "reply", outline(&msgs[1]), "2026-06-12T04:17:09.308Z assistant thinking tooluse:f tooluse:f")
	equal(t, "thinking", msgs[1].Content.Blocks[0].Text, "**Analyzing** the traceback")
	if g := gjson.GetBytes(fieldValue(msgs[1].Extra, "gemini"), "thoughts.0.subject"); g.Str != "Analyzing" {
		t.Errorf("the thoughts summaries are not kept: %s", fieldValue(msgs[1].Extra, "gemini"))
	}
	if p := gjson.GetBytes(fieldValue(msgs[1].Content.Blocks[1].Extra, "part"), "thoughtSignature"); p.Str != "sig1" {
		t.Errorf("the call's part members are not kept: %s", msgs[1].Content.Blocks[1].AppendJSON(nil))
	}
}

// A Gemini CLI JSONL recording: a message written again under its id
// replaces the first where it stood, $set updates the metadata, and
// $rewindTo keeps the undone messages as a branch.
func TestGeminiJSONL(t *testing.T) {
	data := jsonl(
		`{"sessionId":"g1","projectHash":"h","startTime":"2026-04-23T12:00:00.000Z","lastUpdated":"2026-04-23T12:00:00.000Z","kind":"main"}`,
		`{"id":"u1","timestamp":"2026-04-23T12:00:01.000Z","type":"user","content":[{"text":"list the files"}]}`,
		`{"id":"a1","timestamp":"2026-04-23T12:00:02.000Z","type":"gemini","content":"","tokens":{"input":100,"output":5,"cached":40,"thoughts":3,"tool":0,"total":108}}`,
		`{"id":"a1","timestamp":"2026-04-23T12:00:02.000Z","type":"gemini","content":"","tokens":{"input":100,"output":5,"cached":40,"thoughts":3,"tool":0,"total":108},"toolCalls":[{"id":"c1","name":"ls","args":{"dir":"."},"result":[{"functionResponse":{"id":"c1","name":"ls","response":{"output":"a.go"}}}],"status":"success","timestamp":"2026-04-23T12:00:03.000Z"}]}`,
		`{"$set":{"lastUpdated":"2026-04-23T12:00:03.000Z","summary":"Listing files"}}`,
		`{"id":"u2","timestamp":"2026-04-23T12:00:04.000Z","type":"user","content":"now delete them"}`,
		`{"$rewindTo":"u2"}`,
		`{"id":"u3","timestamp":"2026-04-23T12:00:05.000Z","type":"user","content":"now count them"}`,
	)
	imp := importOne(t, KindAuto, data, Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{"user:list the files", "assistant:call c1", "tool:c1=a.go", "user:now count them"})
	equal(t, "branches", branchTexts(&imp.Share), [][]string{{"user:list the files", "assistant:call c1", "tool:c1=a.go", "user:now delete them"}})
	equal(t, "title", imp.Share.Meta.Title, "Listing files")
	equal(t, "usage", usageOf(imp.Share.Meta.Usage), [4]uint64{60, 8, 0, 40})
	equal(t, "updated", imp.Share.Meta.UpdatedAt, "2026-04-23T12:00:05.000Z")
}
