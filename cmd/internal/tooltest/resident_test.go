package tooltest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestScriptsResident runs every command's scripts through the resident
// store process, so that both ways of opening the store meet one contract.
func TestScriptsResident(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(ModuleRoot(t), "cmd", "wc-*", "testdata"))
	if err != nil || len(dirs) < 6 {
		t.Fatalf("script directories: %v, %v", dirs, err)
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		t.Run(filepath.Base(filepath.Dir(dir)), func(t *testing.T) { RunScriptsResident(t, dir) })
	}
}
