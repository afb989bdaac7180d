package kvstore

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
)

// keptOpen is an engine whose Close leaves it open: two handles (two
// machines) share it, and the test closes it.
type keptOpen struct{ kv.Engine }

func (keptOpen) Close() error { return nil }

// serveShared runs ServeShared on a store over e and returns its socket.
func serveShared(t *testing.T, e kv.Engine) string {
	t.Helper()
	st, err := Open(Options{Engine: keptOpen{e}, Name: "test-engine", LockTimeout: 10 * time.Second}, Write)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	ready := make(chan struct{})
	done := make(chan error, 1)
	cfg := served(ServeConfig{Idle: time.Minute, Socket: sock, Ready: func() { close(ready) }})
	go func() { done <- ServeShared(st, cfg) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("ServeShared: %v", err)
	}
	t.Cleanup(func() {
		if _, err := remote.ShutdownAt(sock, filepath.Join(filepath.Dir(sock), "none"), "test-engine", 10*time.Second); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("ServeShared: %v", err)
		}
	})
	return sock
}

// Through the resident process of a shared store, the metadata comes with
// its revision (asked for, or with the hello's references), so that a
// commit over metadata another machine has since changed fails as changed
// (and busy) instead of overwriting it; read again, it lands. Nothing is
// lost.
func TestResidentSharedChecksRevision(t *testing.T) {
	e := badgerEngine(t)
	t.Cleanup(func() { e.Close() })
	sock := serveShared(t, e)
	other, err := Open(Options{Engine: keptOpen{e}, Name: "other machine", LockTimeout: 10 * time.Second}, Write)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	id := testID(1, 1)
	nodes := chain(1, 10)
	m := metaFor(id, nodes)
	if err := other.Commit(&m, nodes); err != nil {
		t.Fatal(err)
	}
	for _, refs := range [][]string{nil, {id}} {
		c, err := remote.DialAt(sock, "test-engine", remote.Ask{Mode: Write, LockTimeout: 5 * time.Second, Refs: refs})
		if err != nil {
			t.Fatal(err)
		}
		if len(refs) > 0 {
			if _, err := c.Resolve(id); err != nil {
				t.Fatal(err)
			}
		}
		stale, err := c.Meta(id)
		if err != nil || stale.Revision == 0 {
			t.Fatalf("meta through the socket: revision %d, %v", stale.Revision, err)
		}
		if err := appendOne(other, id, "from the other machine"); err != nil {
			t.Fatal(err)
		}
		stale.Title = "overwriting"
		err = c.Commit(&stale, nil)
		if !errors.Is(err, store.ErrChanged) || !errors.Is(err, store.ErrBusy) {
			t.Fatalf("commit over a changed session (refs %v): %v", refs, err)
		}
		if err := appendChecked(c, id, "through the socket"); err != nil {
			t.Fatal(err)
		}
		fresh, err := c.Meta(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := appendOne(c, id, "again"); err != nil {
			t.Fatalf("append over what the client read: %v", err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := other.Meta(id)
		if err != nil || got.Revision == fresh.Revision {
			t.Fatalf("the commit left revision %d (was %d): %v", got.Revision, fresh.Revision, err)
		}
	}
	texts := headTexts(t, other, id)
	want := []string{"from the other machine", "through the socket", "again"}
	if len(texts) != 1+2*len(want) || !slices.Equal(texts[1:4], want) || !slices.Equal(texts[4:], want) {
		t.Errorf("path texts %q", texts)
	}
	checkSession(t, other, id)
}
