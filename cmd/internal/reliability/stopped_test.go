package reliability

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A store process can be stopped (SIGSTOP, Ctrl-Z in the terminal that
// runs wc-store by hand, a debugger) while it holds the store. Every
// command that waits for it waits no longer than its --lock-timeout and
// then exits 75 naming that process; SIGINT and SIGTERM end a command that
// waits for the store, or reads, at once; and once the process goes on,
// so do the commands.

// stopResident starts a resident store process for r's store and stops
// it; the returned function continues it.
func stopResident(t *testing.T, r *runner) (pid int, cont func()) {
	t.Helper()
	r.must(nil, "wc-ls")
	pid = residentOf(t, r.store)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The stop takes every thread a moment after kill returns.
	for deadline := time.Now().Add(30 * time.Second); !allStopped(pid); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("store process %d does not stop", pid)
		}
	}
	stopped := true
	cont = func() {
		if stopped {
			stopped = false
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(cont)
	return pid, cont
}

// allStopped reports whether every thread of pid is stopped.
func allStopped(pid int) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	for _, task := range tasks {
		stat, err := os.ReadFile(task)
		i := strings.LastIndexByte(string(stat), ')')
		if err != nil || i < 0 || i+2 >= len(stat) || stat[i+2] != 'T' && stat[i+2] != 't' {
			return false
		}
	}
	return len(tasks) > 0
}

// waitSignaled waits for a command a signal should end and reports the
// signal that ended it. The bound only turns a command that ignored the
// signal into a failure: its lock timeout is far longer.
func waitSignaled(t *testing.T, p *proc) syscall.Signal {
	t.Helper()
	done := make(chan struct{})
	go func() {
		p.err = p.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("%s still ran 60 s after the signal", p.name)
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	t.Fatalf("%s was not ended by a signal: %v", p.name, p.result())
	return 0
}

// inWait lets a command reach its wait for the store: not timing it.
func inWait() { time.Sleep(300 * time.Millisecond) }

func TestStoppedStoreProcess(t *testing.T) {
	r := newRunner(t, filepath.Join(t.TempDir(), "store")).resident().withEnv(longIdle)
	id := idOf(r.must(nil, "wc-new", "--title", "held"))
	pid, cont := stopResident(t, r)

	noAnswer := regexp.MustCompile(fmt.Sprintf(`\A(wc-\w+): store \S+ is busy: its store process \(pid %d\) did not answer within \S+\n`+
		`wc-\w+: hint: if process %d is stopped, continue it \(kill -CONT %d\); wc-store --stop, or kill %d, ends it\n\z`, pid, pid, pid, pid))
	held := regexp.MustCompile(fmt.Sprintf(`\A(wc-\w+): store \S+ is busy \(timed out waiting for its lock, which process %d, wc-store, holds\)\n`+
		`wc-\w+: hint: raise --lock-timeout or WC_LOCK_TIMEOUT to wait longer; if process %d is stopped, continue it \(kill -CONT %d\)\n\z`, pid, pid, pid))
	for _, tc := range []struct {
		name string
		r    *runner
		args []string
		want *regexp.Regexp
	}{
		{"reader through it", r, []string{"wc-ls"}, noAnswer},
		{"writer through it", r, []string{"wc-append", id, "--text", "no"}, noAnswer},
		{"direct reader", r.direct(), []string{"wc-export", id}, held},
		{"direct writer", r.direct(), []string{"wc-append", id, "--text", "no"}, held},
		{"batch", r, []string{"wc-compact", "--all", "--max-tokens", "100"}, held},
		{"wc-store --stop", r, []string{"wc-store", "--stop"}, noAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.r.run(nil, tc.args[0], append(tc.args[1:], "--lock-timeout", "1s")...)
			if res.Code != 75 || res.Stdout != "" || !tc.want.MatchString(res.Stderr) {
				t.Errorf("%s against a stopped store process: %v", strings.Join(tc.args, " "), res)
			}
		})
	}

	// With a long lock timeout, SIGINT (a terminal's Ctrl-C, to the whole
	// process group) and SIGTERM (timeout(1), a supervisor: the command
	// alone) end a waiting command at once.
	for _, tc := range []struct {
		name  string
		r     *runner
		args  []string
		sig   syscall.Signal
		group bool
	}{
		{"reader, Ctrl-C", r, []string{"wc-ls"}, syscall.SIGINT, true},
		{"writer, SIGTERM", r, []string{"wc-append", id, "--text", "no"}, syscall.SIGTERM, false},
		{"direct writer, Ctrl-C", r.direct(), []string{"wc-append", id, "--text", "no"}, syscall.SIGINT, true},
		{"direct reader, SIGTERM", r.direct(), []string{"wc-export", id}, syscall.SIGTERM, false},
		{"batch, Ctrl-C", r, []string{"wc-compact", "--all", "--max-tokens", "100"}, syscall.SIGINT, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.r.withEnv("WC_LOCK_TIMEOUT=10m").start(nil, tc.args[0], tc.args[1:]...)
			inWait()
			target := p.cmd.Process.Pid
			if tc.group {
				target = -target
			}
			if err := syscall.Kill(target, tc.sig); err != nil {
				t.Fatal(err)
			}
			if got := waitSignaled(t, p); got != tc.sig {
				t.Errorf("%s ended by %v, not %v", strings.Join(tc.args, " "), got, tc.sig)
			}
		})
	}

	// Going on, it serves again, and nothing the refused writers sent is
	// in the store.
	cont()
	out := r.must(nil, "wc-export", id, "--format", "jsonl")
	if strings.Contains(out, `"no"`) {
		t.Errorf("a refused append is in the store:\n%s", out)
	}
	r.must(nil, "wc-append", id, "--text", "after")
	if out := r.must(nil, "wc-export", id, "--format", "text"); !strings.Contains(out, "after") || strings.Contains(out, "no\n") {
		t.Errorf("after it went on the session holds:\n%s", out)
	}
}

// TestReadersStopOnSignal (issue 23): a reader ends at once on SIGINT or
// SIGTERM, also while it writes into a pipe nobody reads (a pager read
// slowly, a stuck consumer): wc-ls | wc-export --format markdown, the
// signal sent to the pipeline's process group as a terminal's Ctrl-C is.
func TestReadersStopOnSignal(t *testing.T) {
	for _, mode := range []string{"direct", "resident"} {
		t.Run(mode, func(t *testing.T) {
			r := newRunner(t, filepath.Join(t.TempDir(), "store"))
			if mode == "direct" {
				r = r.direct()
			} else {
				r = r.resident().withEnv(longIdle)
			}
			id := idOf(r.must(nil, "wc-new", "--title", "long"))
			r.must((&gen{rng: rand.New(rand.NewPCG(7, 7))}).turns(40, 20000), "wc-append", id)
			for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
				rd, wr, err := os.Pipe() // never read
				if err != nil {
					t.Fatal(err)
				}
				ls := exec.Command(filepath.Join(r.bin, "wc-ls"))
				export := exec.Command(filepath.Join(r.bin, "wc-export"), "--format", "markdown")
				ls.Env, export.Env = r.env, r.env
				ls.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				if export.Stdin, err = ls.StdoutPipe(); err != nil {
					t.Fatal(err)
				}
				export.Stdout = wr
				if err := ls.Start(); err != nil {
					t.Fatal(err)
				}
				export.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: ls.Process.Pid}
				if err := export.Start(); err != nil {
					t.Fatal(err)
				}
				wr.Close()
				inWait()
				if err := syscall.Kill(-ls.Process.Pid, sig); err != nil {
					t.Fatal(err)
				}
				p := &proc{cmd: export, name: "wc-export"}
				if got := waitSignaled(t, p); got != sig {
					t.Errorf("wc-export in a pipeline ended by %v, not %v", got, sig)
				}
				_ = ls.Wait() // done already, or ended by the signal too
				rd.Close()
			}
		})
	}
}
