package textindex

import (
	"unicode"
	"unicode/utf8"

	"github.com/wctoolkit/wc/pkg/session"
)

// wordRune reports a rune that is part of a word: letters, digits and the
// marks that combine with them. It depends on the rune alone, so a
// substring of a text splits into words as the text does, apart from its
// two ends (what GrepPlan relies on).
func wordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// Words calls fn with each word of text, lowercased rune by rune as
// strings.ToLower does, with its byte offsets in text.
func Words(text string, fn func(word string, start, end int)) {
	var buf []byte
	start := -1
	ascii := true
	flush := func(end int) {
		if ascii {
			fn(lowerASCII(text[start:end], &buf), start, end)
		} else {
			buf = buf[:0]
			for _, r := range text[start:end] {
				buf = utf8.AppendRune(buf, unicode.ToLower(r))
			}
			fn(string(buf), start, end)
		}
		start, ascii = -1, true
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			w := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
			if w && start < 0 {
				start = i
			} else if !w && start >= 0 {
				flush(i)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if r != utf8.RuneError && wordRune(r) {
			if start < 0 {
				start = i
			}
			ascii = false
		} else if start >= 0 {
			flush(i)
		}
		i += n
	}
	if start >= 0 {
		flush(len(text))
	}
}

// lowerASCII is s lowercased, s itself when it has no capital.
func lowerASCII(s string, buf *[]byte) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := append((*buf)[:0], s...)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			*buf = b
			return string(b)
		}
	}
	return s
}

// HasWord reports whether text holds a word at all.
func HasWord(text string) bool {
	found := false
	Words(text, func(string, int, int) { found = true })
	return found
}

// MessageFields calls fn with each text of m that session.MessageContains
// searches, in the same order: a substring of a message lies within one
// of them.
func MessageFields(m *session.Message, fn func(text string)) {
	if !m.Content.IsBlocks {
		fn(m.Content.Text)
		return
	}
	for i := range m.Content.Blocks {
		b := &m.Content.Blocks[i]
		if b.Raw != nil {
			fn(string(b.Raw))
		}
		for _, s := range []string{b.Text, b.ResultText(), b.Name, string(b.Input), b.Data} {
			if s != "" {
				fn(s)
			}
		}
	}
}
