package kvstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
)

func TestWriterExcludesWriter(t *testing.T) {
	dir := t.TempDir()
	id := testID(0xaaaa, 1)
	w1 := open(t, dir, Write)
	_, err := Open(Options{Dir: dir, LockTimeout: 100 * time.Millisecond}, Write)
	if want := fmt.Sprintf("store %s is busy (timed out waiting for its lock, which process %d, kvstore.test, holds)", dir, os.Getpid()); !errors.Is(err, ErrBusy) || err.Error() != want {
		t.Fatalf("second writer: %v, want ErrBusy", err)
	}
	for _, mode := range []Mode{Write, Read} {
		if _, err := Open(Options{Dir: dir}, mode); !errors.Is(err, ErrBusy) {
			t.Errorf("mode %v with no wait: %v, want ErrBusy", mode, err)
		}
	}
	nodes := chain(1, 10)
	m := metaFor(id, nodes)
	if err := w1.Commit(&m, nodes); err != nil {
		t.Fatal(err)
	}
	mustClose(t, w1)

	// The timed-out attempt's abandoned flock may hold the lock for an
	// instant after w1 closes, hence a real wait here.
	w2 := open(t, dir, Write)
	if _, err := w2.Meta(id); err != nil {
		t.Errorf("second writer does not see the first one's commit: %v", err)
	}
	mustClose(t, w2)
}

func TestReadersShare(t *testing.T) {
	dir := t.TempDir()
	id := testID(0xbbbb, 1)
	create(t, dir, map[string][]session.Node{id: chain(2, 10)})
	r1, err := Open(Options{Dir: dir}, Read)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Open(Options{Dir: dir}, Read)
	if err != nil {
		t.Fatalf("second reader: %v", err)
	}
	for _, r := range []*Store{r1, r2} {
		if _, err := r.Meta(id); err != nil {
			t.Error(err)
		}
	}
	if _, err := Open(Options{Dir: dir}, Write); !errors.Is(err, ErrBusy) {
		t.Errorf("writer next to readers: %v, want ErrBusy", err)
	}
	mustClose(t, r1)
	mustClose(t, r2)
}

// waitBlocked waits until some process is blocked in flock on path, read
// from /proc/locks; without /proc it returns at once.
func waitBlocked(t *testing.T, path string) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprintf(":%d", st.Ino)
	for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile("/proc/locks")
		if err != nil {
			t.Log("no /proc/locks; not checking that the reader waits")
			return
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) >= 7 && f[1] == "->" && f[2] == "FLOCK" && strings.HasSuffix(f[6], suffix) {
				return
			}
		}
	}
	t.Fatal("no process ever blocked on the lock")
}

func TestReaderWaitsForWriter(t *testing.T) {
	dir := t.TempDir()
	id := testID(0xcccc, 1)
	create(t, dir, nil)
	w := open(t, dir, Write)

	type result struct {
		s   *Store
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := Open(Options{Dir: dir, LockTimeout: time.Minute}, Read)
		done <- result{s, err}
	}()
	waitBlocked(t, filepath.Join(dir, "lock"))
	select {
	case r := <-done:
		t.Fatalf("reader returned while the writer held the store: %v", r.err)
	default:
	}
	nodes := chain(2, 10)
	m := metaFor(id, nodes)
	if err := w.Commit(&m, nodes); err != nil {
		t.Fatal(err)
	}
	mustClose(t, w)

	r := <-done
	if r.err != nil {
		t.Fatalf("waiting reader: %v", r.err)
	}
	defer mustClose(t, r.s)
	if got, err := r.s.Meta(id); err != nil || got.Head != 2 {
		t.Errorf("reader sees %+v, %v; want the writer's commit", got, err)
	}
}

func TestReadMissingCreatesNothing(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "a", "b")
	s, err := Open(Options{Dir: dir}, Read)
	if err != nil {
		t.Fatal(err)
	}
	if s.Exists() {
		t.Error("Exists() on a missing store")
	}
	if _, err := s.Resolve("abcd"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve: %v", err)
	}
	if _, err := s.Meta(testID(1, 1)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Meta: %v", err)
	}
	if err := s.List(func(*session.Meta) error { return errors.New("called") }); err != nil {
		t.Errorf("List: %v", err)
	}
	if total, l0 := s.Tables(); total != 0 || l0 != 0 {
		t.Errorf("Tables = %d, %d", total, l0)
	}
	mustClose(t, s)
	if _, err := os.Stat(filepath.Join(base, "a")); !os.IsNotExist(err) {
		t.Errorf("a reader created %s: %v", dir, err)
	}

	empty := t.TempDir()
	s = open(t, empty, Read)
	if s.Exists() {
		t.Error("Exists() on an empty directory")
	}
	mustClose(t, s)
	if names, _ := os.ReadDir(empty); len(names) != 0 {
		t.Errorf("a reader wrote into an empty directory: %v", names)
	}
}

func TestNotStore(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := t.TempDir()
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []Mode{Write, Read} {
		_, err := Open(Options{Dir: file}, mode)
		if !errors.Is(err, ErrNotStore) || err.Error() != file+" is a file, not a store directory" {
			t.Errorf("file, mode %v: %v", mode, err)
		}
		_, err = Open(Options{Dir: foreign}, mode)
		if !errors.Is(err, ErrNotStore) || err.Error() != foreign+" is not a wc store directory (it holds notes.txt)" {
			t.Errorf("foreign dir, mode %v: %v", mode, err)
		}
	}
	if names, _ := os.ReadDir(foreign); len(names) != 1 {
		t.Errorf("the foreign directory was changed: %v", names)
	}
}

func TestPermissionsIgnoreUmask(t *testing.T) {
	parent := t.TempDir()
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(parent, "store")
	mustClose(t, open(t, dir, Write))
	check := func() {
		t.Helper()
		for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "lock"): 0o600} {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s mode %v, want %v", path, fi.Mode().Perm(), want)
			}
		}
	}
	check()
	// A lock file others may write is not the store's own: refused, as
	// the store directory would be.
	if err := os.Chmod(filepath.Join(dir, "lock"), 0o666); err != nil {
		t.Fatal(err)
	}
	want := "store: " + filepath.Join(dir, "lock") + " is writable by group and others (mode -rw-rw-rw-)"
	if _, err := Open(Options{Dir: dir}, Write); !errors.Is(err, store.ErrUnsafe) || err.Error() != want {
		t.Errorf("a lock file of mode 0666: %v, want %q", err, want)
	}
}

// Badger's own directory lock never waits; a foreign holder (the badger CLI,
// a debugger) is retried until the deadline and then reported as busy.
func TestForeignHolderOfBadgerLock(t *testing.T) {
	dir := t.TempDir()
	id := testID(0xdddd, 1)
	create(t, dir, map[string][]session.Node{id: chain(1, 10)})
	foreign, err := badger.Open(badgerkv.Options(filepath.Join(dir, "db"), false, false))
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []Mode{Write, Read} {
		_, err := Open(Options{Dir: dir, LockTimeout: 50 * time.Millisecond}, mode)
		if !errors.Is(err, ErrBusy) {
			t.Errorf("mode %v next to a foreign holder: %v, want ErrBusy", mode, err)
		}
	}
	done := make(chan error, 1)
	go func() {
		s, err := Open(Options{Dir: dir, LockTimeout: time.Minute}, Write)
		if err == nil {
			_, err = s.Meta(id)
			if cerr := s.Close(); err == nil {
				err = cerr
			}
		}
		done <- err
	}()
	if err := foreign.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("writer after the foreign holder left: %v", err)
	}
}

func TestUseAfterClose(t *testing.T) {
	s := open(t, t.TempDir(), Write)
	mustClose(t, s)
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Meta(testID(1, 1)); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("Meta after Close: %v", err)
	}
	m := metaFor(testID(1, 1), nil)
	if err := s.Commit(&m, nil); err == nil {
		t.Error("Commit after Close succeeded")
	}
}
