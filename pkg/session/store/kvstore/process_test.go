package kvstore

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
)

var (
	crashID    = testID(0xc0ffee, 1)
	midCrashID = testID(0xc0ffee, 2)
)

func killSelf() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// runChild is what a re-executed test binary does (see TestMain).
func runChild(role, dir string) error {
	switch role {
	case "crash": // commit, then die without Close
		s, err := Open(Options{Dir: dir}, Write)
		if err != nil {
			return err
		}
		nodes := chain(3, 100)
		m := metaFor(crashID, nodes)
		if err := s.Commit(&m, nodes); err != nil {
			return err
		}
		killSelf()
	case "crash-midcommit": // die between the transactions of a split Commit
		s, err := Open(Options{Dir: dir}, Write)
		if err != nil {
			return err
		}
		testHookTxnCommitted = func(n int) {
			if n == 2 {
				killSelf()
			}
		}
		nodes := chain(5000, 1024)
		m := metaFor(midCrashID, nodes)
		if err := s.Commit(&m, nodes); err != nil {
			return err
		}
		return errors.New("the commit finished without crashing")
	case "crash-midmove": // die while a move to schema 4 copies
		moveBatch = 10
		testHookMoveBatch = func(n int) {
			if n == 2 {
				killSelf()
			}
		}
		if _, err := Open(Options{Dir: dir}, Write); err != nil {
			return err
		}
		return errors.New("the build finished without crashing")
	case "crash-middrop": // die while a move to schema 4 deletes the old keys
		moveBatch = 10
		testHookDropBatch = func(n int) {
			if n == 2 {
				killSelf()
			}
		}
		if _, err := Open(Options{Dir: dir}, Write); err != nil {
			return err
		}
		return errors.New("the move finished without crashing")
	case "serve": // a resident store process, killed by the test
		return Serve(Options{Dir: dir}, served(ServeConfig{Idle: time.Minute}))
	case "append", "read": // one command per iteration, like wc-append / wc-export
		id, worker := os.Getenv("WC_STORE_TEST_ID"), os.Getenv("WC_STORE_TEST_WORKER")
		n, _ := strconv.Atoi(os.Getenv("WC_STORE_TEST_N"))
		for i := 0; i < n; i++ {
			if err := oneCommand(role, dir, id, fmt.Sprintf("w%s-%d", worker, i)); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown child role %q", role)
}

func oneCommand(role, dir, id, text string) error {
	mode := Write
	if role == "read" {
		mode = Read
	}
	s, err := Open(Options{Dir: dir, LockTimeout: time.Minute}, mode)
	if err != nil {
		return err
	}
	if role == "append" {
		err = appendOne(s, id, text)
	} else {
		var m session.Meta
		if m, err = s.Meta(id); err == nil {
			n := uint64(0)
			err = s.Path(id, m.Head, func(*session.Node) error { n++; return nil })
			if err == nil && n != m.MessageCount {
				err = fmt.Errorf("inconsistent read: path of %d nodes, meta says %d", n, m.MessageCount)
			}
		}
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}

func childCmd(role, dir string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"WC_STORE_TEST_CHILD=" + role, "WC_STORE_TEST_DIR=" + dir}, env...)...)
	return cmd
}

func runKilledChild(t *testing.T, role, dir string) {
	t.Helper()
	out, err := childCmd(role, dir).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child %s: %v\n%s", role, err, out)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child %s did not die by SIGKILL: %v\n%s", role, err, out)
	}
}

func TestCrashBeforeClose(t *testing.T) {
	dir := t.TempDir()
	runKilledChild(t, "crash", dir)

	// The case the reader's fallback exists for: ReadOnly refuses.
	ro := badgerkv.Options(filepath.Join(dir, "db"), true, false)
	if db, err := badger.Open(ro); err == nil {
		_ = db.Close()
		t.Fatal("ReadOnly opened after a crash; the fallback is not exercised")
	} else if !strings.Contains(err.Error(), "Log truncate required") {
		t.Fatalf("ReadOnly after a crash: %v", err)
	}

	r := open(t, dir, Read)
	m, err := r.Meta(crashID)
	if err != nil || m.Head != 3 {
		t.Fatalf("meta after crash = %+v, %v", m, err)
	}
	if got := pathSeqsOf(t, r, crashID, m.Head); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Errorf("path after crash = %v", got)
	}
	if err := r.Commit(&m, nil); err == nil {
		t.Error("a reader that recovered a crash accepted a Commit")
	}
	mustClose(t, r)

	db, err := badger.Open(ro)
	if err != nil {
		t.Fatalf("ReadOnly after the recovery: %v", err)
	}
	_ = db.Close()
}

func TestCrashMidCommit(t *testing.T) {
	dir := t.TempDir()
	other := testID(0x0123, 1)
	create(t, dir, map[string][]session.Node{other: chain(2, 10)})
	runKilledChild(t, "crash-midcommit", dir)

	r := open(t, dir, Read)
	if _, err := r.Resolve(midCrashID[:8]); !errors.Is(err, ErrNotFound) {
		t.Errorf("a half-committed session is visible: %v", err)
	}
	var ids []string
	_ = r.List(func(m *session.Meta) error { ids = append(ids, m.ID); return nil })
	if !slices.Equal(ids, []string{other}) {
		t.Errorf("List after a mid-commit crash = %v", ids)
	}
	mustClose(t, r)

	w := open(t, dir, Write)
	nodes := chain(3, 10)
	m := metaFor(midCrashID, nodes)
	if err := w.Commit(&m, nodes); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := w.Nodes(midCrashID, func(uint64, []byte) error { n++; return nil }); err != nil || n != 3 {
		t.Errorf("Nodes = %d, %v; orphans of the crashed commit must stay invisible", n, err)
	}
	mustClose(t, w)
}

// Writers and readers in separate processes, each iteration a full
// open/operate/close like a command: nothing fails, no append is lost and
// every read sees a consistent session.
func TestConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	id := testID(0xc0c0, 1)
	create(t, dir, map[string][]session.Node{id: nil})
	const writers, readers, each = 4, 2, 10
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for i := 0; i < writers+readers; i++ {
		role := "append"
		if i >= writers {
			role = "read"
		}
		cmd := childCmd(role, dir, "WC_STORE_TEST_ID="+id, "WC_STORE_TEST_WORKER="+strconv.Itoa(i), "WC_STORE_TEST_N="+strconv.Itoa(each))
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s", i, err, outs[i])
		}
	}

	r := open(t, dir, Read)
	defer mustClose(t, r)
	m, err := r.Meta(id)
	if err != nil || m.MessageCount != writers*each || m.NextSeq != writers*each+1 {
		t.Fatalf("meta = %+v, %v", m, err)
	}
	var texts []string
	want := uint64(1)
	if err := r.Path(id, m.Head, func(n *session.Node) error {
		if n.Seq != want {
			return fmt.Errorf("path seq %d, want %d", n.Seq, want)
		}
		want++
		texts = append(texts, n.Msg.Content.Text)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(texts)
	var expect []string
	for w := 0; w < writers; w++ {
		for i := 0; i < each; i++ {
			expect = append(expect, fmt.Sprintf("w%d-%d", w, i))
		}
	}
	slices.Sort(expect)
	if !slices.Equal(texts, expect) {
		t.Errorf("messages = %v\nwant %v", texts, expect)
	}
}
