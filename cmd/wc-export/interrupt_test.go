package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/wctoolkit/wc/cmd/internal/tooltest"
)

// TestReadersStopOnSignal: Ctrl-C stops wc-export and wc-ls at once, as it
// stops any reader, and the shell sees the signal (status 130 for SIGINT).
// Each is caught writing more than a pipe holds to a stdout that nobody
// reads: a command that ignored the signal would wait there for ever.
func TestReadersStopOnSignal(t *testing.T) {
	bin := tooltest.Binaries(t)
	store := filepath.Join(t.TempDir(), "store")
	env := tooltest.StoreEnv(t, store)
	dir := t.TempDir()
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, []byte(strings.Repeat("a line of the prompt\n", 20000)), 0o600); err != nil {
		t.Fatal(err)
	}
	// 300 sessions, so that wc-ls prints more than a pipe holds.
	run(t, store, nil, append([]string{"wc-new"}, tooltest.ImportArgs(t, 300, []byte(`{"messages":[{"role":"user","content":"q"}]}`))...)...)
	id := gjson.GetBytes(run(t, store, nil, "wc-new", "--title", "big"), "id").Str
	run(t, store, nil, "wc-append", id, "--role", "user", "--file", big)

	for _, direct := range []string{"", "1"} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			for _, argv := range [][]string{{"wc-export", id, "--format", "markdown"}, {"wc-ls", "--json"}} {
				what := fmt.Sprintf("%s with WC_DIRECT=%s, %v", strings.Join(argv, " "), direct, sig)
				cmd := exec.Command(filepath.Join(bin, argv[0]), argv[1:]...)
				cmd.Env = append(env, "WC_DIRECT="+direct)
				stdout, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				if _, err := stdout.Read(make([]byte, 1)); err != nil { // it is writing
					t.Fatalf("%s: %v", what, err)
				}
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				// If it ignores the signal, closing the pipe ends it (not by
				// the signal) rather than leaving the test waiting.
				stuck := time.AfterFunc(10*time.Second, func() { stdout.Close() })
				err = cmd.Wait()
				stuck.Stop()
				status, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
				if !ok || !status.Signaled() || status.Signal() != sig {
					t.Errorf("%s: %v, want the command stopped by the signal", what, err)
				}
			}
		}
	}
}
