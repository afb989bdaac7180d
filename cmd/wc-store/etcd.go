package main

// What wc-store serves a store on etcd with: the resident process of an
// etcd URL (its socket and lock in the user's runtime directory, see
// open.SharedSocket) and the store its private process opens. It is here,
// in the one program that links the etcd client, so that no other command
// does (.ci/run checks every package under cmd/ but this one).

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/wctoolkit/wc/cmd/internal/open"
	"github.com/wctoolkit/wc/cmd/internal/serve"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/etcdstore"
	"github.com/wctoolkit/wc/pkg/session/store/kvstore"
	"github.com/wctoolkit/wc/pkg/session/store/storedir"
)

// etcdServing is what wc-store serves stores on etcd with.
var etcdServing = &serve.Shared{Serve: serveEtcd, Open: openEtcd}

// openEtcd opens the store at url for mode. lockTimeout bounds the wait for
// an unavailable cluster and each operation's retries. The password
// comes from the environment (etcdkv.PasswordEnv), never the URL.
func openEtcd(url string, mode kvstore.Mode, lockTimeout time.Duration) (*kvstore.Store, error) {
	return etcdstore.Open(url, os.Getenv, kvstore.Options{LockTimeout: lockTimeout}, mode)
}

// residentRetry is the least the resident process's own handle retries an
// operation that conflicts or finds the cluster unavailable; a command's
// operations go through a handle bounded by its --lock-timeout instead
// (kvstore.Store.ForClient).
const residentRetry = 30 * time.Second

// serveEtcd runs the resident process of the store at url: it takes the lock
// beside its socket (held: another wc-store serves the URL, ErrBusy),
// opens the store and serves it until idle (see serve.Serve). Writes on
// etcd are durable when acknowledged, so sync changes nothing.
func serveEtcd(url string, _ bool, wait, idle time.Duration, ready func()) error {
	sock, lockPath, err := open.SharedSocket(url)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("store: cannot open the lock file %s: %v", lockPath, err)
	}
	if err := lockResident(f, sock, time.Now().Add(wait)); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return &store.KindError{Msg: "store " + open.StoreName(url) + " is served by another wc-store of yours (its lock: " + lockPath + ")", Kind: store.ErrBusy}
		}
		return fmt.Errorf("store: cannot lock %s: %v", lockPath, err)
	}
	defer storedir.Unlock(f)
	st, err := etcdstore.OpenWithin(url, os.Getenv, kvstore.Options{LockTimeout: max(wait, residentRetry)}, kvstore.Write, wait)
	if err != nil {
		return err
	}
	cfg, done := serve.ResidentConfig(wait, idle, ready)
	defer done()
	cfg.Socket = sock
	return kvstore.ServeShared(st, cfg)
}

// lockResident takes the resident process's lock on f. While another
// process holds it, it tries again until deadline, and gives up early
// (EWOULDBLOCK) when a process answers on sock: that one serves the URL.
// One that no longer answers is making way (its program was replaced, or
// it idled), and the lock is ours once it has closed the store.
func lockResident(f *os.File, sock string, deadline time.Time) error {
	for delay := time.Millisecond; ; delay = min(2*delay, 25*time.Millisecond) {
		err := storedir.Flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if time.Now().After(deadline) {
			return err
		}
		if c, derr := net.Dial("unix", sock); derr == nil {
			c.Close()
			return err
		}
		time.Sleep(delay)
	}
}
