package session

import "strings"

// MessageContains reports whether any text of m contains needle: text,
// tool output, tool calls, thinking. With fold, needle must be lowercase.
func MessageContains(m *Message, needle string, fold bool) bool {
	match := func(s string) bool {
		if fold {
			return strings.Contains(strings.ToLower(s), needle)
		}
		return strings.Contains(s, needle)
	}
	if !m.Content.IsBlocks {
		return match(m.Content.Text)
	}
	for i := range m.Content.Blocks {
		b := &m.Content.Blocks[i]
		switch {
		case b.Raw != nil && match(string(b.Raw)),
			match(b.Text), match(b.ResultText()), match(b.Name), match(string(b.Input)), match(b.Data):
			return true
		}
	}
	return false
}
