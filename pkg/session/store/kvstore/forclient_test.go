package kvstore

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// unanswering fails every transaction as unavailable while down, as an
// etcd cluster without a leader does.
type unanswering struct {
	kv.Engine
	down atomic.Bool
}

func (u *unanswering) View(fn func(kv.Txn) error) error {
	if u.down.Load() {
		return errUnavailableTest{}
	}
	return u.Engine.View(fn)
}

func (u *unanswering) Update(fn func(kv.Txn) error) error {
	if u.down.Load() {
		return errUnavailableTest{}
	}
	return u.Engine.Update(fn)
}

// A client's handle on a shared engine retries within the client's lock
// timeout, not the store's: the resident process of an etcd store is
// opened to retry long, and serves commands of every --lock-timeout. Once
// its retries ran out, the handle's next operation tries once; one that
// succeeds gives the next its whole lock timeout again.
func TestForClientRetriesWithinItsTimeout(t *testing.T) {
	c := &unanswering{Engine: badgerEngine(t)}
	s, err := Open(Options{Engine: c, Name: "etcd://h:1/p", LockTimeout: time.Hour}, Write)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	client := s.ForClient(200 * time.Millisecond)
	id := testID(0xc1c1, 1)
	nodes := chain(1, 10)
	m := metaFor(id, nodes)
	c.down.Store(true)
	err = client.Commit(&m, nodes)
	if !errors.Is(err, ErrBusy) || !strings.HasPrefix(err.Error(), "store etcd://h:1/p is busy (injected: no leader; retried for 200ms)") {
		t.Fatalf("an unavailable engine through a client's handle: %v", err)
	}
	before := s.Retries()
	blob := []byte("x")
	// The busy error came a backoff before the 200ms were up: let them
	// pass.
	time.Sleep(200 * time.Millisecond)
	if err := client.PutBlob(id, sha256Of(blob), blob); !errors.Is(err, ErrBusy) {
		t.Fatalf("the next operation: %v", err)
	}
	if n := s.Retries() - before; n != 0 {
		t.Errorf("the operation after the client's retries ran out was retried %d times, want tried once", n)
	}
	c.down.Store(false)
	if err := client.Commit(&m, nodes); err != nil {
		t.Fatalf("commit once the engine answers: %v", err)
	}
	c.down.Store(true)
	before = s.Retries()
	if _, err := client.Meta(id); !errors.Is(err, ErrBusy) {
		t.Fatalf("a read after a success, the engine unavailable: %v", err)
	}
	if s.Retries() == before {
		t.Error("the read after a success was not retried")
	}
	c.down.Store(false)
	if got, err := s.Meta(id); err != nil || got.Head != m.Head {
		t.Errorf("the store's own handle reads %+v, %v", got, err)
	}
}
