package reliability

import (
	"testing"

	"github.com/wctoolkit/wc/cmd/internal/tooltest"
)

// TestSecurityScripts runs testdata/security-*.txtar: store permissions under
// umask 000, and no files outside the store.
func TestSecurityScripts(t *testing.T) { tooltest.RunScripts(t, "testdata") }
