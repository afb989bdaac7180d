package kvstore

import (
	"errors"
	"time"

	"github.com/wctoolkit/wc/pkg/session/store/client"
)

// flock takes how (LOCK_SH or LOCK_EX) on Dir/lock, waiting until deadline.
func (s *Store) flock(how int, deadline time.Time) error {
	if s.lock == nil {
		return nil // another user's store without a lock file: see openLock
	}
	err := client.FlockUntil(s.lock, how, deadline)
	if errors.Is(err, client.ErrLockTimeout) {
		s.lock = nil
		return busyError(s.dir)
	}
	return mapErr("lock", err)
}

// unlock releases Dir/lock.
func (s *Store) unlock() {
	if s.lock != nil {
		client.Unlock(s.lock)
		s.lock = nil
	}
	s.releaseTurnstile()
}
