package badgerkv

import (
	"strings"
	"testing"
)

// Badger's cache advice, printed every minute of a long batch, is dropped;
// other warnings pass, one line each.
func TestWarnLoggerDropsCacheAdvice(t *testing.T) {
	var buf strings.Builder
	l := warnLogger{w: &buf}
	l.Warningf("%s might be too small. Metrics: %s\n", "Block cache", "hit: 1 miss: 99")
	l.Warningf("Cache life expectancy (in seconds): %+v\n", "histogram\nlines")
	l.Warningf("While running doCompact: %v\n", "disk full")
	if got, want := buf.String(), "wc: badger: While running doCompact: disk full\n"; got != want {
		t.Errorf("logged %q, want %q", got, want)
	}
}
