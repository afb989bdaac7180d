package etcdkv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// Kinds of error beyond kv's, for errors.Is. Every error the engine
// returns is an *Error of one kind, with one line of text of its own
// (never a password, a certificate, or a value).
var (
	// ErrUnavailable: no member with a leader answered in time (no leader,
	// no member reachable, a request timed out before it could have been
	// applied). Nothing was written; the same call may succeed later.
	ErrUnavailable = errors.New("etcd: the cluster is unavailable")
	// ErrNoSpace: the cluster's database reached its quota and refuses
	// writes until its owner compacts, defragments and disarms the alarm.
	ErrNoSpace = errors.New("etcd: the cluster's database is full")
	// ErrDenied: authentication failed or the user may not touch the
	// store's prefix.
	ErrDenied = errors.New("etcd: access denied")
	// ErrCompacted: the transaction's snapshot revision was compacted away
	// while it ran; it also matches kv.ErrConflict, since running the
	// transaction again reads a new snapshot.
	ErrCompacted = errors.New("etcd: the snapshot was compacted")
	// ErrClosed: the engine was closed.
	ErrClosed = errors.New("etcd: the engine is closed")
)

// Error is an error of the engine: Kind says what it is (one of kv's
// errors or of the above), the text says it to a person.
type Error struct {
	Kind error
	msg  string
}

func (e *Error) Error() string { return e.msg }

// Is matches the error's kind; a compacted snapshot is also a conflict.
func (e *Error) Is(target error) bool {
	return target == e.Kind || e.Kind == ErrCompacted && target == kv.ErrConflict
}

// Unavailable tells, without importing this package, an error worth
// waiting out: the store retries such a call until --lock-timeout.
func (e *Error) Unavailable() bool { return e.Kind == ErrUnavailable }

func newError(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, msg: fmt.Sprintf(format, args...)}
}

// mapError turns an error of the client into the engine's. op says what
// was asked ("read", "commit"); committing is true when the request may
// have reached the leader with writes, so that a lost answer is
// kv.ErrUnknownResult rather than ErrUnavailable. timeout is the
// request's, for the text.
func (e *Engine) mapError(op string, err error, committing bool, timeout time.Duration) error {
	if err == nil {
		return nil
	}
	var own *Error
	if errors.As(err, &own) {
		return own
	}
	unknown := func(why string) error {
		if committing {
			return newError(kv.ErrUnknownResult, "etcd: %s's result is unknown: %s", op, why)
		}
		return newError(ErrUnavailable, "etcd: %s failed: %s", op, why)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded ||
		// A stopped leader's stream can end with the deadline as text in
		// a status of another code (TestFaultStopLeader).
		rpctypes.ErrorDesc(err) == context.DeadlineExceeded.Error():
		return unknown(fmt.Sprintf("no member of %s answered within %s", strings.Join(e.cfg.Endpoints, ","), timeout.Round(time.Millisecond)))
	case errors.Is(err, context.Canceled) || status.Code(err) == codes.Canceled:
		if e.closed.Load() {
			return newError(ErrClosed, "etcd: %s failed: the engine is closed", op)
		}
		return unknown("the request was cancelled")
	}
	// The server's errors come typed; an interceptor on the member refuses
	// a request that requires a leader before it reaches Raft, so "no
	// leader" never leaves a commit half known.
	switch rpctypes.Error(err) {
	case rpctypes.ErrNoLeader:
		return newError(ErrUnavailable, "etcd: %s failed: the cluster has no leader", op)
	case rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail, rpctypes.ErrTimeoutDueToConnectionLost, rpctypes.ErrLeaderChanged, rpctypes.ErrStopped:
		return unknown("the cluster did not finish it (" + rpctypes.ErrorDesc(err) + ")")
	case rpctypes.ErrNoSpace:
		return newError(ErrNoSpace, "etcd: %s refused: the cluster's database is full (its quota is reached: compact, defragment and disarm the alarm, see docs/etcd.md)", op)
	case rpctypes.ErrAuthFailed:
		return newError(ErrDenied, "etcd: authentication failed for user %s", e.cfg.Username)
	case rpctypes.ErrPermissionDenied, rpctypes.ErrUserEmpty, rpctypes.ErrInvalidAuthToken, rpctypes.ErrAuthOldRevision, rpctypes.ErrAuthNotEnabled:
		return newError(ErrDenied, "etcd: %s refused: %s", op, e.redact(rpctypes.ErrorDesc(err)))
	case rpctypes.ErrCompacted:
		return newError(ErrCompacted, "etcd: %s failed: the snapshot's revision was compacted while the transaction ran", op)
	case rpctypes.ErrTooManyOps, rpctypes.ErrRequestTooLarge:
		return newError(kv.ErrTooBig, "etcd: %s refused: %s", op, rpctypes.ErrorDesc(err))
	}
	if grpcCode(err) == codes.Unavailable {
		return unknown("no member answered (" + e.redact(firstLine(rpctypes.ErrorDesc(err))) + ")")
	}
	return newError(errUnexpected, "etcd: %s failed: %s", op, e.redact(firstLine(rpctypes.ErrorDesc(err))))
}

// errConfig is the kind of a Config that cannot be used.
var errConfig = errors.New("etcd: bad configuration")

// errReadOnly is the kind of a write in a View.
var errReadOnly = errors.New("etcd: write in a read-only transaction")

// errUnexpected is the kind of an error the engine has no better name for.
var errUnexpected = errors.New("etcd: unexpected error")

// redact keeps the password out of a message from elsewhere, whatever
// that message quotes.
func (e *Engine) redact(msg string) string {
	if e.cfg.Password != "" {
		msg = strings.ReplaceAll(msg, e.cfg.Password, "…")
	}
	const maxLen = 240
	if len(msg) > maxLen {
		msg = strings.ToValidUTF8(msg[:maxLen], "") + "…"
	}
	return msg
}

// grpcCode is the gRPC code of an error of the client, typed by the
// client (rpctypes.EtcdError) or not.
func grpcCode(err error) codes.Code {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code()
	}
	return status.Code(err)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
