package render

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wctoolkit/wc/pkg/session"
)

// ConversationText writes whycodes' conversation_text line for one message:
// "Role: text\n", or nothing when the message has no text.
func ConversationText(w io.Writer, m *session.Message) error {
	text, ok := m.AsText()
	if !ok {
		return nil
	}
	_, err := io.WriteString(w, m.Role.Label()+": "+text+"\n")
	return err
}

// TranscriptText writes one "Role: text\n" entry for a message: every text
// block, in order, one per line (whycodes' conversation_text keeps only the
// first, which loses the rest of a reply that has several). Empty text
// blocks are left out; a message with no text writes nothing.
func TranscriptText(w io.Writer, m *session.Message) error {
	if !m.Content.IsBlocks {
		return ConversationText(w, m)
	}
	var b []byte
	for i := range m.Content.Blocks {
		blk := &m.Content.Blocks[i]
		if blk.Type != session.BlockText || blk.Text == "" {
			continue
		}
		if b == nil {
			b = append(b, m.Role.Label()+": "...)
		} else {
			b = append(b, '\n')
		}
		b = append(b, blk.Text...)
	}
	if b == nil {
		return nil
	}
	_, err := w.Write(append(b, '\n'))
	return err
}

// MarkdownWriter renders a session as whycodes' markdown export, one message
// at a time. Unlike whycodes it sizes every fence past the longest backtick
// run of its content, so no content can close its fence early, and it fences
// tool output, which is not markdown.
type MarkdownWriter struct {
	w   io.Writer
	buf []byte
	err error
}

// NewMarkdownWriter returns a writer to w.
func NewMarkdownWriter(w io.Writer) *MarkdownWriter { return &MarkdownWriter{w: w} }

// Header writes the title block.
func (mw *MarkdownWriter) Header(m *session.Meta) error {
	b := mw.buf[:0]
	b = append(b, "# "...)
	b = appendEscapedInline(b, oneLine(m.Title))
	b = append(b, "\n\n- **Session:** "...)
	b = appendCodeSpan(b, m.ID)
	b = append(b, "\n- **Project:** "...)
	b = appendCodeSpan(b, m.ProjectPath)
	b = append(b, "\n- **Created:** "...)
	b = appendEscapedInline(b, oneLine(rfc3339AsWhycodes(m.CreatedAt)))
	b = append(b, "\n\n---\n\n"...)
	return mw.flush(b)
}

// Message writes one message.
func (mw *MarkdownWriter) Message(m *session.Message) error {
	b := mw.buf[:0]
	b = append(b, "### "...)
	b = append(b, m.Role.Label()...)
	if m.Kind != session.KindNone { // a note or summary is not what its role says
		b = append(b, " ("...)
		b = append(b, m.Kind...)
		b = append(b, ')')
	}
	b = append(b, "\n\n"...)
	if !m.Content.IsBlocks {
		if m.Role == session.RoleTool {
			b = appendFence(b, resultInfo(m.IsError), m.Content.Text)
		} else {
			b = appendMarkdownText(b, m.Content.Text)
		}
		return mw.flush(b)
	}
	for i := range m.Content.Blocks {
		blk := &m.Content.Blocks[i]
		if m.Role == session.RoleTool && blk.Type == session.BlockText { // tool output, not markdown
			b = appendFence(b, resultInfo(m.IsError), blk.Text)
			continue
		}
		b = appendMarkdownBlock(b, blk)
	}
	return mw.flush(b)
}

func (mw *MarkdownWriter) flush(b []byte) error {
	mw.buf = b[:0]
	if hasControls(b) {
		b = appendVisibleControls(nil, b)
	}
	if mw.err == nil {
		_, mw.err = mw.w.Write(b)
	}
	return mw.err
}

// hasControls reports whether b may hold a control character other than
// tab and newlines: a C0 byte, DEL, or 0xc2, which leads the C1 controls.
// Every export passes all its text here: DEL and 0xc2 are found with
// IndexByte, C0 bytes eight at a time without a branch, as tabs and
// newlines come at random.
func hasControls(b []byte) bool {
	if bytes.IndexByte(b, 0x7f) >= 0 || bytes.IndexByte(b, 0xc2) >= 0 {
		return true
	}
	const low7, low = 0x7f7f7f7f7f7f7f7f, 0x0101010101010101
	var found uint64
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		// The high bit of a byte of v&low7+low7|v is clear exactly when
		// the byte of v is zero; with 0x60 instead, when it is below 0x20.
		t, n, r := x^'\t'*low, x^'\n'*low, x^'\r'*low
		allowed := ^((t&low7 + low7 | t) & (n&low7 + low7 | n) & (r&low7 + low7 | r))
		found |= ^(x&low7 + 0x6060606060606060 | x) &^ allowed
	}
	if found&^low7 != 0 {
		return true
	}
	for _, c := range b[i:] {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			return true
		}
	}
	return false
}

// appendVisibleControls copies src, turning control characters other than
// tab and newlines into their visible pictures (ESC becomes ␛), so that a
// transcript's terminal escapes cannot act on the terminal of whoever reads
// the export.
func appendVisibleControls(dst, src []byte) []byte {
	for _, r := range string(src) {
		switch {
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r':
			dst = utf8.AppendRune(dst, 0x2400+r)
		case r == 0x7f:
			dst = utf8.AppendRune(dst, 0x2421)
		case r >= 0x80 && r < 0xa0: // C1 controls
			dst = utf8.AppendRune(dst, utf8.RuneError)
		default:
			dst = utf8.AppendRune(dst, r)
		}
	}
	return dst
}

func resultInfo(isError bool) string {
	if isError {
		return "error"
	}
	return "result"
}

func appendMarkdownBlock(b []byte, blk *session.Block) []byte {
	switch blk.Type {
	case session.BlockText:
		return appendMarkdownText(b, blk.Text)
	case session.BlockToolUse:
		start := len(b)
		b = append(append(beginFence(b, "tool"), blk.Name...), '\n')
		return endFence(appendPrettyJSON(b, blk.Input), start, "tool", "tool")
	case session.BlockToolResult:
		return appendFence(b, resultInfo(blk.IsError != nil && *blk.IsError), blk.ResultText())
	case session.BlockImage:
		return append(b, "*[image]*\n\n"...)
	case session.BlockThinking:
		return appendFence(b, "thinking", blk.Text)
	case session.BlockRedactedThinking:
		return append(b, "*[redacted thinking]*\n\n"...)
	}
	b = append(b, "*["...)
	b = appendEscapedInline(b, oneLine(blk.Type))
	return append(b, "]*\n\n"...)
}

// appendMarkdownText writes text as markdown, closing any code fence it
// leaves open (a reply cut off mid-block, say), so that it cannot swallow
// what follows.
func appendMarkdownText(b []byte, text string) []byte {
	return endMarkdownText(append(b, text...), len(b))
}

// endMarkdownText ends the markdown text b[start:] as appendMarkdownText
// does.
func endMarkdownText(b []byte, start int) []byte {
	b, fence := escapeMarkdownHTML(b, start)
	if fence != nil {
		if len(b) == start || b[len(b)-1] != '\n' {
			b = append(b, '\n')
		}
		b = append(b, fence...)
	}
	return append(b, "\n\n"...)
}

// fenceStep is the fence open after line, given open, the opening run of
// the fence open before it (nil: none).
func fenceStep(line, open []byte) []byte {
	// Only a line that starts, after at most three spaces, with a
	// backtick or tilde can open or close a fence.
	j := 0
	for j < len(line) && j < 4 && line[j] == ' ' {
		j++
	}
	if j == len(line) || line[j] != '`' && line[j] != '~' {
		return open
	}
	l := bytes.TrimRight(line, "\r\n")
	t := bytes.TrimLeft(l, " ")
	if len(l)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return open
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	switch {
	case n < 3:
	case open == nil:
		if t[0] == '`' && bytes.IndexByte(t[n:], '`') >= 0 {
			return nil // not a fence: a backtick fence's info has no backticks
		}
		return t[:n]
	case t[0] == open[0] && n >= len(open) && len(bytes.TrimSpace(t[n:])) == 0:
		return nil
	}
	return open
}

// appendFence writes body in a fenced block whose fence is longer than any
// run of backticks in body.
func appendFence(b []byte, info, body string) []byte {
	start := len(b)
	return endFence(append(beginFence(b, info), body...), start, info, info)
}

// beginFence opens a fenced block of three backticks, for endFence to size
// once its body follows.
func beginFence(b []byte, info string) []byte {
	b = append(b, "```"...)
	b = append(b, info...)
	return append(b, '\n')
}

// endFence closes the block that beginFence opened at b[start] with info
// written, now that its body follows: the fence becomes longer than any run
// of backticks in the body, and the info final, moving the body when
// either changed.
func endFence(b []byte, start int, written, final string) []byte {
	body := start + 3 + len(written) + 1
	n := max(3, longestRunBytes(b[body:], '`')+1)
	if n != 3 || written != final {
		shift := n + len(final) - 3 - len(written)
		end := len(b)
		if shift > 0 {
			b = append(b, make([]byte, shift)...)
		}
		copy(b[body+shift:], b[body:end])
		b = b[:end+shift]
		for i := range n {
			b[start+i] = '`'
		}
		copy(b[start+n:], final)
		b[start+n+len(final)] = '\n'
	}
	b = append(b, '\n')
	for range n {
		b = append(b, '`')
	}
	return append(b, "\n\n"...)
}

// appendCodeSpan writes s as inline code that no backtick in s can end.
func appendCodeSpan(b []byte, s string) []byte {
	s = oneLine(s)
	n := longestRunBytes([]byte(s), '`') + 1 // the header's id and project only
	delim := strings.Repeat("`", n)
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	b = append(b, delim...)
	b = append(b, pad...)
	b = append(b, s...)
	b = append(b, pad...)
	return append(b, delim...)
}

// longestRunBytes is the length of the longest run of c in s.
func longestRunBytes(s []byte, c byte) int {
	best := 0
	for {
		i := bytes.IndexByte(s, c)
		if i < 0 {
			return best
		}
		n := 1
		for i+n < len(s) && s[i+n] == c {
			n++
		}
		best = max(best, n)
		s = s[i+n:]
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// appendPrettyJSON appends raw indented by two spaces, or as it is when it
// is not JSON; nothing is {}.
func appendPrettyJSON(b []byte, raw []byte) []byte {
	if len(raw) == 0 {
		return append(b, "{}"...)
	}
	out := bytes.NewBuffer(b)
	if err := json.Indent(out, raw, "", "  "); err != nil {
		return append(b, raw...)
	}
	return out.Bytes()
}

// ExitSummary is whycodes' format_exit_summary.
func ExitSummary(m *session.Meta, durationSecs uint64, model, binary string) string {
	var b strings.Builder
	b.WriteString("\nSession Summary\n")
	line := func(label, value string) {
		b.WriteString("  " + label + strings.Repeat(" ", max(0, 8-len(label))) + "  " + value + "\n")
	}
	line("ID", m.ID)
	line("Duration", strconv.FormatUint(durationSecs, 10)+"s")
	line("Model", model)
	line("CWD", m.ProjectPath)
	line("Messages", strconv.FormatUint(m.MessageCount, 10))
	line("Continue", binary+" --resume "+m.ID)
	return b.String()
}

// rfc3339AsWhycodes writes a time as chrono's to_rfc3339 does for a UTC
// time: "+00:00", and the fraction in groups of three digits, none when
// it is zero. A time that does not parse is written as it is.
func rfc3339AsWhycodes(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	t = t.UTC()
	layout := "2006-01-02T15:04:05"
	switch ns := t.Nanosecond(); {
	case ns == 0:
	case ns%1_000_000 == 0:
		layout += ".000"
	case ns%1_000 == 0:
		layout += ".000000"
	default:
		layout += ".000000000"
	}
	return t.Format(layout) + "+00:00"
}
