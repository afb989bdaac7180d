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
// backslashes there would show. It also returns the opening run of a
// fence the text leaves open (nil: none).
func escapeMarkdownHTML(b []byte, start int) ([]byte, []byte) {
	var sc mdScanner
	if bytes.IndexByte(b[start:], '<') < 0 {
		for text := b[start:]; len(text) > 0; {
			line := nextLine(text)
			text = text[len(line):]
			sc.step(line)
		}
		return b, sc.fence
	}
	text := bytes.Clone(b[start:])
	out := b[:start]
	var para []byte
	for len(text) > 0 {
		line := nextLine(text)
		text = text[len(line):]
		kind := sc.step(line)
		if kind != mdText {
			out = escapeInlineHTML(out, para)
			para = para[:0]
		}
		switch kind {
		case mdCode, mdBlank:
			out = append(out, line...)
		case mdHeading:
			out = escapeInlineHTML(out, line)
		default:
			para = append(para, line...)
		}
	}
	return escapeInlineHTML(out, para), sc.fence
}

func nextLine(text []byte) []byte {
	if i := bytes.IndexByte(text, '\n'); i >= 0 {
		return text[:i+1]
	}
	return text
}

// mdKind is what a line of markdown is, as far as escaping goes.
type mdKind int

const (
	mdCode      mdKind = iota // a fence's line or a code line: left as it is
	mdBlank                   // ends a paragraph
	mdHeading                 // a block of one line: a heading, a break
	mdParagraph               // the first line of a paragraph (a list item's too)
	mdText                    // a paragraph's next line
)

// mdScanner reads markdown a line at a time as CommonMark reads its blocks,
// as far as telling code from text needs: fences, indented code, the
// paragraphs between, and list items, whose content column is where an
// indented code block's four columns are counted from. Block quotes are
// read as paragraphs.
type mdScanner struct {
	items    []int  // the content columns of the open list items, innermost last
	fence    []byte // the opening run of the open fence; nil: none
	fenceCol int    // the content column the fence opened at
	para     bool   // a paragraph is open
}

func (s *mdScanner) col() int {
	if len(s.items) == 0 {
		return 0
	}
	return s.items[len(s.items)-1]
}

func (s *mdScanner) step(line []byte) mdKind {
	blank := len(bytes.TrimSpace(line)) == 0
	ind := indentCols(line)
	for !blank && ind < s.col() {
		outer := 0
		if n := len(s.items); n > 1 {
			outer = s.items[n-2]
		}
		lazy := s.fence == nil && s.para && (ind-outer >= 4 || !startsBlock(bytes.TrimLeft(line, " \t"), true))
		if lazy {
			return mdText // a paragraph's line need not be indented
		}
		s.items = s.items[:len(s.items)-1]
		if s.fence != nil && s.fenceCol > s.col() {
			s.fence = nil // closed with the item that held it
		}
		s.para = false
	}
	col := s.col()
	rel := stripCols(line, col)
	if s.fence != nil {
		if !blank {
			s.fence = fenceStep(rel, s.fence)
		}
		return mdCode
	}
	if blank {
		s.para = false
		return mdBlank
	}
	if ind-col >= 4 {
		if !s.para {
			return mdCode
		}
		return mdText
	}
	return s.block(bytes.TrimLeft(rel, " \t"), col+(ind-col))
}

// block reads t, a line's content from column at, no more than three
// columns into its container.
func (s *mdScanner) block(t []byte, at int) mdKind {
	if f := fenceStep(t, nil); f != nil {
		s.fence, s.fenceCol, s.para = f, s.col(), false
		return mdCode
	}
	switch {
	case isHeadingOrBreak(t):
		s.para = false
		return mdHeading
	case startsBlock(t, s.para):
		if w, ok := listMarker(t, s.para); ok {
			s.items = append(s.items, at+w)
			s.para = false
			n := markerLen(t)
			rest := stripCols(t[n:], w-n)
			if len(bytes.TrimSpace(rest)) == 0 {
				return mdParagraph // an item that begins empty
			}
			if indentCols(rest) >= 4 {
				return mdCode // the item begins with indented code
			}
			return s.block(rest, at+w)
		}
	}
	if s.para {
		return mdText
	}
	s.para = true
	return mdParagraph
}

// startsBlock reports whether t, a line's content, begins a list item, a
// fence, a heading or a break: a block a paragraph cannot take as its next
// line (para: a paragraph is open, which an ordered item other than "1."
// and an empty item cannot interrupt).
func startsBlock(t []byte, para bool) bool {
	if fenceStep(t, nil) != nil || isHeadingOrBreak(t) {
		return true
	}
	_, ok := listMarker(t, para)
	return ok
}

// listMarker reports whether t begins a list item ("-", "+", "*", or up
// to nine digits and "." or ")", then a space, a tab or the end of the
// line) and the column its content begins at, counted from t: past the
// marker and one to four columns of space (one when there are more, or
// none).
func listMarker(t []byte, para bool) (int, bool) {
	n := markerLen(t)
	if n == 0 {
		return 0, false
	}
	rest := bytes.TrimRight(t[n:], "\r\n")
	if len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' {
		return 0, false
	}
	empty := len(bytes.TrimSpace(rest)) == 0
	ordered, one := n > 1, n == 2 && t[0] == '1'
	if para && (empty || ordered && !one) {
		return 0, false
	}
	spaces := indentCols(rest)
	if empty || spaces > 4 {
		spaces = 1
	}
	return n + spaces, true
}

// markerLen is the length of the list marker t begins with, or 0.
func markerLen(t []byte) int {
	if len(t) > 0 && (t[0] == '-' || t[0] == '+' || t[0] == '*') {
		return 1
	}
	digits := 0
	for digits < len(t) && digits < 10 && t[digits] >= '0' && t[digits] <= '9' {
		digits++
	}
	if digits == 0 || digits > 9 || digits == len(t) || t[digits] != '.' && t[digits] != ')' {
		return 0
	}
	return digits + 1
}

// isHeadingOrBreak reports an ATX heading ("#" to "######", then a space
// or the end) or a thematic break (three or more "-", "*" or "_", and
// spaces).
func isHeadingOrBreak(t []byte) bool {
	t = bytes.TrimRight(t, "\r\n")
	hashes := 0
	for hashes < len(t) && t[hashes] == '#' {
		hashes++
	}
	if hashes >= 1 && hashes <= 6 && (hashes == len(t) || t[hashes] == ' ' || t[hashes] == '\t') {
		return true
	}
	if len(t) == 0 || t[0] != '-' && t[0] != '*' && t[0] != '_' {
		return false
	}
	marks := 0
	for _, c := range t {
		switch c {
		case t[0]:
			marks++
		case ' ', '\t':
		default:
			return false
		}
	}
	return marks >= 3
}

// indentCols is how many columns of space line begins with, tabs to the
// next multiple of four.
func indentCols(line []byte) int {
	cols := 0
	for _, c := range line {
		switch c {
		case ' ':
			cols++
		case '\t':
			cols += 4 - cols%4
		default:
			return cols
		}
	}
	return cols
}

// stripCols is line without its first cols columns of space (a tab that
// spans the cut leaves its remaining columns as spaces).
func stripCols(line []byte, cols int) []byte {
	at := 0
	for i, c := range line {
		if at >= cols {
			return line[i:]
		}
		switch c {
		case ' ':
			at++
		case '\t':
			at += 4 - at%4
			if at > cols {
				return append(bytes.Repeat([]byte{' '}, at-cols), line[i+1:]...)
			}
		default:
			return line[i:]
		}
	}
	return nil
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
