package bench_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/pkg/session/store/etcdkv/etcdtest"
)

// TestQuickRun runs the benchmark as scripts/bench.sh does, in its quick
// mode, and checks that its table is complete and well-formed and that wc
// and its peers gave the same results; never a timing.
func TestQuickRun(t *testing.T) {
	checkTable(t, quickRun(t))
}

// TestQuickRunEtcd adds the etcd column, on a cluster of its own (the
// run compacts and defragments it): its rows are complete, and the
// commands on etcd gave what they gave on a directory.
func TestQuickRunEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every program and runs the benchmark")
	}
	c := etcdtest.StartCluster(t)
	out := quickRun(t, "-etcd", strings.Join(c.Endpoints, ","))
	checkTable(t, out)
	checkEtcdTable(t, out)
}

// quickRun builds the programs and runs the benchmark as scripts/bench.sh
// does, in its quick mode, with args added; it returns the table.
func quickRun(t *testing.T, args ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds every program and runs the benchmark")
	}
	bin := t.TempDir()
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	build := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", bin+string(filepath.Separator),
		"./cmd/...", "./internal/bench/wcbench")
	build.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var stdout, stderr bytes.Buffer
	run := exec.Command(filepath.Join(bin, "wcbench"), append([]string{"run", "-quick", "-bin", bin, "-work", t.TempDir(), "-rev", "test"}, args...)...)
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("wcbench run -quick: %v\n%s", err, stderr.String())
	}
	return stdout.String()
}

// The rows of the etcd column of a quick run (4 writers, 12 appends).
var etcdRows = []string{
	`append, store of 1 session of 10 msgs \(resident\)`,
	`append, store of 30 sessions \(resident\)`,
	`append, session of 200 msgs \(resident\)`,
	`list newest 50 of 30 \(resident\)`,
	`list --project \(\d+ of 30\), newest 50 \(resident\)`,
	`export markdown, \d+\.\d MB session \(resident\)`,
	`compact 10 sessions, \d+\.\d MB \(--all\)`,
	`4 writers, 12 appends to one session \(commands, resident\)`,
	`4 writers, 12 appends to one session \(commands, a wc-store each\)`,
	`4 writers, 12 appends to one session \(store level, a connection each\)`,
	`space per GB of sessions, before compaction and defrag`,
	`space per GB of sessions, after compaction and defrag`,
}

var etcdTarget = regexp.MustCompile(`^(<=3x sqlite (ok|FAIL)(, rounds \d+\.\d\d-\d+\.\d\dx)?` +
	`(, flat (ok|FAIL) \(\d+\.\d\dx(, rounds \d+\.\d\d-\d+\.\d\dx)?\))?` +
	`|<=20 ms (ok|FAIL)|\(no target\)` +
	`|none lost or doubled ok; (retries not visible to a command|\d+ commits refused as changed \(\d+\.\d\d per append\), \d+ transactions run again)` +
	`|dbSize \d+ MB, in use \d+ MB \(\d+\.\d\d GB per GB\), for \d+ MB of JSONL)$`)

func checkEtcdTable(t *testing.T, out string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	head := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "etcd column: a 3-member etcd cluster at ") && i+2 < len(lines) {
			head = i + 1
			break
		}
	}
	if head < 0 || head+2+len(etcdRows) > len(lines) {
		t.Fatalf("no etcd table in the output:\n%s", out)
	}
	wantHeader := []string{"operation", "etcd", "badger", "sqlite3", "badger/etcd", "sqlite/etcd", "RSS etcd", "RSS res", "target"}
	if got := columns.Split(strings.TrimSpace(lines[head]), -1); strings.Join(got, "|") != strings.Join(wantHeader, "|") {
		t.Errorf("etcd header %q, want %q", got, wantHeader)
	}
	rate := regexp.MustCompile(`^(\d+\.\d+ (ms|MB/s)|\d+\.\d/s|\d+\.\d\d GB)$`)
	for i, label := range etcdRows {
		cells := columns.Split(lines[head+2+i], -1)
		if len(cells) != len(wantHeader) {
			t.Errorf("etcd row %d has %d cells, want %d: %q", i, len(cells), len(wantHeader), lines[head+2+i])
			continue
		}
		if !regexp.MustCompile(`^` + label + `$`).MatchString(cells[0]) {
			t.Errorf("etcd row %d is %q, want %s", i, cells[0], label)
		}
		if !rate.MatchString(cells[1]) {
			t.Errorf("etcd row %q: etcd is %q", cells[0], cells[1])
		}
		if !etcdTarget.MatchString(cells[8]) {
			t.Errorf("etcd row %q: target %q", cells[0], cells[8])
		}
	}
	for _, check := range []string{"top-50 ids on etcd: identical", "markdown on etcd: identical",
		"compacted on etcd as on a directory: 10 of 10"} {
		if !strings.Contains(out, check) {
			t.Errorf("checks: no %q in\n%s", check, out)
		}
	}
}

// The rows of a quick run, in order: 30 sessions, a session of 200
// messages, a batch of 10.
var quickRows = []string{
	`append, store of 1 session of 10 msgs \(resident\)`,
	`append, store of 30 sessions \(resident\)`,
	`append, session of 200 msgs \(resident\)`,
	`append, store of 1 session of 10 msgs \(resident, cold\)`,
	`append, store of 30 sessions \(resident, cold\)`,
	`append, session of 200 msgs \(resident, cold\)`,
	`append, store of 1 session of 10 msgs \(direct\)`,
	`append, store of 30 sessions \(direct\)`,
	`append, session of 200 msgs \(direct\)`,
	`list newest 50 of 30 \(resident\)`,
	`list --project \(\d+ of 30\), newest 50 \(resident\)`,
	`export markdown, \d+\.\d MB session \(resident\)`,
	`compact 10 sessions, \d+\.\d MB \(default\)`,
	`search "login test" in 30 sessions \(resident\)`,
	`list newest 50 of 30 \(direct\)`,
	`list --project \(\d+ of 30\), newest 50 \(direct\)`,
	`export markdown, \d+\.\d MB session \(direct\)`,
	`compact 10 sessions, \d+\.\d MB \(direct\)`,
	`search "login test" in 30 sessions \(direct\)`,
	`agent loop: an append every 800ms, 30 sessions \(cold\)`,
	`cron job: compact --all, 10 compacted sessions \(cold\)`,
	`CI bot: new, 10 appends, export \(cold\)`,
}

var (
	columns = regexp.MustCompile(`\s{2,}`)
	figure  = regexp.MustCompile(`^\d+\.\d+ (ms|MB/s)$`)
	times   = regexp.MustCompile(`^\d+(\.\d+)?x$`)
	mebi    = regexp.MustCompile(`^\d+$`)
	target  = regexp.MustCompile(`^(<=sqlite|>=5x jq|>=100 MB/s|>=10x grep) (ok|FAIL)` +
		`(, rounds \d+\.\d\d-\d+\.\d\dx)?` +
		`(, flat (ok|FAIL) \(median \d+\.\d\dx, mean \d+\.\d\dx(, rounds \d+\.\d\d-\d+\.\d\dx)?\))?` +
		`; RSS<(64|256) (ok|FAIL)$`)
)

func checkTable(t *testing.T, out string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	head := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "operation ") {
			head = i
			break
		}
	}
	if head < 0 || head+2+len(quickRows) > len(lines) {
		t.Fatalf("no table in the output:\n%s", out)
	}
	wantHeader := []string{"operation", "wc", "jsonl+jq", "sqlite3", "jq/wc", "sqlite/wc", "RSS wc", "RSS res", "RSS jq", "RSS sql", "target"}
	if got := columns.Split(strings.TrimSpace(lines[head]), -1); strings.Join(got, "|") != strings.Join(wantHeader, "|") {
		t.Errorf("header %q, want %q", got, wantHeader)
	}
	if !strings.HasPrefix(lines[head-2], "wc benchmark, ") || !strings.Contains(lines[head-1], "mode: quick") {
		t.Errorf("no run header above the table:\n%s", strings.Join(lines[:head], "\n"))
	}
	for i, label := range quickRows {
		line := lines[head+2+i]
		cells := columns.Split(line, -1)
		if len(cells) != len(wantHeader) {
			t.Errorf("row %d has %d cells, want %d: %q", i, len(cells), len(wantHeader), line)
			continue
		}
		if !regexp.MustCompile(`^` + label + `$`).MatchString(cells[0]) {
			t.Errorf("row %d is %q, want %s", i, cells[0], label)
		}
		// A usage pattern has no jsonl side, and only wc's resident
		// process of the resident modes has an RSS of its own.
		pattern := i >= len(quickRows)-3
		for c, re := range map[int]*regexp.Regexp{1: figure, 2: figure, 3: figure, 4: times, 5: times, 6: mebi, 7: mebi, 8: mebi, 9: mebi} {
			cell := cells[c]
			if cell == "n/a" && ((pattern && (c == 2 || c == 4 || c == 8)) || c == 7) {
				continue
			}
			if !re.MatchString(cell) {
				t.Errorf("row %q: %s is %q", cells[0], wantHeader[c], cell)
			}
		}
		if !target.MatchString(cells[10]) {
			t.Errorf("row %q: target %q", cells[0], cells[10])
		}
	}
	if extra := lines[head+2+len(quickRows)]; strings.Contains(extra, "  ") && !strings.HasPrefix(extra, "wc, jsonl+jq") {
		t.Errorf("a row after the last one expected: %q", extra)
	}
	// wc and its peers must have given the same results.
	for _, check := range []string{"markdown: identical (", "compacted sessions identical: 10 of the first 10",
		"top-50 ids: identical", "sessions found by search: identical ("} {
		if !strings.Contains(out, check) {
			t.Errorf("checks: no %q in\n%s", check, out)
		}
	}
	if !regexp.MustCompile(`(?m)^sqlite3 INSERT with synchronous=FULL .*: one \d+\.\d\d ms; many \d+\.\d\d ms; big \d+\.\d\d ms;$`).MatchString(out) {
		t.Errorf("no synchronous=FULL line in\n%s", out)
	}
}
