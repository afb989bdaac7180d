package render

import (
	"math/rand/v2"
	"strings"
	"testing"
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
		if got, want := longestRunBytes(b, '`'), naiveRun(string(b), '`'); got != want {
			t.Fatalf("longestRunBytes(%q) = %d, want %d", b, got, want)
		}
	}
	if longestRunBytes([]byte(strings.Repeat("`", 9)+"x``"), '`') != 9 {
		t.Fatal("longestRunBytes")
	}
}
