package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/cmd/internal/tooltest"
)

// wcRunner runs the wc commands against one store.
type wcRunner struct {
	t   *testing.T
	bin string
	env []string
}

func newRunner(t *testing.T, store string, direct bool) *wcRunner {
	env := append(tooltest.StoreEnv(t, store), "WC_DIRECT=", "WC_RESIDENT=")
	if direct {
		env = append(env, "WC_DIRECT=1")
	}
	return &wcRunner{t: t, bin: tooltest.Binaries(t), env: env}
}

// run runs a command with stdin and returns its stdout; it must succeed.
func (r *wcRunner) run(stdin string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command(filepath.Join(r.bin, args[0]), args[1:]...)
	cmd.Env = r.env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

func idOf(t *testing.T, line string) string {
	t.Helper()
	var v struct{ ID string }
	if err := json.Unmarshal([]byte(strings.SplitN(line, "\n", 2)[0]), &v); err != nil || v.ID == "" {
		t.Fatalf("no id in %q: %v", line, err)
	}
	return v.ID
}

// generate fills a store with sessions drawn from a seeded stream of what
// sessions go through: turns with tool calls, usage and cost, compactions
// (which leave pre-compact branches and shared tails), spilled tool
// output, marks, checkpoints and rewinds, undos (unnamed branches), forks,
// notes, unknown blocks, and Claude Code imports with their rewinds.
func generate(t *testing.T, r *wcRunner, fixtures string, sessions int) {
	rng := rand.New(rand.NewPCG(23, 1))
	for i := range sessions {
		id := idOf(t, r.run("", "wc-new", "--project", fmt.Sprintf("/src/p%d", i%3), "--system", fmt.Sprintf("You are agent %d.", i)))
		call := 0
		turns := 3 + rng.IntN(8)
		for turn := range turns {
			r.run(fmt.Sprintf("turn %d of session %d: please look at file%d.go", turn, i, rng.IntN(100)), "wc-append", id, "--role", "user")
			for range rng.IntN(3) {
				call++
				use := fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"reading"},{"type":"tooluse","id":"c%d","name":"read","input":{"path":"f%d.go"}},{"type":"x-future","v":%d}],"provider":{"sig":"s%d"}}`, call, call, call, call)
				r.run(use, "wc-append", id)
				size := 50 + rng.IntN(6000)
				if rng.IntN(6) == 0 {
					size = 70_000 // over Badger's 64 KB value threshold
				}
				r.run(strings.Repeat(fmt.Sprintf("line %d\n", call), size/7), "wc-append", id, "--role", "tool", "--tool-call-id", fmt.Sprintf("c%d", call), "--no-cap")
			}
			r.run(fmt.Sprintf("done with turn %d", turn), "wc-append", id, "--role", "assistant",
				"--usage", fmt.Sprintf(`{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":%d}`, 100+rng.IntN(900), rng.IntN(300), rng.IntN(50)),
				"--cost", fmt.Sprintf("0.00%d", 1+rng.IntN(9)))
			switch rng.IntN(9) {
			case 0:
				r.run("", "wc-branch", id, "mark", fmt.Sprintf("mark-%d", turn))
			case 1:
				r.run("", "wc-branch", id, "checkpoint", "--goal", "explore")
				r.run("", "wc-append", id, "--role", "user", "--text", "an exploration")
				if rng.IntN(2) == 0 {
					r.run("what the exploration found", "wc-branch", id, "rewind", "--report", "-")
				}
			case 2:
				r.run("", "wc-branch", id, "undo")
			case 3:
				r.run("", "wc-compact", id, "--spill")
			case 4:
				r.run("", "wc-compact", id, "--max-tokens", "2000")
			case 5:
				r.run("", "wc-append", id, "--note", "an agent note")
			case 6:
				r.run("", "wc-branch", id, "fork")
			}
		}
		if rng.IntN(3) == 0 {
			r.run("", "wc-compact", id, "--spill")
		}
	}
	files, err := filepath.Glob(filepath.Join(fixtures, "claude-code", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	r.run("", append([]string{"wc-new", "--sidechains"}, files...)...)
}

var blobRef = regexp.MustCompile(`wc-blob:([0-9a-f]{64})`)

// snapshot is what every export of every session says, and its blobs.
func snapshot(t *testing.T, r *wcRunner) map[string]string {
	out := map[string]string{"listing": r.run("", "wc-ls", "--json")}
	blobs := 0
	for _, line := range strings.Split(strings.TrimSpace(out["listing"]), "\n") {
		id := idOf(t, line)
		for _, f := range []string{"json", "markdown", "info"} {
			out[id+" "+f] = r.run("", "wc-export", id, "--format", f)
		}
		tree := r.run("", "wc-export", id, "--format", "jsonl", "--tree")
		out[id+" tree"] = tree
		out[id+" branches"] = r.run("", "wc-branch", id, "tree")
		out[id+" gc"] = r.run("", "wc-branch", id, "gc", "--dry-run")
		for _, m := range blobRef.FindAllStringSubmatch(tree, -1) {
			if _, ok := out[id+" blob "+m[1]]; !ok {
				out[id+" blob "+m[1]] = r.run("", "wc-export", id, "--blob", m[1])
				blobs++
			}
		}
	}
	if blobs == 0 {
		t.Fatal("the generated store holds no blob")
	}
	return out
}

// TestBackupRoundTrip backs up a generated store and restores it into an
// empty one: every session's exports (jsonl --tree, share JSON, markdown,
// info, its tree and what gc would free), every blob and the listing are
// byte for byte what they were.
func TestBackupRoundTrip(t *testing.T) {
	dir := t.TempDir()
	from := newRunner(t, filepath.Join(dir, "from"), false)
	generate(t, from, tooltest.Fixtures(t), 12)
	want := snapshot(t, from)
	if !strings.Contains(want["listing"], `"branches":`) || !regexp.MustCompile(`"branches":[1-9]`).MatchString(want["listing"]) {
		t.Fatal("no session of the generated store has a branch")
	}
	for _, what := range []string{`"checkpoint":`, `"cost":{"usd":0.0`, `"kind":"summary"`, `"kind":"note"`, `x-future`, `"forked_from"`} {
		found := false
		for _, v := range want {
			found = found || strings.Contains(v, what)
		}
		if !found {
			t.Errorf("nothing in the generated store has %s", what)
		}
	}
	backup := from.run(from.run("", "wc-ls", "--json"), "wc-export", "--format", "backup")
	file := filepath.Join(dir, "wc.backup")
	if err := os.WriteFile(file, []byte(backup), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, direct := range []bool{false, true} {
		to := newRunner(t, filepath.Join(dir, fmt.Sprintf("to-%v", direct)), direct)
		restored := to.run("", "wc-new", "--restore", file)
		if n := strings.Count(restored, "\n"); n != strings.Count(want["listing"], "\n") {
			t.Fatalf("restored %d sessions, want %d", n, strings.Count(want["listing"], "\n"))
		}
		got := snapshot(t, to)
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range want {
				if !yield(k) {
					return
				}
			}
		})
		for _, k := range keys {
			if got[k] != want[k] {
				t.Errorf("direct=%v: %s differs after the restore:\n got %.300q\nwant %.300q", direct, k, got[k], want[k])
			}
		}
		if len(got) != len(want) {
			t.Errorf("direct=%v: %d exports after the restore, want %d", direct, len(got), len(want))
		}
		// The restored store backs up to the same bytes.
		if again := to.run(to.run("", "wc-ls", "--json"), "wc-export", "--format", "backup"); again != backup {
			t.Errorf("direct=%v: the restored store's backup differs from the backup", direct)
		}
	}
}
