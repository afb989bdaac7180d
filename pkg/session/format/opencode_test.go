package format

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

type ocMsg struct {
	Info  map[string]any   `json:"info"`
	Parts []map[string]any `json:"parts"`
}

func ocExport(t *testing.T, info map[string]any, msgs ...ocMsg) []byte {
	t.Helper()
	b, err := json.MarshalIndent(map[string]any{"info": info, "messages": msgs}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var ocInfo = map[string]any{
	"id": "ses_1", "directory": "/repo", "title": "Fix the thing", "version": "1.2.5",
	"time": map[string]any{"created": 1771214900000, "updated": 1771214990000},
}

func ocUser(id string, created int64, parts ...map[string]any) ocMsg {
	return ocMsg{Info: map[string]any{"id": id, "sessionID": "ses_1", "role": "user", "time": map[string]any{"created": created}}, Parts: parts}
}

func ocAsst(id, parent string, created int64, tokens map[string]any, parts ...map[string]any) ocMsg {
	info := map[string]any{"id": id, "sessionID": "ses_1", "role": "assistant", "parentID": parent, "time": map[string]any{"created": created, "completed": created + 1000}, "modelID": "m"}
	if tokens != nil {
		info["tokens"] = tokens
	}
	return ocMsg{Info: info, Parts: parts}
}

func ocText(s string) map[string]any { return map[string]any{"type": "text", "text": s, "id": "prt_t"} }

func ocTool(id, status, out string) map[string]any {
	state := map[string]any{"status": status, "input": map[string]any{"filePath": "a.go"}, "time": map[string]any{"start": 1771214901000, "end": 1771214902000}}
	if status == "error" {
		state["error"] = out
	} else if status == "completed" {
		state["output"] = out
		state["metadata"] = map[string]any{"preview": "x"}
	}
	return map[string]any{"type": "tool", "callID": id, "tool": "read", "state": state, "id": "prt_" + id}
}

func ocTokens(in, out, read int) map[string]any {
	return map[string]any{"total": in + out + read, "input": in, "output": out, "reasoning": 0, "cache": map[string]any{"read": read, "write": 0}}
}

func TestOpencodeMapping(t *testing.T) {
	data := ocExport(t, ocInfo,
		ocUser("msg_1", 1771214900100, ocText("read a.go"),
			map[string]any{"type": "file", "mime": "text/plain", "filename": "a.go", "url": "file:///repo/a.go"},
			map[string]any{"type": "text", "text": "Called the Read tool", "synthetic": true},
			map[string]any{"type": "file", "mime": "image/png", "filename": "s.png", "url": "data:image/png;base64,iVBO"}),
		ocAsst("msg_2", "msg_1", 1771214900200, map[string]any{"input": 0, "output": 0, "cache": map[string]any{"read": 0, "write": 0}}), // aborted, no parts
		ocAsst("msg_3", "msg_1", 1771214900300, ocTokens(100, 20, 50),
			map[string]any{"type": "step-start", "snapshot": "abc"},
			map[string]any{"type": "reasoning", "text": "", "metadata": map[string]any{"openai": map[string]any{"reasoningEncryptedContent": "ENC"}}},
			ocTool("c1", "completed", "package a"),
			ocTool("c2", "error", "no such file"),
			ocTool("c3", "running", ""),
			map[string]any{"type": "step-finish", "tokens": ocTokens(100, 20, 50)},
			map[string]any{"type": "mystery"}),
		ocAsst("msg_4", "msg_1", 1771214900400, nil, ocText("done"),
			map[string]any{"type": "step-finish", "tokens": ocTokens(7, 3, 0)}),
	)
	imp := importOne(t, KindOpencode, data, Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{
		"user:read a.go|Called the Read tool|[image]", "assistant:[thinking]|call c1|call c2|call c3",
		"tool:c1=package a", "tool:c2=no such file!", "assistant:done",
	})
	meta := imp.Share.Meta
	equal(t, "title", []any{meta.Title, meta.TitleSource}, []any{"Fix the thing", session.TitleManual})
	equal(t, "project", meta.ProjectPath, "/repo")
	equal(t, "times", []string{meta.CreatedAt, meta.UpdatedAt}, []string{"2026-02-16T04:08:20.000Z", "2026-02-16T04:09:50.000Z"})
	equal(t, "usage", []uint64{meta.Usage.InputTokens, meta.Usage.OutputTokens, *meta.Usage.CacheReadInputTokens}, []uint64{107, 23, 50})
	equal(t, "skipped", imp.Skipped, map[string]int{"message:empty": 1, "part:mystery": 1})
	u := imp.Share.Messages[0]
	if fieldValue(u.Content.Blocks[1].Extra, "synthetic") == nil {
		t.Error("synthetic flag lost")
	}
	if got := gjson.GetBytes(fieldValue(u.Extra, "opencode"), "parts.0.filename").Str; got != "a.go" {
		t.Errorf("file mention not kept: %s", fieldValue(u.Extra, "opencode"))
	}
	a := imp.Share.Messages[1]
	if got := gjson.GetBytes(fieldValue(a.Content.Blocks[0].Extra, "metadata"), "openai.reasoningEncryptedContent").Str; got != "ENC" {
		t.Error("encrypted reasoning lost")
	}
	if got := gjson.GetBytes(fieldValue(a.Extra, "opencode"), "parts.#.type").Raw; got != `["step-start","step-finish","mystery"]` {
		t.Errorf("bookkeeping parts %s", got)
	}
	tm := imp.Share.Messages[2]
	equal(t, "tool", []string{tm.Name, tm.CreatedAt}, []string{"read", "2026-02-16T04:08:22.000Z"})
	if gjson.GetBytes(fieldValue(tm.Extra, "opencode"), "metadata.preview").Str != "x" {
		t.Error("tool metadata lost")
	}
}

// An aborted step (an error and no parts) is counted, not imported.
func TestOpencodeAborted(t *testing.T) {
	aborted := ocAsst("msg_2", "msg_1", 1771214900200, nil)
	aborted.Info["error"] = map[string]any{"name": "MessageAbortedError"}
	data := ocExport(t, ocInfo, ocUser("msg_1", 1771214900100, ocText("go")), aborted, ocUser("msg_3", 1771214900300, ocText("go")))
	imp := importOne(t, KindOpencode, data, Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{"user:go", "user:go"})
	equal(t, "skipped", imp.Skipped, map[string]int{"message:aborted": 1})
}

// A compaction summary starts a new path; a pending revert keeps the
// undone messages as a branch only.
func TestOpencodeCompactionAndRevert(t *testing.T) {
	summary := ocAsst("msg_4", "msg_3", 1771214900400, nil, ocText("SUMMARY"))
	summary.Info["summary"] = true
	msgs := []ocMsg{
		ocUser("msg_1", 1771214900100, ocText("one")),
		ocAsst("msg_2", "msg_1", 1771214900200, nil, ocText("first")),
		ocUser("msg_3", 1771214900300, map[string]any{"type": "compaction", "auto": true}),
		summary,
		ocUser("msg_5", 1771214900500, ocText("two")),
		ocAsst("msg_6", "msg_5", 1771214900600, nil, ocText("second")),
	}
	imp := importOne(t, KindOpencode, ocExport(t, ocInfo, msgs...), Options{})
	equal(t, "path", texts(imp.Share.Messages), []string{"user/summary:SUMMARY", "user:two", "assistant:second"})
	equal(t, "branches", branchTexts(&imp.Share), [][]string{{"user:one", "assistant:first"}})
	equal(t, "skipped", imp.Skipped, map[string]int{})

	info := map[string]any{"id": "ses_1", "title": "New session - 2026", "revert": map[string]any{"messageID": "msg_5"}}
	imp = importOne(t, KindOpencode, ocExport(t, info, msgs...), Options{})
	equal(t, "reverted path", texts(imp.Share.Messages), []string{"user/summary:SUMMARY"})
	equal(t, "reverted branches", branchTexts(&imp.Share), [][]string{
		{"user:one", "assistant:first"}, {"user/summary:SUMMARY", "user:two", "assistant:second"},
	})
	equal(t, "default title is no title", imp.Share.Meta.Title, "")
}

func TestOpencodeFixtureFacts(t *testing.T) {
	dir := filepath.Join(fixturesDir(t), "opencode")
	imp := importOne(t, KindOpencode, readFile(t, filepath.Join(dir, "export-medium.json")), Options{})
	calls, synthetic := map[string]int{}, 0
	for _, m := range imp.Share.Messages {
		for _, b := range m.Content.Blocks {
			if b.Type == session.BlockToolUse {
				calls[b.Name]++
			}
			if fieldValue(b.Extra, "synthetic") != nil {
				synthetic++
			}
		}
	}
	equal(t, "calls", calls, map[string]int{"read": 12, "glob": 1, "apply_patch": 2})
	equal(t, "synthetic parts", synthetic, 8+8+2) // the first prompt, the same prompt re-sent after the abort, the third
	equal(t, "skipped", imp.Skipped, map[string]int{"message:aborted": 1})
	// The third prompt was typed while the previous step ran: position
	// order, not time order.
	var users []string
	for _, m := range imp.Share.Messages {
		if m.Role == session.RoleUser {
			users = append(users, m.CreatedAt)
		}
	}
	equal(t, "user times", users, []string{"2026-02-16T04:03:06.661Z", "2026-02-16T04:03:23.634Z", "2026-02-16T04:03:42.389Z"})
}
