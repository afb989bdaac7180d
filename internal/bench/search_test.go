package bench_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSearchQuick runs scripts/search-bench.sh in its quick mode and checks
// that every row is there and that wc-ls --grep and --search found the same
// sessions as grep -rlF, an SQL instr() and FTS5; never a timing.
func TestSearchQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every program and runs the search benchmark")
	}
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Fatal("the search benchmark needs sqlite3 (with FTS5)")
	}
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	mod := filepath.Dir(strings.TrimSpace(string(root)))
	bin := t.TempDir()
	build := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", bin+string(filepath.Separator),
		"./cmd/...", "./internal/bench/wcbench")
	build.Dir = mod
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var stdout, stderr bytes.Buffer
	run := exec.Command("sh", "scripts/search-bench.sh", "-quick")
	run.Dir = mod
	run.Env = append(run.Environ(), "SEARCH_BIN="+bin, "SEARCH_DIR="+t.TempDir())
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("search-bench.sh -quick: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		`(?m)^\| wc-ls --grep "login test" \(resident\) \| [0-9.]+ ms .*\| grep -rlF: [0-9.]+ ms`,
		`(?m)^\| wc-ls --grep "login test" \(direct\) \|`,
		`(?m)^\| wc-ls --search '"login test"', all \(resident\) \| .*\| FTS5 MATCH: `,
		`(?m)^\| wc-ls --search 'pars\*' -n 20, ranked \+ snippet \(resident\) \|`,
		`(?m)^\| wc-append, index on \(direct\) \| .*\| sqlite3 insert: `,
		`(?m)^index: [0-9]+ bytes, [0-9.]+% of the messages \(FTS5: [0-9]+ bytes`,
		`(?m)^index build \(the first --grep\): [0-9.]+ s`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no line matches %s in\n%s", want, out)
		}
	}
	if n := strings.Count(out, ": identical ("); n != 11 || strings.Contains(out, "DIFFERENT") {
		t.Errorf("%d comparisons identical, want 11:\n%s", n, out)
	}
}
