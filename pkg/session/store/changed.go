package store

import (
	"errors"
	mrand "math/rand/v2"
	"time"
)

// ErrChanged is the kind of the error of a Commit (or a Collect) of a
// session another writer changed since its metadata was read (a store
// shared by many machines checks the metadata's Revision): read it again
// and apply the operation again (RetryChanged). Its errors also match
// ErrBusy, so that a command that gives up exits 75.
var ErrChanged = errors.New("session changed since it was read")

// ChangedError is an error of kind ErrChanged as it crosses the socket.
type ChangedError struct{ Msg string }

func (e *ChangedError) Error() string        { return e.Msg }
func (e *ChangedError) Is(target error) bool { return target == ErrChanged || target == ErrBusy }

// RetryChanged runs fn, and again with backoff and jitter while it fails
// with ErrChanged, until deadline; then it returns fn's last error. fn
// re-reads the session and applies its operation again.
func RetryChanged(deadline time.Time, fn func() error) error {
	b := NewBackoff(deadline)
	for {
		err := fn()
		if !errors.Is(err, ErrChanged) || !b.Wait() {
			return err
		}
	}
}

// Backoff waits twice as long each time, from backoffFirst to
// backoffMost, each wait drawn in [d/2, 3d/2) so that writers that
// collided do not collide again in step.
type Backoff struct {
	deadline time.Time
	delay    time.Duration
}

const (
	backoffFirst = time.Millisecond
	backoffMost  = 100 * time.Millisecond
)

// NewBackoff is a backoff that gives up at deadline.
func NewBackoff(deadline time.Time) *Backoff {
	return &Backoff{deadline: deadline, delay: backoffFirst}
}

// Wait sleeps, or reports false when the deadline would pass.
func (b *Backoff) Wait() bool {
	d := b.delay/2 + mrand.N(b.delay)
	if time.Now().Add(d).After(b.deadline) {
		return false
	}
	time.Sleep(d)
	b.delay = min(2*b.delay, backoffMost)
	return true
}
