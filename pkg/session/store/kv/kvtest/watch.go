package kvtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// RunWatch runs the suite of kv.Watcher over the engines open returns,
// each empty, which must implement it.
func RunWatch(t *testing.T, open func(t *testing.T) kv.Engine) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, kv.Engine, kv.Watcher)
	}{
		{"EveryCommitOnce", testWatchEveryCommitOnce},
		{"CommitsWholeAndFiltered", testWatchCommitsWhole},
		{"CancelEnds", testWatchCancel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := open(t)
			w, ok := e.(kv.Watcher)
			if !ok {
				t.Fatalf("%T is not a kv.Watcher", e)
			}
			tc.fn(t, e, w)
		})
	}
}

// watchKey is the i-th key a writer writes: they sort in the order written.
func watchKey(i int) []byte { return fmt.Appendf(nil, "w/%06d", i) }

// A writer commits while the watch starts: every commit is seen exactly
// once, by the sync's read or as a change after it, and changes come in
// commit order.
func testWatchEveryCommitOnce(t *testing.T, e kv.Engine, w kv.Watcher) {
	const n = 300
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wrote := make(chan error, 1)
	go func() {
		for i := range n {
			if err := e.Update(func(txn kv.Txn) error { return txn.Set(watchKey(i), []byte("v")) }); err != nil {
				wrote <- err
				return
			}
			if i == n/3 {
				time.Sleep(5 * time.Millisecond) // let the watch start with the writer midway
			}
		}
		wrote <- nil
	}()
	for len(wrote) == 0 {
		var k int
		if e.View(func(txn kv.Txn) error {
			_, err := txn.Get(watchKey(n / 10))
			k++
			return err
		}) == nil {
			break
		}
	}
	seen := map[string]int{}
	var order []string
	var mu sync.Mutex
	err := w.Watch(ctx, [][]byte{[]byte("w/")}, func(txn kv.Txn) error {
		mu.Lock()
		defer mu.Unlock()
		clear(seen)
		it := txn.Iterate(kv.IterOptions{Prefix: []byte("w/"), KeysOnly: true})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			seen[string(it.Key())]++
		}
		return nil
	}, func(changes []kv.Change) error {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range changes {
			if c.Deleted || string(c.Value) != "v" {
				return fmt.Errorf("change %q: deleted %v, value %q", c.Key, c.Deleted, c.Value)
			}
			seen[string(c.Key)]++
			order = append(order, string(c.Key))
		}
		if len(seen) == n {
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if c := seen[string(watchKey(i))]; c != 1 {
			t.Errorf("key %s seen %d times", watchKey(i), c)
		}
	}
	if len(order) == 0 || len(order) == n {
		t.Errorf("%d of %d commits came as changes: the watch did not start midway", len(order), n)
	}
	for i := 1; i < len(order); i++ {
		if order[i] <= order[i-1] {
			t.Fatalf("changes out of commit order: %s after %s", order[i], order[i-1])
		}
	}
}

// A commit's changes under a prefix come in one call, deletions marked;
// keys under no prefix do not come.
func testWatchCommitsWhole(t *testing.T, e kv.Engine, w kv.Watcher) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := e.Update(func(txn kv.Txn) error { return txn.Set([]byte("a/gone"), []byte("x")) }); err != nil {
		t.Fatal(err)
	}
	synced := make(chan struct{})
	var calls [][]kv.Change
	done := make(chan error, 1)
	go func() {
		done <- w.Watch(ctx, [][]byte{[]byte("a/"), []byte("c/")}, func(kv.Txn) error {
			close(synced)
			return nil
		}, func(changes []kv.Change) error {
			calls = append(calls, changes)
			if len(calls) == 2 {
				cancel()
			}
			return nil
		})
	}()
	<-synced
	commits := []func(kv.Txn) error{
		func(txn kv.Txn) error { return txn.Set([]byte("b/other"), []byte("x")) },
		func(txn kv.Txn) error {
			if err := txn.Set([]byte("a/1"), []byte("one")); err != nil {
				return err
			}
			if err := txn.Delete([]byte("a/gone")); err != nil {
				return err
			}
			return txn.Set([]byte("b/2"), []byte("two"))
		},
		func(txn kv.Txn) error { return txn.Set([]byte("c/3"), []byte("three")) },
	}
	for _, c := range commits {
		if err := e.Update(c); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the watch passed on %d of 2 commits", len(calls))
	}
	got := fmt.Sprint(calls)
	want := fmt.Sprint([][]kv.Change{
		{{Key: []byte("a/1"), Value: []byte("one")}, {Key: []byte("a/gone"), Deleted: true}},
		{{Key: []byte("c/3"), Value: []byte("three")}},
	})
	if got != want {
		t.Errorf("changes:\n got %s\nwant %s", got, want)
	}
}

// Cancelling the context ends the watch with nil; a callback's error ends
// it with that error.
func testWatchCancel(t *testing.T, e kv.Engine, w kv.Watcher) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if err := w.Watch(ctx, [][]byte{[]byte("z/")}, func(kv.Txn) error { return nil }, func([]kv.Change) error { return nil }); err != nil {
		t.Fatalf("a cancelled watch returned %v", err)
	}
	mine := errors.New("mine")
	err := w.Watch(context.Background(), [][]byte{[]byte("z/")}, func(kv.Txn) error { return mine }, func([]kv.Change) error { return nil })
	if !errors.Is(err, mine) {
		t.Fatalf("a failed sync returned %v", err)
	}
}
