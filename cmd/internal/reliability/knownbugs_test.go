package reliability

import (
	"testing"

	"github.com/wctoolkit/wc/cmd/internal/tooltest"
)

// TestKnownBugs runs testdata/knownbugs/*.txtar: product bugs these suites
// found, each a script that states what must hold and fails until the bug
// is fixed (the header of each script says what is wrong and where to fix
// it). They are skipped unless WC_KNOWN_BUGS=1, which also makes the crash
// suite fail instead of working around the empty-log-file bug. Once a
// script passes, move it to the command's testdata.
func TestKnownBugs(t *testing.T) {
	if !strictKnownBugs {
		t.Skip("known product bugs; WC_KNOWN_BUGS=1 runs them (and they fail until fixed)")
	}
	tooltest.RunScripts(t, "testdata/knownbugs")
}
