package main

import (
	"debug/buildinfo"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/cmd/internal/tool"
	"github.com/wctoolkit/wc/cmd/internal/tooltest"
)

func TestMain(m *testing.M) { os.Exit(tooltest.Main(m)) }

func TestScripts(t *testing.T) { tooltest.RunScripts(t, "testdata") }

func TestManPage(t *testing.T) { tooltest.CheckManPage(t, &spec) }

// TestCommandsDoNotLinkTheStore: only wc-store and wc-compact link Badger.
// The others reach the store through wc-store and start in half the time;
// a change that imports the store into them, through any package, fails
// here. Nor do they link Go's crypto packages, whose initialisation cost
// each command 0.15 ms (see tool.NewID).
func TestCommandsDoNotLinkTheStore(t *testing.T) {
	bin := tooltest.Binaries(t)
	for _, name := range tool.Commands {
		path := filepath.Join(bin, name)
		info, err := buildinfo.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		links := false
		for _, dep := range info.Deps {
			links = links || strings.HasPrefix(dep.Path, "github.com/dgraph-io/badger")
		}
		if want := name == "wc-store" || name == "wc-compact"; links != want {
			t.Errorf("%s links Badger: %v, want %v", name, links, want)
		}
		if !links {
			if sym := firstSymbol(t, path, "crypto/"); sym != "" {
				t.Errorf("%s links %s", name, sym)
			}
		}
	}
}

// firstSymbol is the first symbol of the executable at path whose name
// starts with prefix, or "".
func firstSymbol(t *testing.T, path, prefix string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if strings.HasPrefix(s.Name, prefix) {
			return s.Name
		}
	}
	return ""
}
