package main

import (
	"debug/buildinfo"
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
// here.
func TestCommandsDoNotLinkTheStore(t *testing.T) {
	bin := tooltest.Binaries(t)
	for _, name := range tool.Commands {
		info, err := buildinfo.ReadFile(filepath.Join(bin, name))
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
	}
}
