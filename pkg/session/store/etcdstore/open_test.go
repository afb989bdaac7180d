package etcdstore_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/etcdkv/etcdtest"
	"github.com/wctoolkit/wc/pkg/session/store/etcdstore"
	"github.com/wctoolkit/wc/pkg/session/store/kvstore"
	"github.com/wctoolkit/wc/pkg/session/store/storetest"
)

// storeURL is the URL of a store of the test's own on the shared cluster,
// wiped when the test ends.
func storeURL(t *testing.T) string {
	endpoints := etcdtest.Endpoints(t)
	cfg := etcdtest.Config(t, endpoints)
	t.Cleanup(func() { etcdtest.Wipe(t, endpoints, cfg.Prefix) })
	return "etcd://" + strings.Join(endpoints, ",") + "/" + cfg.Prefix
}

func noEnv(string) string { return "" }

// The store opened on etcd from its URL meets the contract of
// store.Handle, as a directory does: each directory the suite uses is a
// prefix of its own.
func TestContract(t *testing.T) {
	etcdtest.Endpoints(t)
	var mu sync.Mutex
	urls := map[string]string{}
	storetest.Run(t, storetest.Target{Open: func(t *testing.T, dir string, mode store.Mode) store.Handle {
		mu.Lock()
		u, ok := urls[dir]
		if !ok {
			u = storeURL(t)
			urls[dir] = u
		}
		mu.Unlock()
		s, err := etcdstore.Open(u, noEnv, kvstore.Options{LockTimeout: 10 * time.Second}, mode)
		if err != nil {
			t.Fatalf("open %s: %v", u, err)
		}
		return s
	}})
}

// A URL that cannot name a store, and a cluster that does not answer, fail
// the open with one line; the latter is busy (exit 75) once the lock
// timeout has passed.
func TestOpenErrors(t *testing.T) {
	for _, u := range []string{"etcd://", "etcd://127.0.0.1:1/", "etcd://u:secret@127.0.0.1:1/p"} {
		_, err := etcdstore.Open(u, noEnv, kvstore.Options{}, kvstore.Read)
		if err == nil || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "secret") {
			t.Errorf("open %s: %v", u, err)
		}
	}
	_, err := etcdstore.Open("etcd://127.0.0.1:1/p?dial-timeout=100ms&timeout=200ms", noEnv, kvstore.Options{LockTimeout: 300 * time.Millisecond}, kvstore.Read)
	if !errors.Is(err, kvstore.ErrBusy) || !strings.HasPrefix(err.Error(), "store etcd://127.0.0.1:1/p: ") {
		t.Errorf("open of a cluster that does not answer: %v, want busy", err)
	}
}
