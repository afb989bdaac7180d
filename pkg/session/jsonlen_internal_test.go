package session

import (
	"math/rand/v2"
	"testing"
)

// stringJSONLen measures what appendString writes, for any bytes.
func TestStringJSONLen(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "\x00", "\n", "\t", "\"", "\\", "\x1f", "é", "\u2028", "\xff", "\xe2\x82", "😀", "<"}
	for range 2000 {
		var s string
		for range rng.IntN(40) {
			s += alphabet[rng.IntN(len(alphabet))]
		}
		if got, want := stringJSONLen(s), len(appendString(nil, s)); got != want {
			t.Fatalf("stringJSONLen(%q) = %d, appendString writes %d", s, got, want)
		}
	}
	m := Message{Role: RoleUser, Content: TextContent("\x00\x00 text"), CreatedAt: "2026-01-02T03:04:05Z"}
	if got, want := jsonSize(&m), len(m.AppendJSON(nil)); got != want {
		t.Errorf("jsonSize = %d, AppendJSON writes %d", got, want)
	}
}
