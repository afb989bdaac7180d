package main

import (
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/cmd/internal/command"
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
	for _, name := range command.Commands {
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

// badgerkv is the one package that may import Badger.
const badgerkv = "github.com/wctoolkit/wc/pkg/session/store/badgerkv"

// TestOnlyBadgerkvImportsBadger: no other package of the module imports
// Badger, and only wc-store and wc-compact depend on it (go list -deps,
// the build's view, beside the binaries' own in
// TestCommandsDoNotLinkTheStore).
func TestOnlyBadgerkvImportsBadger(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "github.com/wctoolkit/wc/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, "github.com/dgraph-io/badger") && pkg != badgerkv {
				t.Errorf("%s imports %s: only the Badger engine (pkg/session/store/badgerkv) may", pkg, imp)
			}
		}
	}
	for _, name := range command.Commands {
		out, err := exec.Command("go", "list", "-deps", "github.com/wctoolkit/wc/cmd/"+name).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", name, err)
		}
		links := false
		for _, dep := range strings.Fields(string(out)) {
			links = links || strings.HasPrefix(dep, "github.com/dgraph-io/badger")
		}
		if want := name == "wc-store" || name == "wc-compact"; links != want {
			t.Errorf("%s depends on Badger: %v, want %v", name, links, want)
		}
	}
}
