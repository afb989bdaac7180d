package record

import (
	"math/rand/v2"
	"testing"
)

// The word-at-a-time scans must agree with their byte loops on every
// byte value at every position.
func TestWordScans(t *testing.T) {
	naiveSpecial := func(b []byte) int {
		for i, c := range b {
			if c == '"' || c == '\\' || c < 0x20 {
				return i
			}
		}
		return len(b)
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
		if got, want := nextSpecial(b), naiveSpecial(b); got != want {
			t.Fatalf("nextSpecial(%q) = %d, want %d", b, got, want)
		}
	}
}
