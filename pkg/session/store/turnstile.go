package store

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/wctoolkit/wc/pkg/session/store/client"
)

// A command that opens the store itself (WC_DIRECT=1, a batch, wc-store
// --check) must get it within its lock timeout however busy the resident
// store process is. Asking that process to stop once was not enough: the
// request was lost when it came while the process was handing over, and
// the commands that kept coming started a new resident process, which
// could take the lock before the waiting command. So while such a command
// waits for the store and holds it, it holds a shared flock on the store
// directory itself: the turnstile. A resident process does not take the
// store while anyone holds the turnstile, and one serving it stops taking
// new commands as soon as it finds the turnstile held (it looks at every
// watch tick), finishes those it serves and closes the store. The commands
// that come meanwhile find no resident process and queue on the lock as
// the waiting command does.

// holdTurnstile takes the turnstile of dir, waiting for a resident
// process's brief look at it until deadline.
func holdTurnstile(dir string, deadline time.Time) (*os.File, error) {
	// The store's own path may be a link (CheckStore checked where it
	// leads); nothing in it may.
	return flockPath(dir, dir, 0, syscall.LOCK_SH, deadline)
}

// flockPath opens path read-only, with flags, and takes how on it,
// waiting until deadline; the store in dir is then busy.
func flockPath(dir, path string, flags, how int, deadline time.Time) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|flags, 0)
	if err != nil {
		return nil, mapErr("open", err)
	}
	err = client.FlockUntil(f, how, deadline)
	if errors.Is(err, client.ErrLockTimeout) {
		return nil, busyError(dir)
	}
	if err != nil {
		f.Close()
		return nil, mapErr("lock", err)
	}
	return f, nil
}

// turnstileHeld reports whether a command that opens the store itself
// waits for it, or holds it: d is the store directory.
func turnstileHeld(d *os.File) bool {
	err := client.Flock(d, syscall.LOCK_EX|syscall.LOCK_NB)
	if err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = client.Flock(d, syscall.LOCK_UN)
	return false
}

// releaseTurnstile lets resident processes take the store again.
func (s *Store) releaseTurnstile() {
	if s.turnstile != nil {
		client.Unlock(s.turnstile)
		s.turnstile = nil
	}
}
