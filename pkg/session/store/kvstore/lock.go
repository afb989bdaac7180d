package kvstore

import (
	"errors"
	"time"

	"github.com/wctoolkit/wc/pkg/session/store/storedir"
)

// flock takes how (LOCK_SH or LOCK_EX) on Dir/lock, waiting until deadline.
func (s *Store) flock(how int, deadline time.Time) error {
	if s.lock == nil {
		return nil // another user's store without a lock file: see openLock
	}
	err := storedir.FlockUntil(s.lock, how, deadline)
	if errors.Is(err, storedir.ErrLockTimeout) {
		s.lock = nil
		return busyError(s.dir)
	}
	return mapErr("lock", err)
}

// unlock releases Dir/lock.
func (s *Store) unlock() {
	if s.lock != nil {
		storedir.Unlock(s.lock)
		s.lock = nil
	}
	s.releaseTurnstile()
}
