package session

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// The word-at-a-time scans must agree with their byte loops on every
// byte value at every position.
func TestWordScans(t *testing.T) {
	naiveControls := func(b []byte) bool {
		for _, c := range b {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f || c == 0xc2 {
				return true
			}
		}
		return false
	}
	naiveSpecial := func(b []byte) int {
		for i, c := range b {
			if c == '"' || c == '\\' || c < 0x20 {
				return i
			}
		}
		return len(b)
	}
	naiveRun := func(s string, c byte) int {
		best, cur := 0, 0
		for i := 0; i < len(s); i++ {
			if s[i] == c {
				cur++
				best = max(best, cur)
			} else {
				cur = 0
			}
		}
		return best
	}
	rng := rand.New(rand.NewPCG(7, 7))
	harmless := []byte("a \t\n\r\x20\x21\x7e\x80\xc3`é")
	for range 20000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = harmless[rng.IntN(len(harmless))]
		}
		if len(b) > 0 && rng.IntN(2) == 0 {
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		if got, want := hasControls(b), naiveControls(b); got != want {
			t.Fatalf("hasControls(%q) = %v", b, got)
		}
		if got, want := nextSpecial(b), naiveSpecial(b); got != want {
			t.Fatalf("nextSpecial(%q) = %d, want %d", b, got, want)
		}
		if got, want := longestRunBytes(b, '`'), naiveRun(string(b), '`'); got != want {
			t.Fatalf("longestRunBytes(%q) = %d, want %d", b, got, want)
		}
	}
	if longestRunBytes([]byte(strings.Repeat("`", 9)+"x``"), '`') != 9 {
		t.Fatal("longestRunBytes")
	}
}

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
