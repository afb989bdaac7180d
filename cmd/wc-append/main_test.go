package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/wctoolkit/wc/cmd/internal/tooltest"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kvstore"
)

func TestMain(m *testing.M) { os.Exit(tooltest.Main(m)) }

func TestScripts(t *testing.T) { tooltest.RunScripts(t, "testdata") }

func TestManPage(t *testing.T) { tooltest.CheckManPage(t, &spec) }

// Random ids almost never share four hex digits, so this store is built
// by hand; the command under test is the real binary.
func TestAmbiguousPrefix(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := kvstore.Open(kvstore.Options{Dir: dir}, kvstore.Write)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)
	for _, id := range []string{"abcd0000-0000-4000-8000-000000000001", "abcd1111-0000-4000-8000-000000000002"} {
		m := session.New(id, "/p", "", now)
		if err := st.Commit(&m, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (stdout, stderr string, code int) {
		cmd := exec.Command(filepath.Join(tooltest.Binaries(t), args[0]), args[1:]...)
		cmd.Env = tooltest.StoreEnv(t, dir)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errOut.String(), code
	}
	before, _, _ := run("wc-export", "--format", "jsonl", "--tree", "abcd0", "abcd1")

	stdout, stderr, code := run("wc-append", "abcd", "--text", "hi")
	if code != 2 || stdout != "" {
		t.Errorf("exit %d, stdout %q; want 2 and nothing", code, stdout)
	}
	want := "wc-append: session prefix abcd is ambiguous (2 sessions match)\n" +
		"wc-append: hint: the candidates are:\n" +
		"wc-append: hint:   abcd0000-0000-4000-8000-000000000001  p-ab\n" +
		"wc-append: hint:   abcd1111-0000-4000-8000-000000000002  p-ab\n" +
		"wc-append: hint: give more hex digits of the id\n"
	if stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	// A longer prefix is unique again, and the failed run changed nothing.
	after, _, _ := run("wc-export", "--format", "jsonl", "--tree", "abcd0", "abcd1")
	if after != before {
		t.Errorf("the store changed: %q -> %q", before, after)
	}
	if _, stderr, code := run("wc-append", "abcd1", "--text", "hi"); code != 0 {
		t.Errorf("unique prefix: exit %d: %s", code, stderr)
	}
}

// The printed line is what encoding/json would write for it.
func TestAppendResultJSON(t *testing.T) {
	now := time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)
	m := session.New("3f2a9c1e-4b7d-4e2a-9f1c-0123456789ab", "/home/dev/<src>&\u2028", "a \"title\"", now)
	m.ForkedFrom = &session.ForkOrigin{ID: "5a1b", Seq: 3}
	m.Cost.USD = 1e-7
	for _, r := range []appendResult{
		{Info: m.Info(), Appended: []uint64{}},
		{Info: m.Info()},
		{Info: m.Info(), Appended: []uint64{4, 5, 18446744073709551615}, Capped: 2},
	} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
		if got := string(r.AppendPrintJSON(nil)) + "\n"; got != want.String() {
			t.Errorf("printed\n%s\nencoding/json writes\n%s", got, want.String())
		}
	}
}

// A command that waits for the store has changed nothing, and a signal
// ends it at once (issue 19, item 4): here SIGINT, SIGTERM and SIGHUP,
// each to a command waiting for the store's lock, which nothing appends.
// (Once it writes it ignores them: cmd/internal/command's
// TestWritesIgnoreSignals.)
func TestSignalsEndAWaitingAppend(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := kvstore.Open(kvstore.Options{Dir: dir}, kvstore.Write)
	if err != nil {
		t.Fatal(err)
	}
	const id = "abcd0000-0000-4000-8000-000000000001"
	m := session.New(id, "/p", "", time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC))
	if err := st.Commit(&m, nil); err != nil {
		t.Fatal(err)
	}
	// st holds the lock: the command's private store process waits for it.
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		cmd := exec.Command(filepath.Join(tooltest.Binaries(t), "wc-append"), id, "--text", "hi", "--lock-timeout", "10m")
		cmd.Env = append(tooltest.StoreEnv(t, dir), "WC_DIRECT=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // started, and waiting
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != sig {
			t.Errorf("%v to a waiting wc-append: %v, want its end by the signal", sig, err)
		}
	}
	if n, err := st.Node(id, 1); err == nil {
		t.Errorf("a signalled append was stored: %+v", n)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}
