package session_test

import (
	"testing"

	"github.com/wctoolkit/wc/internal/wirecheck/sessioncheck"
	"github.com/wctoolkit/wc/pkg/session"
)

// TestGeneratedSessionsWire holds every session the compaction property
// tests generate, and its compaction, to what faces outward: the request
// bodies of each provider, the share whycodes loads and its round trip.
func TestGeneratedSessionsWire(t *testing.T) {
	cpForEach(t, true, func(t *testing.T, g *cpGen, sys string, in []session.Message) {
		m, tree := buildSession(t, "/src/app", sys, in...)
		sessioncheck.Session(t, "generated", &m, tree)
		if g.r.IntN(2) == 0 { // half of them compacted too: the share of a long session costs
			return
		}
		budget := 1 + g.r.Uint64N(session.PathTokens(sys, in)+1)
		got, _ := session.Compact(sys, in, budget, t0)
		m, tree = buildSession(t, "/src/app", sys, got...)
		sessioncheck.Session(t, "compacted", &m, tree)
	})
}
