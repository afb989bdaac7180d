package reliability

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wctoolkit/wc/cmd/internal/tooltest"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
)

func TestMain(m *testing.M) {
	if listenIfAsked() { // the ownership suite's attacker (owner_test.go)
		return
	}
	os.Exit(tooltest.Main(m))
}

// The cases the resident store process must survive now that commands go
// through it by default. Every resident process here idles for 10 minutes
// (WC_RESIDENT_IDLE), so that one which stops did so for the reason under
// test; the bounds on waiting only turn a hang into a failure.

const longIdle = "WC_RESIDENT_IDLE=10m"

// residentOf is the one resident process serving storeDir.
func residentOf(t testing.TB, storeDir string) int {
	t.Helper()
	pids := residentPIDs(storeDir)
	if len(pids) != 1 {
		t.Fatalf("resident processes of %s: %v, want one", storeDir, pids)
	}
	return pids[0]
}

// waitExit waits for a process to end.
func waitExit(t testing.TB, pid int, why string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("resident process %d still runs 30 s after %s", pid, why)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// exeOf is the program a process runs.
func exeOf(pid int) string {
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return strings.TrimSuffix(exe, " (deleted)")
}

// listFiles names every file under dir with its size and modification time.
func listFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %d %v", path, fi.Size(), fi.ModTime().UnixNano()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// pathTexts is the text of every message on the active path of session id.
func pathTexts(t testing.TB, dir, id string) []string {
	t.Helper()
	st, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := st[id]
	if !ok {
		t.Fatalf("session %s is not in %s", id, dir)
	}
	fatalErrs(t, "the session is inconsistent", s.check())
	path, _ := s.path(s.meta.Head)
	var texts []string
	for _, n := range path {
		texts = append(texts, n.msg.Content.Text)
	}
	return texts
}

// TestResidentStoreRemoved: CI jobs and tests remove their store right after
// use. A resident process whose store directory is removed, moved away or
// replaced by a fresh store stops at once, never recreates the directory
// and never writes into what now sits at its path; what it acknowledged is
// in the directory it served, wherever that went.
func TestResidentStoreRemoved(t *testing.T) {
	for _, how := range []string{"removed", "moved", "replaced"} {
		t.Run(how, func(t *testing.T) {
			base := t.TempDir()
			r := newRunner(t, filepath.Join(base, "store")).resident().withEnv(longIdle)
			id := idOf(r.must(nil, "wc-new", "--title", how))
			r.must(nil, "wc-append", id, "--text", "acknowledged")
			pid := residentOf(t, r.store)
			switch how {
			case "removed":
				// rm -rf: fails if the process writes a file meanwhile.
				if err := os.RemoveAll(r.store); err != nil {
					t.Fatalf("rm -rf of the store: %v", err)
				}
				waitExit(t, pid, "its store was removed")
				if _, err := os.Lstat(r.store); err == nil {
					t.Fatal("the removed store directory is back")
				}
			case "moved":
				moved := filepath.Join(base, "moved")
				if err := os.Rename(r.store, moved); err != nil {
					t.Fatal(err)
				}
				waitExit(t, pid, "its store was moved")
				if got := pathTexts(t, moved, id); !slices.Equal(got, []string{"acknowledged"}) {
					t.Errorf("the moved store holds %q", got)
				}
			case "replaced":
				old := filepath.Join(base, "old")
				if err := os.Rename(r.store, old); err != nil {
					t.Fatal(err)
				}
				fresh := idOf(r.direct().must(nil, "wc-new", "--title", "fresh"))
				before := listFiles(t, r.store)
				waitExit(t, pid, "its store was replaced")
				if after := listFiles(t, r.store); !slices.Equal(before, after) {
					t.Errorf("the old resident process wrote into the new store:\nbefore %q\nafter  %q", before, after)
				}
				st, err := readState(r.store)
				if err != nil || len(st) != 1 || st[fresh] == nil {
					t.Errorf("the new store holds %v (%v), want only %s", st.ids(), err, fresh)
				}
				if got := pathTexts(t, old, id); !slices.Equal(got, []string{"acknowledged"}) {
					t.Errorf("the old store holds %q", got)
				}
			}
		})
	}
}

// TestResidentStartRace: many first commands at once on a store that does
// not exist yet all start a resident process; one serves, the others see it
// and stop, and every command succeeds. Then the same while the resident
// process is stopping, when the next one must wait for its lock.
func TestResidentStartRace(t *testing.T) {
	const n = 12
	r := newRunner(t, filepath.Join(t.TempDir(), "store")).resident().withEnv(longIdle)
	race := func(args func(i int) []string) []string {
		outs := make([]string, n)
		var wg sync.WaitGroup
		var fails failures
		for i := range n {
			wg.Go(func() {
				a := args(i)
				res := r.run(nil, a[0], a[1:]...)
				if res.Code != 0 || res.Stderr != "" {
					fails.add("%s: %v", strings.Join(a, " "), res)
				}
				outs[i] = res.Stdout
			})
		}
		wg.Wait()
		fails.fatal(t, "racing first commands")
		return outs
	}
	outs := race(func(i int) []string { return []string{"wc-new", "--title", fmt.Sprintf("race-%d", i)} })
	// The losers stop by themselves right after they reported.
	for deadline := time.Now().Add(30 * time.Second); len(residentPIDs(r.store)) > 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("resident processes after the race: %v, want one", residentPIDs(r.store))
		}
	}
	residentOf(t, r.store)
	ids := make([]string, n)
	for i, out := range outs {
		ids[i] = idOf(out)
	}

	// Ask it to stop and race it: each command finds it stopping, or gone
	// with its lock still held, or a successor starting.
	if _, err := remote.Shutdown(r.store, 0); err != nil {
		t.Fatal(err)
	}
	race(func(i int) []string { return []string{"wc-append", ids[i], "--text", "after"} })
	tooltest.StopResidents(t, filepath.Dir(r.store))
	st, err := readState(r.store)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != n {
		t.Fatalf("%d sessions, want %d", len(st), n)
	}
	for _, id := range ids {
		fatalErrs(t, "after the race", st[id].check())
		if st[id].meta.MessageCount != 1 {
			t.Errorf("session %s holds %d messages, want 1", id, st[id].meta.MessageCount)
		}
	}
}

// TestResidentLongPath: a store path too long for a Unix socket's address
// is served all the same (the socket is reached through the directory).
func TestResidentLongPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("a-rather-long-directory-name/", 5), "store")
	if len(remote.SocketPath(dir)) <= 108 {
		t.Fatalf("the path is too short to test anything: %d bytes", len(remote.SocketPath(dir)))
	}
	r := newRunner(t, dir).resident().withEnv(longIdle)
	id := idOf(r.must(nil, "wc-new", "--title", "long"))
	r.must(nil, "wc-append", id, "--text", "far away")
	if out := r.must(nil, "wc-export", id, "--format", "text"); out != "User: far away\n" {
		t.Errorf("export: %q", out)
	}
	residentOf(t, r.store)
	tooltest.StopResidents(t, filepath.Dir(r.store))
	if got := pathTexts(t, r.store, id); !slices.Equal(got, []string{"far away"}) {
		t.Errorf("stored %q", got)
	}
}

// TestResidentUnwritableStore: a store this user may read but not write (a
// read-only copy, another user's store read with --other-owner) cannot be
// served by a resident process of ours; commands open it themselves and
// answer exactly as with WC_DIRECT=1, reads succeeding and writes failing,
// and no resident process is left behind. As root it runs the commands as
// nobody.
func TestResidentUnwritableStore(t *testing.T) {
	base, err := os.MkdirTemp("", "wc-unwritable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err == nil {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
		_ = os.RemoveAll(base)
	})
	r := newRunner(t, filepath.Join(base, "store"))
	id := idOf(r.direct().must(nil, "wc-new", "--title", "mine"))
	r.direct().must(nil, "wc-append", id, "--text", "hello")

	var cred *syscall.Credential
	if os.Getuid() == 0 {
		// Readable by nobody, writable by root only; the binaries too.
		// Another user's store is read only when asked for.
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		r = r.withEnv("WC_OTHER_OWNER=1")
		for _, dir := range []string{base, r.bin} {
			if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				mode := os.FileMode(0o644)
				if d.IsDir() || strings.HasPrefix(p, r.bin) {
					mode = 0o755
				}
				return os.Chmod(p, mode)
			}); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		if err := filepath.WalkDir(r.store, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			mode := os.FileMode(0o400)
			if d.IsDir() {
				mode = 0o500
			}
			return os.Chmod(p, mode)
		}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(rr *runner, args ...string) result {
		t.Helper()
		cmd := exec.Command(filepath.Join(rr.bin, args[0]), args[1:]...)
		cmd.Env = append(slices.Clone(rr.env), "TMPDIR=/tmp", "HOME=/nonexistent")
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		res := result{Stdout: stdout.String(), Stderr: stderr.String()}
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			res.Code = ee.ExitCode()
		case errors.Is(err, syscall.EPERM) && cred != nil:
			t.Skip("cannot run commands as another user here:", err)
		case err != nil:
			t.Fatal(err)
		}
		return res
	}
	before := listFiles(t, r.store)
	for _, args := range [][]string{
		{"wc-ls"},
		{"wc-export", id, "--format", "text"},
		{"wc-append", id, "--text", "refused"},
		{"wc-new", "--title", "refused"},
	} {
		def := run(r.resident().withEnv(longIdle), args...)
		direct := run(r.direct(), args...)
		if def != direct {
			t.Errorf("%s:\n by default: %v\n directly:   %v", strings.Join(args, " "), def, direct)
		}
		if args[0] == "wc-ls" || args[0] == "wc-export" {
			if def.Code != 0 || !strings.Contains(def.Stdout, "hello") && !strings.Contains(def.Stdout, "mine") {
				t.Errorf("%s could not read: %v", args[0], def)
			}
		} else if def.Code == 0 {
			t.Errorf("%s wrote into a store it may not write: %v", args[0], def)
		}
		if pids := residentPIDs(r.store); len(pids) > 0 {
			t.Errorf("%s left resident processes %v", args[0], pids)
		}
	}
	if after := listFiles(t, r.store); !slices.Equal(before, after) {
		t.Errorf("the store changed:\nbefore %q\nafter  %q", before, after)
	}
}

// buildTagged builds wc-new, wc-append, wc-ls and wc-store with the store's build tag
// set, into a directory of their own: a different build of the same code.
func buildTagged(t *testing.T, tag string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", dir+string(filepath.Separator),
		"-ldflags=-X github.com/wctoolkit/wc/pkg/session/store/wire.buildTag="+tag,
		"./cmd/wc-new", "./cmd/wc-append", "./cmd/wc-ls", "./cmd/wc-store")
	cmd.Dir = tooltest.ModuleRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// TestResidentOtherBuild: a resident process serves the commands of any
// build that speaks its protocol (go run's binaries, two installs on PATH)
// rather than making way at every command. It makes way when the program
// file it was started from is replaced by another of the same build (go
// build over it, go install), and the next command is served by a
// resident process of the new program.
func TestResidentOtherBuild(t *testing.T) {
	r := newRunner(t, filepath.Join(t.TempDir(), "store")).resident().withEnv(longIdle)
	other := *r
	other.bin = buildTagged(t, "other")
	id := idOf(other.must(nil, "wc-new", "--title", "builds"))
	first := residentOf(t, r.store)
	texts := []string{"from this build", "from the other build", "from this build again"}
	r.must(nil, "wc-append", id, "--text", texts[0])
	other.must(nil, "wc-append", id, "--text", texts[1])
	r.must(nil, "wc-append", id, "--text", texts[2])
	if now := residentOf(t, r.store); now != first {
		t.Errorf("the resident process changed with the builds: %d, then %d", first, now)
	}
	// turn appends with rr's program where a resident process of a
	// replaced program file serves.
	turn := func(rr runner, text string) {
		t.Helper()
		prev := residentOf(t, r.store)
		rr.must(nil, "wc-append", id, "--text", text)
		texts = append(texts, text)
		waitExit(t, prev, "its program file was replaced")
		now := residentOf(t, r.store)
		if exe := exeOf(now); filepath.Dir(exe) != rr.bin {
			t.Errorf("the new resident process runs %s, want a program in %s", exe, rr.bin)
		}
	}

	// go build writes a new file in place of the program of the resident
	// process, wc-store: the same build, but the process must make way.
	tooltest.StopResidents(t, filepath.Dir(r.store))
	copied := *r
	copied.bin = t.TempDir()
	install := func(name string) {
		t.Helper()
		program, err := os.ReadFile(filepath.Join(r.bin, name))
		if err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(copied.bin, "."+name+".new")
		if err := os.WriteFile(tmp, program, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(copied.bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	install("wc-append")
	install("wc-store")
	copied.must(nil, "wc-append", id, "--text", "from a copy")
	texts = append(texts, "from a copy")
	install("wc-store")
	turn(copied, "from a reinstalled copy")

	tooltest.StopResidents(t, filepath.Dir(r.store))
	if got := pathTexts(t, r.store, id); !slices.Equal(got, texts) {
		t.Errorf("stored %q, want %q", got, texts)
	}
}

// TestResidentClientKilled: a command killed at any moment while it talks to
// the resident process (sending a large commit, waiting for the lock,
// reading the answer) costs at most its own work: the process keeps
// serving, the lock the command held is free for the next one, and the
// session stays consistent with every acknowledged append in it.
func TestResidentClientKilled(t *testing.T) {
	r := newRunner(t, filepath.Join(t.TempDir(), "store")).resident().withEnv(longIdle)
	id := idOf(r.must(nil, "wc-new", "--title", "kills"))
	pid := residentOf(t, r.store)
	rng := rand.New(rand.NewPCG(3, 5))
	var batch bytes.Buffer
	for i := range 400 {
		fmt.Fprintf(&batch, `{"role":"user","content":"message %d %s"}`+"\n", i, strings.Repeat("x", 2000))
	}
	// Kills land anywhere in a command's life: from reading its input to
	// printing, as long as an append takes here.
	first := r.run(batch.Bytes(), "wc-append", id)
	if first.Code != 0 {
		t.Fatalf("append: %v", first)
	}
	span := int(first.Dur * 3)
	rounds := 30
	if testing.Short() {
		rounds = 8
	}
	acked, killed := 1, 0
	for round := range rounds {
		var procs []*proc
		for range 3 { // some wait for the lock while another commits
			p := r.start(batch.Bytes(), "wc-append", id)
			if rng.IntN(2) == 0 {
				p.killAfter(time.Duration(rng.IntN(span)))
			}
			procs = append(procs, p)
		}
		for _, p := range procs {
			res := p.wait()
			switch {
			case res.Killed:
				killed++
			case res.Code == 0:
				acked++
			default:
				t.Fatalf("round %d: an append that was not killed failed: %v", round, res)
			}
		}
	}
	res := r.run(nil, "wc-append", id, "--text", "after the kills")
	if res.Code != 0 {
		t.Fatalf("the append after the kills: %v", res)
	}
	if now := residentOf(t, r.store); now != pid {
		t.Errorf("the resident process changed from %d to %d", pid, now)
	}
	tooltest.StopResidents(t, filepath.Dir(r.store))
	// A killed append committed all of its batch or none of it, and every
	// acknowledged one did.
	texts := pathTexts(t, r.store, id)
	if batches := (len(texts) - 1) / 400; (len(texts)-1)%400 != 0 || batches < acked || batches > acked+killed {
		t.Errorf("%d messages stored; %d appends of 400 were acknowledged and %d killed, plus one message", len(texts), acked, killed)
	}
	if killed == 0 || acked == 0 {
		t.Errorf("%d appends killed and %d completed: the test showed nothing", killed, acked)
	}
	t.Logf("%d appends killed, %d completed", killed, acked)
}

// TestResidentTerminated: SIGTERM (a shutdown, kill) closes the store the
// way going idle does: the log is flushed into a table and the socket is
// gone, so the next open replays nothing.
func TestResidentTerminated(t *testing.T) {
	r := newRunner(t, filepath.Join(t.TempDir(), "store")).resident().withEnv(longIdle)
	id := idOf(r.must(nil, "wc-new", "--title", "term"))
	pid := residentOf(t, r.store)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitExit(t, pid, "SIGTERM")
	if walLeft(r.store) {
		t.Error("the resident process left its log to replay")
	}
	if _, err := os.Lstat(remote.SocketPath(r.store)); err == nil {
		t.Error("the socket is left behind")
	}
	if got := pathTexts(t, r.store, id); len(got) != 0 {
		t.Errorf("stored %q", got)
	}
}
