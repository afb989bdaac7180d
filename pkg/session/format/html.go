package format

import (
	"bytes"
	"encoding/json"
	"html"
	"io"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// The page allows no script and no request at all: even markup that escaped
// escaping could not run or fetch anything. Inline images are data: URLs.
// One page holds every session of an export, each a section.
const htmlHead = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>`

const htmlStyle = `</title>
<style>
:root { color-scheme: light dark; --fg: #1f2328; --bg: #fff; --muted: #656d76; --line: #d0d7de;
  --user: #ddf4ff; --assistant: #f6f8fa; --tool: #fff8c5; --system: #fbefff; --error: #ffebe9; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #8d96a0; --line: #30363d;
  --user: #0c2d6b; --assistant: #161b22; --tool: #2e2a0f; --system: #2a1a3a; --error: #490202; } }
body { margin: 0 auto; max-width: 54rem; padding: 1.5rem; font: 15px/1.5 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header h1 { font-size: 1.4rem; margin: 0 0 .3rem; }
header dl { display: grid; grid-template-columns: max-content 1fr; gap: 0 1rem; color: var(--muted); font-size: .85rem; margin: 0 0 1.5rem; }
header dd { margin: 0; font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
article { border: 1px solid var(--line); border-radius: 8px; padding: .6rem .9rem; margin: 0 0 .8rem; }
article.user { background: var(--user); } article.assistant { background: var(--assistant); }
article.tool { background: var(--tool); } article.system { background: var(--system); }
.role { font-weight: 600; font-size: .8rem; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.role time, .role .kind { font-weight: 400; text-transform: none; margin-left: .5rem; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; }
pre { background: rgba(127,127,127,.12); border-radius: 6px; padding: .5rem .7rem; overflow-x: auto; white-space: pre; font: 13px/1.4 ui-monospace, monospace; }
details.thinking pre { white-space: pre-wrap; overflow-wrap: anywhere; font-family: system-ui, sans-serif; }
summary code { font: 13px ui-monospace, monospace; }
section.session + section.session { border-top: 2px solid var(--line); margin-top: 2rem; padding-top: 1.5rem; }
details { margin: .4rem 0; } summary { cursor: pointer; color: var(--muted); font-size: .9rem; }
details.error > summary { color: #cf222e; } details.error pre { background: var(--error); }
img { max-width: 100%; border-radius: 6px; }
</style>
</head>
<body>
`

// HTMLWriter renders sessions into a page that WriteHTMLStart opened and
// WriteHTMLEnd closes, a message at a time. Every piece of content is
// escaped.
type HTMLWriter struct {
	w   io.Writer
	buf bytes.Buffer
	id  string // the session's, which its elements' ids start with
	err error
}

// NewHTMLWriter returns a writer to w.
func NewHTMLWriter(w io.Writer) *HTMLWriter { return &HTMLWriter{w: w} }

// WriteHTMLStart opens the page, titled title.
func WriteHTMLStart(w io.Writer, title string) error {
	_, err := io.WriteString(w, htmlHead+esc(title)+htmlStyle+"<main>\n")
	return err
}

// WriteHTMLEnd closes the page.
func WriteHTMLEnd(w io.Writer) error {
	_, err := io.WriteString(w, "</main>\n</body>\n</html>\n")
	return err
}

// Header opens the session's section.
func (h *HTMLWriter) Header(m *session.Meta) error {
	h.id = m.ID
	b := &h.buf
	b.Reset()
	b.WriteString(`<section class="session" id="` + esc(m.ID) + `">` + "\n<header>\n<h1>" + esc(m.Title) + "</h1>\n<dl>")
	for _, kv := range [][2]string{{"Session", m.ID}, {"Project", m.ProjectPath}, {"Created", m.CreatedAt},
		{"Messages", strconv.FormatUint(m.MessageCount, 10)}, {"Tokens", strconv.FormatUint(m.Tokens, 10)}} {
		b.WriteString("<dt>" + kv[0] + "</dt><dd>" + esc(kv[1]) + "</dd>")
	}
	b.WriteString("</dl>\n</header>\n")
	return h.flush()
}

// Message writes one message as an article.
func (h *HTMLWriter) Message(n *session.Node) error {
	m := &n.Msg
	b := &h.buf
	b.Reset()
	b.WriteString(`<article class="msg ` + esc(string(m.Role)) + `" id="` + esc(h.id) + `-m` + strconv.FormatUint(n.Seq, 10) + `">`)
	b.WriteString(`<div class="role">` + esc(m.Role.Label()))
	if m.Role == session.RoleTool && m.Name != "" {
		b.WriteString(" · " + esc(m.Name))
	}
	if m.Kind != session.KindNone {
		b.WriteString(`<span class="kind">` + esc(string(m.Kind)) + `</span>`)
	}
	if m.CreatedAt != "" {
		b.WriteString(`<time datetime="` + esc(m.CreatedAt) + `">` + esc(m.CreatedAt) + `</time>`)
	}
	b.WriteString("</div>\n")
	switch {
	case !m.Content.IsBlocks && m.Role == session.RoleTool:
		writeDetails(b, "result", m.IsError, "output", m.Content.Text, true)
	case !m.Content.IsBlocks:
		writeText(b, m.Content.Text)
	}
	for i := range m.Content.Blocks {
		writeBlock(b, &m.Content.Blocks[i], m.Role)
	}
	b.WriteString("</article>\n")
	return h.flush()
}

// Footer closes the session's section.
func (h *HTMLWriter) Footer() error {
	h.buf.Reset()
	h.buf.WriteString("</section>\n")
	return h.flush()
}

func (h *HTMLWriter) flush() error {
	if h.err == nil {
		_, h.err = h.w.Write(h.buf.Bytes())
	}
	return h.err
}

func esc(s string) string { return html.EscapeString(s) }

// writeText keeps code fences as preformatted blocks and the rest as text.
func writeText(b *bytes.Buffer, text string) {
	var prose, code []string
	inCode := false
	flushProse := func() {
		if t := strings.Trim(strings.Join(prose, ""), "\n"); t != "" {
			b.WriteString(`<div class="text">` + esc(t) + "</div>\n")
		}
		prose = prose[:0]
	}
	for line := range strings.Lines(text) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if inCode {
				b.WriteString("<pre><code>" + esc(strings.Join(code, "")) + "</code></pre>\n")
				code = code[:0]
			} else {
				flushProse()
			}
			inCode = !inCode
			continue
		}
		if inCode {
			code = append(code, line)
		} else {
			prose = append(prose, line)
		}
	}
	if inCode { // an unclosed fence: show what there is as code
		b.WriteString("<pre><code>" + esc(strings.Join(code, "")) + "</code></pre>\n")
	}
	flushProse()
}

func writeDetails(b *bytes.Buffer, class string, isError bool, label, body string, open bool) {
	if isError {
		class += " error"
		label += " (error)"
	}
	b.WriteString(`<details class="` + class + `"`)
	if open && len(body) < 2000 {
		b.WriteString(" open")
	}
	b.WriteString("><summary>" + esc(label) + "</summary><pre>" + esc(body) + "</pre></details>\n")
}

// writeSummarised is a closed details element whose summary, a tool
// call's short form, is set as code.
func writeSummarised(b *bytes.Buffer, class, summary, body string) {
	b.WriteString(`<details class="` + class + `"><summary><code>` + esc(summary) + "</code></summary><pre>" + esc(body) + "</pre></details>\n")
}

// toolCallArgs are the members of a tool call's input that say best what
// it does, in order: the command run, the file read or written, what is
// searched or fetched.
var toolCallArgs = []string{"command", "cmd", "file_path", "path", "filePath", "pattern", "query", "url", "prompt", "description", "code"}

// maxSummaryArg bounds the input a tool call's summary shows, in characters.
const maxSummaryArg = 80

// ToolCallSummary is the short form of a call: the tool's name and what it
// was given, as Read(src/auth.go) or Bash(go test ./...): the input member
// that says most (toolCallArgs), the input's only member, or its JSON; on
// one line, cut at maxSummaryArg characters.
func ToolCallSummary(name string, input []byte) string {
	v := gjson.ParseBytes(input)
	arg := ""
	switch {
	case len(bytes.TrimSpace(input)) == 0 || v.IsObject() && len(v.Map()) == 0:
	case v.IsObject():
		for _, k := range toolCallArgs {
			if a := v.Get(gjson.Escape(k)); a.Type == gjson.String && a.Str != "" {
				arg = a.Str
				break
			}
		}
		if arg == "" {
			members := v.Map()
			for _, only := range members {
				if len(members) == 1 && (only.Type == gjson.String || only.Type == gjson.Number) {
					arg = only.String()
				}
			}
		}
		if arg == "" {
			var compact bytes.Buffer
			if json.Compact(&compact, input) == nil {
				arg = compact.String()
			}
		}
	default:
		arg = v.String()
	}
	arg = strings.Join(strings.Fields(arg), " ")
	if r := []rune(arg); len(r) > maxSummaryArg {
		arg = string(r[:maxSummaryArg-1]) + "…"
	}
	return name + "(" + arg + ")"
}

func writeBlock(b *bytes.Buffer, blk *session.Block, role session.Role) {
	switch blk.Type {
	case session.BlockText:
		if role == session.RoleTool {
			writeDetails(b, "result", false, "output", blk.Text, true)
		} else {
			writeText(b, blk.Text)
		}
	case session.BlockToolUse:
		var pretty bytes.Buffer
		if json.Indent(&pretty, blk.Input, "", "  ") != nil {
			pretty.Reset()
			pretty.Write(blk.Input)
		}
		writeSummarised(b, "tool-call", ToolCallSummary(blk.Name, blk.Input), pretty.String())
	case session.BlockToolResult:
		writeDetails(b, "result", blk.IsError != nil && *blk.IsError, "result", blk.ResultText(), true)
	case session.BlockThinking:
		writeDetails(b, "thinking", false, "thinking", blk.Text, false)
	case session.BlockRedactedThinking:
		b.WriteString(`<p class="role">redacted thinking</p>` + "\n")
	case session.BlockImage:
		src := gjson.ParseBytes(blk.Source)
		if data := src.Get("data"); data.Exists() && src.Get("type").Str == "base64" {
			b.WriteString(`<img alt="image" src="data:` + esc(src.Get("media_type").String()) + ";base64," + esc(data.String()) + "\">\n")
		} else {
			b.WriteString(`<p class="role">image: ` + esc(src.Get("url").String()) + "</p>\n") // never fetched
		}
	default:
		writeDetails(b, "other", false, blk.Type+" block", string(blk.Raw), false)
	}
}
