package session

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// runeCount must agree with utf8.RuneCountInString on any bytes, valid
// UTF-8 or not, whatever the word alignment.
func TestRuneCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	pieces := []string{"a", "abcdefgh", "é", "中", "𝄞", "\x80", "\xc3", "\xe4\xb8", "\xff", "\n"}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		if got, want := runeCount(s), utf8.RuneCountInString(s); got != want {
			t.Fatalf("runeCount(%q) = %d, want %d", s, got, want)
		}
	}
}

// trimPathPunct must agree with the strings.Trim it replaces.
func TestTrimPathPunct(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	pieces := []string{",", ";", ")", "(", `"`, "'", "`", "[", "]", "a", "/", ".", "é", "\xff", " "}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		if got, want := trimPathPunct(s), strings.Trim(s, ",;)(\"'`[]"); got != want {
			t.Fatalf("trimPathPunct(%q) = %q, want %q", s, got, want)
		}
	}
}
