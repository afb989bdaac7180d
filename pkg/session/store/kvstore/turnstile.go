package kvstore

import (
	"errors"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wctoolkit/wc/pkg/session/store/storedir"
)

// A command that opens the store itself (WC_DIRECT=1, a batch, wc-store
// --check) must get it within its lock timeout however busy the resident
// store process is. Asking that process to stop once was not enough: the
// request was lost when it came while the process was handing over, and
// the commands that kept coming started a new resident process, which
// could take the lock before the waiting command. So while such a command
// waits for the store and holds it, it holds a shared lock on the store
// directory itself: the turnstile. A resident process does not take the
// store while anyone holds the turnstile, and one serving it stops taking
// new commands as soon as it finds the turnstile held (it looks at every
// watch tick), finishes those it serves and closes the store. The commands
// that come meanwhile find no resident process and queue on the lock as
// the waiting command does.

// The turnstile is an open-file-description record lock (fcntl
// F_OFD_SETLK), not a flock: a resident process must look without taking
// anything. Looking by trying an exclusive flock took it for that moment,
// so two resident processes looking at once (a winner's watch tick and a
// starting loser) each saw the other's look as a waiting command, and the
// winner stopped serving with nobody waiting (TestResidentStartRace).
// F_OFD_GETLK only reads. Closing the file releases the lock, as it does a
// flock, and a killed command's lock goes with its process.

// holdTurnstile takes the turnstile of dir. Only readers' locks are ever
// taken on it, so it never waits.
func holdTurnstile(dir string) (*os.File, error) {
	// The store's own path may be a link (CheckStore checked where it
	// leads); nothing in it may.
	f, err := os.Open(dir)
	if err != nil {
		return nil, mapErr("open", err)
	}
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart}
	if err := ofdLock(f, unix.F_OFD_SETLK, &lk); err != nil {
		f.Close()
		return nil, mapErr("lock", err)
	}
	return f, nil
}

// flockPath opens path read-only, with flags, and takes how on it,
// waiting until deadline; the store in dir is then busy.
func flockPath(dir, path string, flags, how int, deadline time.Time) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|flags, 0)
	if err != nil {
		return nil, mapErr("open", err)
	}
	err = storedir.FlockUntil(f, how, deadline)
	if errors.Is(err, storedir.ErrLockTimeout) {
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
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	if err := ofdLock(d, unix.F_OFD_GETLK, &lk); err != nil {
		return false
	}
	return lk.Type != unix.F_UNLCK
}

func ofdLock(f *os.File, cmd int, lk *unix.Flock_t) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if lerr = unix.FcntlFlock(fd, cmd, lk); lerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return lerr
}

// releaseTurnstile lets resident processes take the store again.
func (s *Store) releaseTurnstile() {
	if s.turnstile != nil {
		s.turnstile.Close() // and with it the lock
		s.turnstile = nil
	}
}
