package store

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// flock takes how (LOCK_SH or LOCK_EX) on Dir/lock, waiting until deadline.
// flock(2) has no timeout, so the blocking call runs in a goroutine; on
// timeout we close our file, and because flock locks belong to the open file
// description, the kernel drops the lock as soon as the abandoned call
// returns with it.
func (s *Store) flock(how int, deadline time.Time) error {
	err := flockCall(s.lock, how|syscall.LOCK_NB)
	if err == nil {
		return nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		return mapErr("lock", err)
	}
	wait := time.Until(deadline)
	if wait <= 0 {
		return busyError(s.dir)
	}
	f := s.lock
	done := make(chan error, 1)
	go func() {
		for {
			err := flockCall(f, how)
			if !errors.Is(err, syscall.EINTR) {
				done <- err
				return
			}
		}
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case err := <-done:
		return mapErr("lock", err)
	case <-timer.C:
		// Control (in flockCall) holds a reference to the fd, so the
		// real close(2) happens when the pending flock returns; the fd
		// number cannot be reused under it meanwhile.
		_ = f.Close()
		s.lock = nil
		return busyError(s.dir)
	}
}

// flockCall runs flock(2) on f's descriptor while holding a reference to it.
func flockCall(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = syscall.Flock(int(fd), how) }); err != nil {
		return err
	}
	return ferr
}

// unlock releases Dir/lock; closing the file alone would do, but an explicit
// LOCK_UN makes the release independent of any duplicated descriptor.
func (s *Store) unlock() {
	if s.lock == nil {
		return
	}
	_ = flockCall(s.lock, syscall.LOCK_UN)
	_ = s.lock.Close()
	s.lock = nil
}
