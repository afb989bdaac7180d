package session

import (
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	titleMaxChars     = 64
	titleBaseMaxChars = 32
	heuristicMaxWords = 8
)

// titleBase is the project's basename reduced to [A-Za-z0-9_-], at most 32
// chars; "session" when nothing is left.
func titleBase(project string) string {
	p := strings.TrimRight(project, "/")
	base := ""
	if p != "" {
		base = path.Base(p)
	}
	if base == "/" || base == "." {
		base = ""
	}
	var b strings.Builder
	for _, r := range base {
		if r < utf8.RuneSelf && (r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > titleBaseMaxChars {
		s = s[:titleBaseMaxChars]
	}
	if s == "" {
		return "session"
	}
	return s
}

// DefaultTitle is "<project basename>-<first two hex chars of id>".
func DefaultTitle(project, id string) string {
	var hex []byte
	for i := 0; i < len(id) && len(hex) < 2; i++ {
		c := id[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
			hex = append(hex, c)
		case c >= 'A' && c <= 'F':
			hex = append(hex, c+'a'-'A')
		}
	}
	if len(hex) < 2 {
		hex = []byte("00")
	}
	return titleBase(project) + "-" + string(hex)
}

// LooksLikeDefaultTitle recognises placeholder titles: the legacy
// "New session - …" shape and "<base>-xx".
func LooksLikeDefaultTitle(t, project string) bool {
	t = strings.TrimSpace(t)
	if strings.HasPrefix(t, "New session") {
		return true
	}
	rest, ok := strings.CutPrefix(t, titleBase(project)+"-")
	if !ok || len(rest) != 2 {
		return false
	}
	for i := 0; i < 2; i++ {
		if !isHex(rest[i]) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// InferTitleSource is what a store without title_source would guess.
func InferTitleSource(title, project string) TitleSource {
	if LooksLikeDefaultTitle(title, project) {
		return TitleDefault
	}
	return TitleGenerated
}

var titleFillers = []string{
	"please ", "pls ", "can you ", "could you ", "would you ", "help me ",
	"i need you to ", "i want you to ", "hey ", "hi ", "hello ",
}

// HeuristicTitle derives a title from a user's first prompt.
func HeuristicTitle(text string) string {
	var lines []string
	for l := range strings.Lines(text) { // as Rust's lines(): no empty last line
		lines = append(lines, l)
	}
	line := ""
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		// A bare "@path" mention says nothing about a multi-line prompt.
		if len(lines) > 1 && strings.HasPrefix(l, "@") && !strings.ContainsAny(l, " \t") {
			continue
		}
		line = l
		break
	}
	for stripped := true; stripped; {
		stripped = false
		for _, f := range titleFillers {
			if len(line) >= len(f) && strings.EqualFold(line[:len(f)], f) {
				line = strings.TrimLeft(line[len(f):], " ")
				stripped = true
			}
		}
	}
	words := strings.Fields(line)
	if len(words) > heuristicMaxWords {
		words = words[:heuristicMaxWords]
	}
	return SanitizeTitle(strings.Join(words, " "))
}

// SanitizeTitle trims, unwraps one pair of quotes, drops trailing
// punctuation (not '?'), turns control characters into spaces, collapses
// whitespace and caps the result at 64 chars.
func SanitizeTitle(raw string) string {
	t := strings.TrimSpace(raw)
	for _, q := range [][2]string{{`"`, `"`}, {`'`, `'`}, {"“", "”"}} {
		if len(t) >= len(q[0])+len(q[1]) && strings.HasPrefix(t, q[0]) && strings.HasSuffix(t, q[1]) {
			t = strings.TrimSpace(t[len(q[0]) : len(t)-len(q[1])])
			break
		}
	}
	t = strings.TrimRight(t, ".!:;, \t")
	t = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, t)
	t = strings.Join(strings.Fields(t), " ")
	if utf8.RuneCountInString(t) > titleMaxChars {
		r := []rune(t)
		t = string(r[:titleMaxChars-1]) + "…"
	}
	return t
}

// SetTitleManual sets a user's title; manual titles always win. It reports
// whether anything changed.
func (m *Meta) SetTitleManual(t string) bool {
	t = SanitizeTitle(t)
	if t == "" {
		return false
	}
	m.Title, m.TitleSource = t, TitleManual
	return true
}

// ApplyHeuristicTitle titles a session from a prompt, only while its title
// is the default.
func (m *Meta) ApplyHeuristicTitle(text string) bool {
	if !m.TitleSource.AllowsHeuristic() {
		return false
	}
	t := HeuristicTitle(text)
	if t == "" || t == m.Title {
		return false
	}
	m.Title, m.TitleSource = t, TitleHeuristic
	return true
}

// ApplyGeneratedTitle sets a model-written title unless a person chose one.
// The same title still marks the source generated, so nobody asks again.
func (m *Meta) ApplyGeneratedTitle(t string) bool {
	if !m.TitleSource.AllowsLLM() {
		return false
	}
	t = SanitizeTitle(t)
	if t == "" {
		return false
	}
	if t == m.Title {
		m.TitleSource = TitleGenerated
		return false
	}
	m.Title, m.TitleSource = t, TitleGenerated
	return true
}
