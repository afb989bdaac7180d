package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/cmd/internal/tooltest"
)

// TestInterruptedBatch sends SIGINT during a batch: the sessions it
// finished are printed, the others are untouched, and it says where it
// stopped and exits 130. Where the signal lands varies; the invariant does not.
func TestInterruptedBatch(t *testing.T) {
	bin := tooltest.Binaries(t)
	store := filepath.Join(t.TempDir(), "store")
	env := tooltest.StoreEnv(t, store)
	// 300 sessions from one wc-new, so the batch outlasts the signal's delay.
	var msgs []string
	body := strings.Repeat("z", 3000)
	for i := 0; i < 12; i++ {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"q%d"}`, i),
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"tooluse","id":"t%d","name":"bash","input":{}}]}`, i),
			fmt.Sprintf(`{"role":"tool","tool_call_id":"t%d","content":"%s"}`, i, body))
	}
	share := []byte(`{"messages":[` + strings.Join(msgs, ",") + `]}`)
	create := exec.Command(filepath.Join(bin, "wc-new"), tooltest.ImportArgs(t, 300, share)...)
	create.Env = env
	out, err := create.Output()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		ids = append(ids, gjson.Get(line, "id").Str)
	}
	// A signal before the batch has the store ends the command at once,
	// having changed nothing (the man page's SIGNALS); that is checked too,
	// and the signal sent later until it lands inside the batch.
	for _, delay := range []time.Duration{150 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second} {
		lines, early := interruptBatch(t, bin, env, ids, delay)
		checkCompacted(t, bin, env, ids, lines)
		if !early {
			t.Logf("signal landed after %d of %d sessions", len(lines), len(ids))
			return
		}
		t.Logf("signal after %v landed before the batch had the store", delay)
	}
	t.Fatal("the signal never landed inside the batch")
}

// interruptBatch runs wc-compact --all, sends SIGINT after delay, and
// returns the lines it printed, and whether the signal ended it before its
// batch began.
func interruptBatch(t *testing.T, bin string, env, ids []string, delay time.Duration) (lines []string, early bool) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "wc-compact"), "--all", "--max-tokens", "2000")
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(delay) // to land the signal somewhere in the batch, not to assert a duration
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if stdout.Len() > 0 {
		lines = strings.Split(strings.TrimSpace(stdout.String()), "\n")
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		if ws.Signal() != syscall.SIGINT || stdout.Len() > 0 || stderr.Len() > 0 {
			t.Fatalf("ended by %v with stdout %q, stderr %q; want SIGINT and nothing printed", ws.Signal(), stdout.String(), stderr.String())
		}
		return nil, true
	}
	if err == nil {
		if len(lines) != len(ids) {
			t.Fatalf("finished with %d lines for %d sessions", len(lines), len(ids))
		}
		return lines, false
	}
	want := fmt.Sprintf("wc-compact: interrupted after %d of %d sessions\n", len(lines), len(ids))
	if stderr.String() != want {
		t.Fatalf("stderr %q, want %q", stderr.String(), want)
	}
	// As a shell reports a command that SIGINT ended.
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit status %d, want 130", code)
	}
	return lines, false
}

// checkCompacted checks that exactly the sessions printed were compacted.
func checkCompacted(t *testing.T, bin string, env, ids, lines []string) {
	t.Helper()
	printed := map[string]bool{}
	for _, l := range lines {
		printed[gjson.Get(l, "id").Str] = true
	}
	for _, id := range ids {
		info := exec.Command(filepath.Join(bin, "wc-export"), id, "--format", "info")
		info.Env = env
		out, err := info.Output()
		if err != nil {
			t.Fatal(err)
		}
		compacted := gjson.GetBytes(out, "branches").Int() == 1
		if compacted != printed[id] {
			t.Errorf("session %s: compacted %v, printed %v", id, compacted, printed[id])
		}
	}
}
