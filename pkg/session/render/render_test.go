package render_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/render"
)

func renderMarkdown(t testing.TB, m *session.Meta, tree *session.Tree) string {
	t.Helper()
	var buf bytes.Buffer
	mw := render.NewMarkdownWriter(&buf)
	if err := mw.Header(m); err != nil {
		t.Fatal(err)
	}
	for _, n := range tree.Path(m.Head) {
		if err := mw.Message(&n.Msg); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

// everyBlockSession covers every content kind of reference §2.7's table,
// plus our own additions (tool-role text, an unknown block).
func everyBlockSession(t testing.TB) (session.Meta, *session.Tree) {
	t.Helper()
	lines := []string{
		`{"role":"system","content":"You are terse."}`,
		`{"role":"user","content":"Why does **login** fail?"}`,
		`{"role":"user","content":[{"type":"text","text":"Here is a screenshot:"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}`,
		`{"role":"assistant","content":[{"type":"thinking","text":"Check the handler first.","signature":"EqQB"},{"type":"redacted_thinking","data":"EmwK"},{"type":"text","text":"Let me look."},{"type":"tooluse","id":"t1","name":"read","input":{"path":"auth/login.go","range":[1,40]}}]}`,
		`{"role":"tool","content":"package auth\n\nfunc Login() error { return nil }","tool_call_id":"t1"}`,
		`{"role":"assistant","content":[{"type":"tooluse","id":"t2","name":"bash","input":{"cmd":"go test ./..."}}]}`,
		`{"role":"tool","content":"FAIL auth 0.01s","tool_call_id":"t2","is_error":true}`,
		`{"role":"assistant","content":[{"type":"tool_use","id":"t3","name":"grep","input":{}},{"type":"tool_use","id":"t4","name":"ls","input":{}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t3","content":"no matches","is_error":true},{"type":"tool_result","tool_use_id":"t4","content":[{"type":"text","text":"a.go"},{"type":"text","text":"b.go"}]}]}`,
		`{"role":"assistant","content":[{"type":"compaction","encrypted_content":"gAAAA"},{"type":"text","text":"Fixed: the ` + "`" + `token` + "`" + ` was never set."}]}`,
	}
	var msgs []session.Message
	for _, l := range lines {
		msgs = append(msgs, decode(t, l))
	}
	m, tree := buildSession(t, "/home/u/my project", "You are terse.", msgs...)
	m.SetTitleManual("Login   bug\ninvestigation")
	return m, tree
}

func TestMarkdownGolden(t *testing.T) {
	m, tree := everyBlockSession(t)
	golden(t, "every-block.md", []byte(renderMarkdown(t, &m, tree)))
}

// The rendering table of reference §2.7, one block at a time.
func TestMarkdownBlocks(t *testing.T) {
	cases := []struct{ name, msg, want string }{
		{"text content", `{"role":"user","content":"hi *there*"}`, "### User\n\nhi *there*\n\n"},
		{"text block", `{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, "### Assistant\n\na\n\nb\n\n"},
		{"tooluse", `{"role":"assistant","content":[{"type":"tooluse","id":"t","name":"read","input":{"path":"a.rs","n":[1,2],"o":{}}}]}`,
			"### Assistant\n\n```tool\nread\n{\n  \"path\": \"a.rs\",\n  \"n\": [\n    1,\n    2\n  ],\n  \"o\": {}\n}\n```\n\n"},
		{"tooluse without input", `{"role":"assistant","content":[{"type":"tooluse","id":"t","name":"now"}]}`, "### Assistant\n\n```tool\nnow\n{}\n```\n\n"},
		{"tooluse html stays literal", `{"role":"assistant","content":[{"type":"tooluse","id":"t","name":"w","input":{"s":"<a&b>"}}]}`,
			"### Assistant\n\n```tool\nw\n{\n  \"s\": \"<a&b>\"\n}\n```\n\n"},
		{"toolresult", `{"role":"user","content":[{"type":"toolresult","tool_use_id":"t","content":"ok","is_error":false}]}`, "### User\n\n```result\nok\n```\n\n"},
		{"toolresult null is_error", `{"role":"user","content":[{"type":"toolresult","tool_use_id":"t","content":"ok","is_error":null}]}`, "### User\n\n```result\nok\n```\n\n"},
		{"toolresult error", `{"role":"user","content":[{"type":"toolresult","tool_use_id":"t","content":"bad","is_error":true}]}`, "### User\n\n```error\nbad\n```\n\n"},
		{"image", `{"role":"user","content":[{"type":"image","source":{}}]}`, "### User\n\n*[image]*\n\n"},
		{"thinking", `{"role":"assistant","content":[{"type":"thinking","text":"hmm","signature":"s"}]}`, "### Assistant\n\n```thinking\nhmm\n```\n\n"},
		{"redacted thinking", `{"role":"assistant","content":[{"type":"redacted_thinking","data":"x"}]}`, "### Assistant\n\n*[redacted thinking]*\n\n"},
		// Ours: tool-role text is output, not markdown: fenced as a result.
		{"tool text", `{"role":"tool","content":"# not a heading","tool_call_id":"c"}`, "### Tool\n\n```result\n# not a heading\n```\n\n"},
		{"tool text error", `{"role":"tool","content":"boom","tool_call_id":"c","is_error":true}`, "### Tool\n\n```error\nboom\n```\n\n"},
		{"tool blocks", `{"role":"tool","content":[{"type":"text","text":"shot"},{"type":"image","source":{}}],"tool_call_id":"c"}`, "### Tool\n\n```result\nshot\n```\n\n*[image]*\n\n"},
		{"tool blocks error", `{"role":"tool","content":[{"type":"text","text":"bad"}],"tool_call_id":"c","is_error":true}`, "### Tool\n\n```error\nbad\n```\n\n"},
		{"system", `{"role":"system","content":"be terse"}`, "### System\n\nbe terse\n\n"},
		{"unknown block", `{"role":"assistant","content":[{"type":"web_search]result","x":1}]}`, "### Assistant\n\n*[web_search\\]result]*\n\n"},
		{"empty blocks", `{"role":"assistant","content":[]}`, "### Assistant\n\n"},
		{"unknown block's type is text", `{"role":"assistant","content":[{"type":"<img src=x onerror=alert(1)>"}]}`,
			"### Assistant\n\n*[\\<img src=x onerror=alert(1)\\>]*\n\n"},
		// Text that markdown would take for HTML is escaped, outside code only.
		{"html in text", `{"role":"user","content":"a Vec<String> and <script>alert(1)</script>"}`,
			"### User\n\na Vec\\<String> and \\<script>alert(1)\\</script>\n\n"},
		{"html in a code span", "{\"role\":\"user\",\"content\":\"use `Vec<String>` or ``a ` <b>``\"}",
			"### User\n\nuse `Vec<String>` or ``a ` <b>``\n\n"},
		{"an unclosed backtick is literal", "{\"role\":\"user\",\"content\":\"a ` <b>\"}", "### User\n\na ` \\<b>\n\n"},
		{"a code span across lines", "{\"role\":\"user\",\"content\":\"see `a\\n<b>` then <i>\"}", "### User\n\nsee `a\n<b>` then \\<i>\n\n"},
		{"a span ends at its paragraph", "{\"role\":\"user\",\"content\":\"a `x\\n\\n<b>`\"}", "### User\n\na `x\n\n\\<b>`\n\n"},
		{"html in fences", "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"<p>\\n```go\\nx := <-ch\\n```\\n<q>\\n~~~\\n<r>\"}]}",
			"### Assistant\n\n\\<p>\n```go\nx := <-ch\n```\n\\<q>\n~~~\n<r>\n~~~\n\n"},
		{"indented code", `{"role":"user","content":"<a>\n\n    x := <-ch\n\tif a<b {\nthen <b>\n    <c>"}`,
			"### User\n\n\\<a>\n\n    x := <-ch\n\tif a<b {\nthen \\<b>\n    \\<c>\n\n"},
		{"escaped already", `{"role":"user","content":"\\<b> and \\\\<i>"}`, "### User\n\n\\<b> and \\\\\\<i>\n\n"},
		// A list item's content is indented to its column: four spaces
		// under "1. " are a paragraph of the item, not code, and so is the
		// HTML in them; code in an item is four columns past its content.
		{"html in a list item's paragraph", `{"role":"user","content":"1. Install:\n\n    npm install <pkg>\n\n- item\n\n    <script>alert(1)</script>"}`,
			"### User\n\n1. Install:\n\n    npm install \\<pkg>\n\n- item\n\n    \\<script>alert(1)\\</script>\n\n"},
		{"code in a list item", `{"role":"user","content":"- item\n\n      code <b>\n- next <c>"}`,
			"### User\n\n- item\n\n      code <b>\n- next \\<c>\n\n"},
		{"a fence in a list item", "{\"role\":\"user\",\"content\":\"10. run:\\n    ```\\n    go test <pkg>\\n    ```\\n11. <b>\"}",
			"### User\n\n10. run:\n    ```\n    go test <pkg>\n    ```\n11. \\<b>\n\n"},
		{"a fence on an item's line", "{\"role\":\"user\",\"content\":\"- ```sh\\n  ls <dir>\\n  ```\"}",
			"### User\n\n- ```sh\n  ls <dir>\n  ```\n\n"},
		{"a lazy line and the item's end", `{"role":"user","content":"- item <a>\ncontinued <b>\n\n    <c> in the item\n\n<d> after it"}`,
			"### User\n\n- item \\<a>\ncontinued \\<b>\n\n    \\<c> in the item\n\n\\<d> after it\n\n"},
		{"a 2. does not interrupt a paragraph", `{"role":"user","content":"text\n2. <a>\n\n    <b>\n\ntext\n1. <c>\n\n    <d>"}`,
			"### User\n\ntext\n2. \\<a>\n\n    <b>\n\ntext\n1. \\<c>\n\n    \\<d>\n\n"},
		{"a thematic break is no item", `{"role":"user","content":"- - -\n    <b>"}`,
			"### User\n\n- - -\n    <b>\n\n"},
		{"indented code after a fence or a heading", "{\"role\":\"user\",\"content\":\"```\\nx\\n```\\n    <i>code</i>\\n# Title <t>\\n    <j>\"}",
			"### User\n\n```\nx\n```\n    <i>code</i>\n# Title \\<t>\n    <j>\n\n"},
		{"a < that starts nothing", `{"role":"user","content":"a < b, a<=b, <-ch, 1<2, <"}`, "### User\n\na < b, a<=b, <-ch, 1<2, <\n\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := decode(t, tc.msg)
			var buf bytes.Buffer
			if err := render.NewMarkdownWriter(&buf).Message(&m); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tc.want {
				t.Errorf("\n got %q\nwant %q", buf.String(), tc.want)
			}
		})
	}
}

func TestMarkdownHeader(t *testing.T) {
	cases := []struct {
		name           string
		title, project string
		want           string
	}{
		{"plain", "Fix login", "/home/u/proj",
			"# Fix login\n\n- **Session:** `" + testID + "`\n- **Project:** `/home/u/proj`\n- **Created:** 2026-08-21T12:00:00+00:00\n\n---\n\n"},
		{"title on one line", "a\nb\t c", "/p",
			"# a b c\n\n- **Session:** `" + testID + "`\n- **Project:** `/p`\n- **Created:** 2026-08-21T12:00:00+00:00\n\n---\n\n"},
		{"backticks in the path", "t", "/x/a`b",
			"# t\n\n- **Session:** `" + testID + "`\n- **Project:** ``/x/a`b``\n- **Created:** 2026-08-21T12:00:00+00:00\n\n---\n\n"},
		{"markup in the title is text", "T2 <script>alert(1)</script> *a* _b_ [c](d) `e` &amp; # parse_config", "/p",
			"# T2 \\<script\\>alert(1)\\</script\\> \\*a\\* \\_b\\_ \\[c\\](d) \\`e\\` \\&amp; \\# parse_config\n\n- **Session:** `" + testID + "`\n- **Project:** `/p`\n- **Created:** 2026-08-21T12:00:00+00:00\n\n---\n\n"},
		{"path ending in a backtick", "t", "/x/a`",
			"# t\n\n- **Session:** `" + testID + "`\n- **Project:** `` /x/a` ``\n- **Created:** 2026-08-21T12:00:00+00:00\n\n---\n\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := session.New(testID, tc.project, "", t0)
			m.Title = tc.title
			var buf bytes.Buffer
			if err := render.NewMarkdownWriter(&buf).Header(&m); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tc.want {
				t.Errorf("\n got %q\nwant %q", buf.String(), tc.want)
			}
		})
	}
}

type fencedBlock struct{ info, body string }

// parseFences finds CommonMark backtick code blocks: an opening fence is up
// to three spaces and three or more backticks followed by an info string
// without backticks; the block ends at a line of at least as many backticks
// (up to three spaces before, spaces after) or at the end of the document.
// It returns the blocks and the lines outside them.
func parseFences(doc string) (blocks []fencedBlock, outside []string) {
	lines := strings.Split(doc, "\n")
	fenceOf := func(l string) (n int, rest string) {
		trimmed := strings.TrimLeft(l, " ")
		if len(l)-len(trimmed) > 3 {
			return 0, ""
		}
		for n < len(trimmed) && trimmed[n] == '`' {
			n++
		}
		return n, trimmed[n:]
	}
	for i := 0; i < len(lines); i++ {
		n, info := fenceOf(lines[i])
		if n < 3 || strings.Contains(info, "`") {
			outside = append(outside, lines[i])
			continue
		}
		var body []string
		i++
		for ; i < len(lines); i++ {
			if m, rest := fenceOf(lines[i]); m >= n && strings.TrimSpace(rest) == "" {
				break
			}
			body = append(body, lines[i])
		}
		blocks = append(blocks, fencedBlock{strings.TrimSpace(info), strings.Join(body, "\n")})
	}
	return blocks, outside
}

// Ours: whycodes does not escape (weakness 9); no content can close its
// fence early here.
func TestMarkdownFencesCannotBeClosedByContent(t *testing.T) {
	nasty := []string{
		"```",
		"````",
		"before\n```\nafter",
		"x\n````\n```\n`````go\n   ```\ny",
		"``` ",
		"  ```` trailing",
		"`inline` and ``double``",
		"```tool\nfake\n```",
		"ends with fence\n```",
	}
	for _, body := range nasty {
		t.Run(body, func(t *testing.T) {
			in := []session.Message{
				blocks(session.RoleAssistant,
					session.Block{Type: session.BlockThinking, Text: body},
					toolUse("t", "bash", `{"cmd":`+string(mustJSONString(body))+`}`)),
				toolMsg("t", body),
				blocks(session.RoleUser, session.Block{Type: session.BlockToolResult, ToolUseID: "t", Result: body, IsError: ptr(true)}),
				toolMsg("i", body+"\nWHYCODES_IMAGE_B64:image/png\nAAAA"), // Append makes a text block of the preface
			}
			m, tree := buildSession(t, "/p", "", in...)
			doc := renderMarkdown(t, &m, tree)
			fences, outside := parseFences(doc)
			want := []fencedBlock{
				{"thinking", body},
				{"tool", "bash\n{\n  \"cmd\": " + string(mustJSONString(body)) + "\n}"},
				{"result", body},
				{"error", body},
				{"result", strings.TrimSpace(body)},
			}
			if len(fences) != len(want) {
				t.Fatalf("%d fenced blocks, want %d:\n%s", len(fences), len(want), doc)
			}
			for i := range want {
				if fences[i] != want[i] {
					t.Errorf("block %d = %+v, want %+v", i, fences[i], want[i])
				}
			}
			var headings []string
			for _, l := range outside {
				if strings.HasPrefix(l, "### ") {
					headings = append(headings, l)
				}
			}
			if strings.Join(headings, "|") != "### Assistant|### Tool|### User|### Tool" {
				t.Errorf("headings outside fences: %v", headings)
			}
		})
	}
}

// mustJSONString is s as a JSON string, the way the package writes one.
func mustJSONString(s string) []byte {
	c := session.TextContent(s)
	return c.AppendJSON(nil)
}

func TestParseFencesHelper(t *testing.T) {
	// The helper itself must see an early close where CommonMark would.
	blocks, _ := parseFences("```result\na\n```\nb\n```\n")
	if len(blocks) != 2 || blocks[0].body != "a" {
		t.Errorf("%+v", blocks)
	}
	blocks, _ = parseFences("````x\n```\n````\n")
	if len(blocks) != 1 || blocks[0].body != "```" {
		t.Errorf("%+v", blocks)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n == 0 {
		return 0, errors.New("disk full")
	}
	w.n--
	return len(p), nil
}

func TestMarkdownWriterError(t *testing.T) {
	m := session.New(testID, "/p", "", t0)
	msg := text(session.RoleUser, "x")
	mw := render.NewMarkdownWriter(&failWriter{n: 1})
	if err := mw.Header(&m); err != nil {
		t.Fatal(err)
	}
	if err := mw.Message(&msg); err == nil {
		t.Error("no error")
	}
	if err := mw.Message(&msg); err == nil || err.Error() != "disk full" {
		t.Errorf("error not sticky: %v", err)
	}
}

// test_conversation_text.
func TestConversationText(t *testing.T) {
	cases := []struct {
		name string
		msg  session.Message
		want string
	}{
		{"user", text(session.RoleUser, "hi"), "User: hi\n"},
		{"assistant blocks", blocks(session.RoleAssistant, toolUse("t", "n", `{}`), session.Block{Type: session.BlockText, Text: "first"}, session.Block{Type: session.BlockText, Text: "second"}), "Assistant: first\n"},
		{"system", text(session.RoleSystem, "s"), "System: s\n"},
		{"tool", toolMsg("c", "line1\nline2"), "Tool: line1\nline2\n"},
		{"no text", blocks(session.RoleAssistant, toolUse("t", "n", `{}`)), ""},
		{"empty text", text(session.RoleUser, ""), "User: \n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := render.ConversationText(&buf, &tc.msg); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tc.want {
				t.Errorf("got %q, want %q", buf.String(), tc.want)
			}
		})
	}
	labels := map[session.Role]string{session.RoleUser: "User", session.RoleAssistant: "Assistant", session.RoleSystem: "System", session.RoleTool: "Tool", "other": "other"}
	for r, want := range labels {
		if got := r.Label(); got != want {
			t.Errorf("%q.Label() = %q", r, got)
		}
	}
}

// TranscriptText, wc-export --format text: every text block of a
// message, in order, where conversation_text keeps the first.
func TestTranscriptText(t *testing.T) {
	cases := []struct {
		name string
		msg  session.Message
		want string
	}{
		{"string", text(session.RoleUser, "hi"), "User: hi\n"},
		{"several blocks", blocks(session.RoleAssistant, session.Block{Type: session.BlockText, Text: "first"}, toolUse("t", "n", `{}`), session.Block{Type: session.BlockText, Text: "second"}), "Assistant: first\nsecond\n"},
		{"empty first block", blocks(session.RoleAssistant, session.Block{Type: session.BlockText, Text: ""}, session.Block{Type: session.BlockText, Text: "after the compaction"}), "Assistant: after the compaction\n"},
		{"no text", blocks(session.RoleAssistant, toolUse("t", "n", `{}`)), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := render.TranscriptText(&buf, &tc.msg); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tc.want {
				t.Errorf("got %q, want %q", buf.String(), tc.want)
			}
		})
	}
}

// test_format_exit_summary.
// test_format_exit_summary: the heading is followed at once by the lines,
// with no blank line between (format_exit_summary starts with
// "\nSession Summary\n").
func TestExitSummary(t *testing.T) {
	m, _ := buildSession(t, "/home/u/proj", "", text(session.RoleUser, "a"), text(session.RoleAssistant, "b"), text(session.RoleUser, "c"))
	got := render.ExitSummary(&m, 42, "anthropic/claude-opus-4-6", "whycodes")
	want := "\nSession Summary\n" +
		"  ID        " + testID + "\n" +
		"  Duration  42s\n" +
		"  Model     anthropic/claude-opus-4-6\n" +
		"  CWD       /home/u/proj\n" +
		"  Messages  3\n" +
		"  Continue  whycodes --resume " + testID + "\n"
	if got != want {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
}

// export_markdown's Created line is chrono's to_rfc3339 of a UTC time.
func TestMarkdownCreatedIsRFC3339AsWhycodes(t *testing.T) {
	cases := map[string]string{
		"2026-08-21T12:00:00Z":                "2026-08-21T12:00:00+00:00",
		"2026-08-21T12:00:00.5Z":              "2026-08-21T12:00:00.500+00:00",
		"2026-08-21T12:00:00.123456Z":         "2026-08-21T12:00:00.123456+00:00",
		"2026-08-21T12:00:00.1234567Z":        "2026-08-21T12:00:00.123456700+00:00",
		"2026-08-21T14:00:00.000000001+02:00": "2026-08-21T12:00:00.000000001+00:00",
		"not a time":                          "not a time",
	}
	for in, want := range cases {
		m := session.New(testID, "/p", "", t0)
		m.CreatedAt = in
		var b bytes.Buffer
		if err := render.NewMarkdownWriter(&b).Header(&m); err != nil {
			t.Fatal(err)
		}
		if line := "- **Created:** " + want + "\n"; !strings.Contains(b.String(), line) {
			t.Errorf("%s: header %q lacks %q", in, b.String(), line)
		}
	}
}
