package reliability

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Content built to break out of whatever embeds it: JSON string escapes and
// control characters, HTML, Unicode separators, and backtick runs longer
// than any fence a renderer might pick by default.
var hostile = []string{
	"He said \"hi\" \\ back\\slash\ttab\r\ncr-lf \x00 nul \x07 bell \x1b[31m escape \u2028 line \u2029 para",
	"</script><script>alert(1)</script> <!-- & &amp; ]]> \u202e reversed 😀",
	"```\nrm -rf /\n```\n````\nstill inside?\n````",
	"`starts and ends with a backtick`",
	"```go\nfunc main() {}\n```\n\n# not a heading\n---\n| not | a table |",
	// Unbalanced: only ever inside a fence here. As raw message text it
	// would open a fence; the export closes it (cmd/wc-export/testdata/markdown-open-fence.txtar).
	"``````````\nten backticks above\n~~~\ntildes too\n   ```   \nindented fence",
}

// balanced reports whether text, rendered as raw markdown, closes every
// fence it opens.
func balanced(text string) bool {
	_, err := markdownFences(text + "\n")
	return err == nil
}

// controlPictures is how the markdown export shows C0 control characters
// inside fences: as the Unicode control pictures, so that no escape
// sequence reaches a terminal.
func controlPictures(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20:
			return 0x2400 + r
		case r == 0x7f:
			return 0x2421
		}
		return r
	}, s)
}

// TestExportEscaping: every export format embeds hostile content so that it
// comes back out exactly: share JSON and JSONL decode to the same strings,
// info is valid JSON, and in markdown every fenced block — tool output,
// tool calls, thinking — closes where it should and holds its text byte for
// byte (control characters shown as control pictures), and the title stays
// on its heading line.
func TestExportEscaping(t *testing.T) {
	r := newRunner(t, filepath.Join(t.TempDir(), "store"))
	project := filepath.Join(t.TempDir(), "we`ird ``dir")
	title := "``Title`` with \"quotes\"\n# injected heading\n```"
	id := idOf(r.must(nil, "wc-new", "--title", title, "--project", project))

	var msgs []map[string]any
	for i, h := range hostile {
		call := fmt.Sprintf("call_%d", i)
		text := h
		if !balanced(h) {
			text = "unbalanced text elided"
		}
		msgs = append(msgs,
			map[string]any{"role": "user", "content": text},
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": text},
				map[string]any{"type": "thinking", "text": h, "signature": "sig"},
				map[string]any{"type": "tooluse", "id": call, "name": "run", "input": map[string]any{"cmd": h}},
			}},
			map[string]any{"role": "tool", "tool_call_id": call, "content": h},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "toolresult", "tool_use_id": call, "content": h, "is_error": true},
			}},
		)
	}
	var in strings.Builder
	for _, m := range msgs {
		b, _ := json.Marshal(m)
		in.Write(b)
		in.WriteByte('\n')
	}
	r.must([]byte(in.String()), "wc-append", id)

	// Share JSON: valid, and every message's content decodes to what went in.
	share := r.must(nil, "wc-export", id, "--format", "json")
	if !json.Valid([]byte(share)) || strings.Count(strings.TrimSpace(share), "\n") != 0 {
		t.Fatalf("the share is not one valid JSON line: %.300q", share)
	}
	got := gjson.Get(share, "messages").Array()
	if len(got) != len(msgs) {
		t.Fatalf("the share has %d messages, want %d", len(got), len(msgs))
	}
	for i, m := range msgs {
		if err := sameJSONContent(m["content"], got[i].Get("content").Raw); err != nil {
			t.Errorf("share message %d: %v", i, err)
		}
	}
	if gjson.Get(share, "title").Str == "" || gjson.Get(share, "project_path").Str != project {
		t.Errorf("share title %q, project %q", gjson.Get(share, "title").Str, gjson.Get(share, "project_path").Str)
	}

	// JSONL: one valid line per message, same contents.
	jsonl := r.must(nil, "wc-export", id, "--format", "jsonl")
	lines, err := jsonLines(jsonl)
	if err != nil || len(lines) != len(msgs) {
		t.Fatalf("jsonl: %d lines (%v)", len(lines), err)
	}
	for i, m := range msgs {
		if err := sameJSONContent(m["content"], lines[i].Get("message.content").Raw); err != nil {
			t.Errorf("jsonl line %d: %v", i, err)
		}
	}

	// Info: one valid JSON line carrying the title.
	info := r.must(nil, "wc-export", id, "--format", "info")
	if !json.Valid([]byte(info)) || strings.Count(strings.TrimSpace(info), "\n") != 0 {
		t.Fatalf("info is not one valid JSON line: %q", info)
	}
	storedTitle := gjson.Get(info, "title").Str

	// Markdown.
	md := r.must(nil, "wc-export", id, "--format", "markdown")
	fences, err := markdownFences(md)
	if err != nil {
		t.Fatalf("markdown: %v\n%s", err, md)
	}
	for i, h := range hostile {
		shown := controlPictures(h)
		for _, want := range []struct{ info, body string }{
			{"thinking", shown},
			{"result", shown},
			{"error", shown},
		} {
			if !containsFence(fences, want.info, want.body) {
				t.Errorf("hostile text %d: no %q fence holds it exactly", i, want.info)
			}
		}
		if !containsFenceWhere(fences, "tool", func(body string) bool {
			name, js, _ := strings.Cut(body, "\n")
			var input map[string]string
			return name == "run" && json.Unmarshal([]byte(js), &input) == nil && input["cmd"] == h
		}) {
			t.Errorf("hostile text %d: no tool fence holds the call exactly", i)
		}
	}
	head := strings.SplitN(md, "\n", 3)
	if len(head) < 3 || !strings.HasPrefix(head[0], "# ") || head[1] != "" {
		t.Errorf("the title does not stay on its heading line: %q", head)
	}
	if strings.Contains(storedTitle, "\n") {
		t.Errorf("the stored title keeps a newline: %q", storedTitle)
	}
	// The heading shows the title as text: its markup is escaped, and
	// what CommonMark reads of it (backslash escapes undone) is the title.
	if heading := backslashUnescaped(strings.TrimPrefix(head[0], "# ")); heading != storedTitle {
		t.Errorf("the heading reads %q, not the title %q", heading, storedTitle)
	}
	if !strings.Contains(md, project) {
		t.Errorf("the markdown does not show the project path %q", project)
	}
	if m := regexp.MustCompile("(?m)^- \\*\\*Project:\\*\\* (`+) ?(.*?) ?(`+)$").FindStringSubmatch(md); m == nil || m[2] != project || m[1] != m[3] {
		t.Errorf("the project path is not one code span holding it: %v", m)
	}
}

// backslashUnescaped is s as CommonMark reads its backslash escapes: a
// backslash before ASCII punctuation stands for it.
func backslashUnescaped(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", s[i+1]) >= 0 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// TestExportEscapingHTML: the standalone HTML page shows markup in titles,
// messages and tool output as text, never as elements.
func TestExportEscapingHTML(t *testing.T) {
	r := newRunner(t, filepath.Join(t.TempDir(), "store"))
	id := idOf(r.must(nil, "wc-new", "--title", "</title><script>title()</script>"))
	in := strings.Join([]string{
		msgJSON(map[string]any{"role": "user", "content": "</script><script>alert(1)</script> <img src=x onerror=alert(2)> <!-- c --> ]]>"}),
		msgJSON(map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": "<iframe src=javascript:alert(3)></iframe>"},
			map[string]any{"type": "tooluse", "id": "c1", "name": "<b>run</b>", "input": map[string]any{"cmd": "</pre><svg onload=alert(4)>"}},
		}}),
		msgJSON(map[string]any{"role": "tool", "tool_call_id": "c1", "content": "</pre></code><style>body{display:none}</style>"}),
	}, "\n") + "\n"
	r.must([]byte(in), "wc-append", id)
	page := r.must(nil, "wc-export", id, "--format", "html")
	for _, raw := range []string{
		"<script>title()", "<script>alert(1)", "<img src=x", "<iframe", "<b>run</b>", "<svg", "<style>body{display:none}",
	} {
		if strings.Contains(page, raw) {
			t.Errorf("the page embeds %q as markup", raw)
		}
	}
	for _, shown := range []string{"alert(1)", "onerror=alert(2)", "javascript:alert(3)", "onload=alert(4)", "display:none"} {
		if !strings.Contains(page, shown) {
			t.Errorf("the page does not show the text %q", shown)
		}
	}
}

// sameJSONContent compares a message content as sent with its raw JSON as
// exported, as decoded values.
func sameJSONContent(sent any, raw string) error {
	var want, got any
	b, _ := json.Marshal(sent)
	_ = json.Unmarshal(b, &want)
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		return fmt.Errorf("%v in %.200q", err, raw)
	}
	// Blocks come back with what wc adds (a tool message's name); compare
	// the members that were sent.
	if wl, ok := want.([]any); ok {
		gl, ok := got.([]any)
		if !ok || len(gl) != len(wl) {
			return fmt.Errorf("got %.300s", raw)
		}
		for i := range wl {
			wm, gm := wl[i].(map[string]any), gl[i].(map[string]any)
			for k, v := range wm {
				if k == "content" && wm["type"] == "toolresult" {
					if s, ok := gm[k].(string); ok && s == v {
						continue
					}
				}
				if !reflect.DeepEqual(gm[k], v) {
					return fmt.Errorf("block %d member %s: got %#v, want %#v", i, k, gm[k], v)
				}
			}
		}
		return nil
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Errorf("got %#v, want %#v", got, want)
	}
	return nil
}

type fence struct{ info, body string }

var fenceOpen = regexp.MustCompile("^ {0,3}(`{3,})([^`]*)$")

// markdownFences finds the fenced code blocks as CommonMark does: a line of
// three or more backticks opens one, and only a line of at least as many
// backticks (and nothing else but spaces) closes it.
func markdownFences(md string) ([]fence, error) {
	lines := strings.Split(md, "\n")
	var out []fence
	for i := 0; i < len(lines); i++ {
		m := fenceOpen.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		closing := regexp.MustCompile(fmt.Sprintf("^ {0,3}`{%d,}[ \t]*$", len(m[1])))
		j := i + 1
		for j < len(lines) && !closing.MatchString(lines[j]) {
			j++
		}
		if j == len(lines) {
			return nil, fmt.Errorf("the fence opened on line %d never closes", i+1)
		}
		out = append(out, fence{info: strings.TrimSpace(m[2]), body: strings.Join(lines[i+1:j], "\n")})
		i = j
	}
	return out, nil
}

func containsFence(fences []fence, info, body string) bool {
	return containsFenceWhere(fences, info, func(b string) bool { return b == body })
}

func containsFenceWhere(fences []fence, info string, ok func(string) bool) bool {
	for _, f := range fences {
		if f.info == info && ok(f.body) {
			return true
		}
	}
	return false
}
