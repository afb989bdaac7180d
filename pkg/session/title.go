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

// HeuristicTitle derives a title from a user's first prompt, as whycodes'
// heuristic_title: the first meaningful line, leading fillers stripped, at
// most eight words.
func HeuristicTitle(text string) string {
	words := strings.Fields(stripLeadingFiller(firstMeaningfulLine(text)))
	if len(words) > heuristicMaxWords {
		words = words[:heuristicMaxWords]
	}
	return SanitizeTitle(strings.Join(words, " "))
}

// firstMeaningfulLine is the first non-empty trimmed line. In a prompt of
// several lines a bare "@path" line (no space in it: a tab does not count)
// says nothing and is passed over; when every line is one, the whole
// prompt is the title's text.
func firstMeaningfulLine(text string) string {
	lines := 0
	for range strings.Lines(text) { // as Rust's lines(): no empty last line
		lines++
	}
	for l := range strings.Lines(text) {
		l = strings.TrimSpace(l)
		if l == "" || lines > 1 && strings.HasPrefix(l, "@") && !strings.Contains(l, " ") {
			continue
		}
		return l
	}
	return strings.TrimSpace(text)
}

// stripLeadingFiller drops leading fillers, ignoring ASCII case. A filler
// ends in one space: after "please  " (two) the next word is not checked.
func stripLeadingFiller(s string) string {
	for stripped := true; stripped; {
		stripped = false
		for _, f := range titleFillers {
			if hasPrefixFoldASCII(s, f) {
				s, stripped = s[len(f):], true
				break
			}
		}
	}
	return strings.TrimSpace(s)
}

func hasPrefixFoldASCII(s, lowerPrefix string) bool {
	if len(s) < len(lowerPrefix) {
		return false
	}
	for i := 0; i < len(lowerPrefix); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lowerPrefix[i] {
			return false
		}
	}
	return true
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

// FirstUserText is whycodes' first_user_text: the text of the first user
// turn (its text, or its first text block), none when that is blank or
// has no text. Later turns are never looked at. Unlike whycodes, agent
// notes, compaction summaries and rewind reports are not the user's turn:
// after a compaction whycodes would answer with the summary.
func FirstUserText(msgs []Message) (string, bool) {
	o := Openings{SnippetChars: -1}
	for i := 0; i < len(msgs) && !o.Add(&msgs[i]); i++ {
	}
	return o.UserText, o.HasUserText
}

// FirstAssistantSnippet is whycodes' first_assistant_snippet: the first
// max chars of the first assistant message with text (its text blocks
// joined by spaces), trimmed.
func FirstAssistantSnippet(msgs []Message, max int) (string, bool) {
	o := Openings{SnippetChars: max}
	for i := 0; i < len(msgs) && !o.Add(&msgs[i]); i++ {
	}
	return o.Snippet, o.HasSnippet
}

// Openings gathers FirstUserText and FirstAssistantSnippet one message at
// a time from the root, so that a reader can stop at once.
type Openings struct {
	SnippetChars int // the snippet's length; -1: no snippet wanted
	UserText     string
	HasUserText  bool
	Snippet      string
	HasSnippet   bool
	userSeen     bool
}

// Add takes the path's next message and reports whether both are settled.
func (o *Openings) Add(m *Message) bool {
	switch {
	case !o.userSeen && m.IsUserTurn():
		o.userSeen = true
		if text, ok := m.AsText(); ok && strings.TrimSpace(text) != "" {
			o.UserText, o.HasUserText = text, true
		}
	case !o.HasSnippet && o.SnippetChars >= 0 && m.Role == RoleAssistant:
		text := m.Content.Text
		if m.Content.IsBlocks {
			var parts []string
			for _, b := range m.Content.Blocks {
				if b.Type == BlockText {
					parts = append(parts, b.Text)
				}
			}
			text = strings.Join(parts, " ")
		}
		if text = strings.TrimSpace(text); text != "" {
			o.Snippet, o.HasSnippet = text[:runeOffset(text, o.SnippetChars)], true
		}
	}
	return o.userSeen && (o.HasSnippet || o.SnippetChars < 0)
}

// UpgradeTitleFromHistory is whycodes' maybe_upgrade_title_from_history: a
// session still on its placeholder (a legacy "New session - …" or
// "project-ab") takes the heuristic title of its first user text. msgs
// is the active path, or as much of it as reaches its first user turn.
func (m *Meta) UpgradeTitleFromHistory(msgs []Message) bool {
	text, ok := FirstUserText(msgs)
	return ok && m.ApplyHeuristicTitle(text)
}
