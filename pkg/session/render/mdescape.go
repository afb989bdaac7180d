package render

import "bytes"

// What the markdown export writes itself (a title, a time, an unknown
// block's type) is plain text: every character markdown reads as markup
// is escaped with a backslash, so that it shows as it is and no renderer
// takes it for HTML. Message text is markdown, and stays so, except that
// a '<' outside code, which markdown takes for the start of raw HTML
// (`Vec<String>` renders as "Vec", `<script>` runs where a renderer
// allows HTML), is escaped too.

// markdownPunct are the characters appendEscapedInline escapes: those that
// start emphasis, code, links, images, HTML, entities, tables or an ATX
// heading's closing sequence within a line.
const markdownPunct = "\\`*_[]<>!&|~#"

// appendEscapedInline appends s, one line of plain text, so that markdown
// shows it as it is. An underscore inside a word (parse_config) cannot be
// emphasis, and stays bare.
func appendEscapedInline(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		intraword := c == '_' && i > 0 && i+1 < len(s) && wordByte(s[i-1]) && wordByte(s[i+1])
		if !intraword && bytes.IndexByte([]byte(markdownPunct), c) >= 0 {
			b = append(b, '\\')
		}
		b = append(b, c)
	}
	return b
}

// wordByte reports a letter or digit, or a byte of a non-ASCII character.
func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// escapeMarkdownHTML rewrites the markdown text b[start:] so that no '<'
// outside a code span, a fenced code block or an indented code block
// starts raw HTML: each that could becomes "\<". Code is left alone, as
// backslashes there would show.
func escapeMarkdownHTML(b []byte, start int) []byte {
	if bytes.IndexByte(b[start:], '<') < 0 {
		return b
	}
	text := bytes.Clone(b[start:])
	out := b[:start]
	var fence, para []byte
	prevBlank, indented := true, false
	for len(text) > 0 {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line = text[:i+1]
		}
		text = text[len(line):]
		switch {
		case fence != nil:
			out = append(out, line...)
			fence = fenceStep(line, fence)
			continue
		case len(bytes.TrimSpace(line)) == 0:
			out = escapeInlineHTML(out, para)
			para = para[:0]
			out = append(out, line...)
			prevBlank, indented = true, false
			continue
		case len(para) == 0 && (prevBlank || indented) && isIndentedCode(line):
			out = append(out, line...) // an indented code block's line
			prevBlank, indented = false, true
			continue
		}
		prevBlank, indented = false, false
		if f := fenceStep(line, nil); f != nil {
			out = escapeInlineHTML(out, para)
			para = para[:0]
			out = append(out, line...)
			fence = f
			continue
		}
		para = append(para, line...)
	}
	return escapeInlineHTML(out, para)
}

// isIndentedCode reports a line indented by four columns or more.
func isIndentedCode(line []byte) bool {
	cols := 0
	for _, c := range line {
		switch c {
		case ' ':
			cols++
		case '\t':
			cols += 4 - cols%4
		default:
			return cols >= 4
		}
		if cols >= 4 {
			return true
		}
	}
	return false
}

// escapeInlineHTML appends a paragraph's lines with every '<' outside its
// code spans escaped. A code span runs from a run of backticks to the next
// run of the same length; a run that none closes is literal backticks, and
// a backslash-escaped character stays as it is.
func escapeInlineHTML(out, p []byte) []byte {
	for i := 0; i < len(p); {
		switch c := p[i]; {
		case c == '\\' && i+1 < len(p):
			out = append(out, p[i:i+2]...)
			i += 2
		case c == '`':
			n := 1
			for i+n < len(p) && p[i+n] == '`' {
				n++
			}
			end := i + n
			if close := closingRun(p[end:], n); close >= 0 {
				end += close + n
			}
			out = append(out, p[i:end]...)
			i = end
		case c == '<' && i+1 < len(p) && startsMarkup(p[i+1]):
			out = append(out, '\\', '<')
			i++
		default:
			out = append(out, c)
			i++
		}
	}
	return out
}

// startsMarkup reports whether a '<' before c may begin raw HTML or an
// autolink: a tag, a closing tag, a comment or declaration, a processing
// instruction, a URI scheme. Before anything else ("a < b", "<=", "<-ch")
// it is text, and stays bare.
func startsMarkup(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '/' || c == '!' || c == '?'
}

// closingRun is the offset in p of the first run of exactly n backticks,
// or -1.
func closingRun(p []byte, n int) int {
	for i := 0; i < len(p); {
		if p[i] != '`' {
			i++
			continue
		}
		m := 1
		for i+m < len(p) && p[i+m] == '`' {
			m++
		}
		if m == n {
			return i
		}
		i += m
	}
	return -1
}
