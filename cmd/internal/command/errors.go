package command

import (
	"errors"
	"fmt"
	"strings"

	"github.com/wctoolkit/wc/cmd/internal/open"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
)

// Exit statuses, the same in every wc command.
const (
	ExitOK       = 0
	ExitFailure  = 1
	ExitUsage    = 2
	ExitNotFound = 3
	ExitDataErr  = 65 // EX_DATAERR: invalid input data
	ExitDamaged  = 74 // EX_IOERR: the store's files are damaged
	ExitBusy     = 75 // EX_TEMPFAIL: the store stayed locked, or etcd unanswering, past --lock-timeout
)

// ExitStatuses documents the codes, in order, for help and man pages.
var ExitStatuses = []ExitStatus{
	{ExitOK, "Success."},
	{ExitFailure, "Failure: the store could not be read or written, or another error."},
	{ExitUsage, "Usage error: an unknown flag, a missing argument, an invalid flag value, an invalid or ambiguous session reference, a branch name wc-branch cannot give."},
	{ExitNotFound, "Not found: a session, message, branch, blob or input file."},
	{ExitDataErr, "Invalid input data: malformed JSON, a value of the wrong shape, an unknown role in a message, invalid UTF-8, an oversized message, token usage or cost that would add up past what wc can store."},
	{ExitDamaged, "The store is damaged: a file of it does not hold what wc wrote (a changed byte, a file cut short or missing). Nothing was changed and nothing was printed from the damaged part; wc-store --check reports what is damaged, and wc-store --salvage DIR copies every intact session into a new store."},
	{ExitBusy, "The store stayed locked by other wc commands past --lock-timeout, or, on etcd, the cluster did not answer within it (no leader, no member reachable, every retry of a changed session lost); nothing was changed, and retrying is safe."},
}

// Error is a failure with its exit status and optional hints.
type Error struct {
	Code  int
	Msg   string
	Hints []string
	// Partial marks a batch in which some items failed after the store was
	// closed cleanly: the lines of every item are printed, then the error.
	Partial bool
}

func (e *Error) Error() string { return e.Msg }

// Partial is err, with its exit status and hints, marked as coming after
// some items of a batch were done: their lines are printed before it, if
// the store then closes cleanly.
func Partial(err error) error {
	var te *Error
	if errors.As(err, &te) {
		marked := *te
		marked.Partial = true
		return &marked
	}
	code, hints := exitStatus(err)
	return &Error{Code: code, Msg: err.Error(), Hints: hints, Partial: true}
}

// Usagef is a usage error (exit 2).
func Usagef(format string, args ...any) *Error {
	return &Error{Code: ExitUsage, Msg: fmt.Sprintf(format, args...)}
}

// DataErrf is an invalid-input error (exit 65).
func DataErrf(format string, args ...any) *Error {
	return &Error{Code: ExitDataErr, Msg: fmt.Sprintf(format, args...)}
}

// NotFoundf is a not-found error (exit 3).
func NotFoundf(format string, args ...any) *Error {
	return &Error{Code: ExitNotFound, Msg: fmt.Sprintf(format, args...)}
}

// WithHint adds a hint line.
func (e *Error) WithHint(format string, args ...any) *Error {
	e.Hints = append(e.Hints, fmt.Sprintf(format, args...))
	return e
}

// exitStatus maps an error from any layer to its exit status and hints.
func exitStatus(err error) (int, []string) {
	var te *Error
	var failed *open.FailedError
	var inv *session.InvalidError
	var ref *store.RefError
	var branchErr *session.BranchError
	switch {
	case errors.As(err, &te):
		return te.Code, te.Hints
	case errors.As(err, &failed):
		return ExitFailure, failed.Hints
	case errors.Is(err, store.ErrUnsafe), errors.Is(err, store.ErrNoSpace):
		var ke *store.KindError
		errors.As(err, &ke)
		return ExitFailure, ke.Hints
	case errors.Is(err, store.ErrDamaged):
		if ke := (*store.KindError)(nil); errors.As(err, &ke) && len(ke.Hints) > 0 {
			return ExitDamaged, ke.Hints
		}
		return ExitDamaged, []string{"wc-store --check reports what is damaged; wc-store --salvage NEWDIR copies every intact session into a new store"}
	case errors.Is(err, store.ErrBusy):
		if ke := (*store.KindError)(nil); errors.As(err, &ke) && len(ke.Hints) > 0 {
			return ExitBusy, ke.Hints
		}
		return ExitBusy, []string{"another wc command holds the store; raise --lock-timeout or WC_LOCK_TIMEOUT to wait longer"}
	case errors.Is(err, store.ErrNotFound):
		return ExitNotFound, []string{"wc-ls lists the sessions in this store"}
	case errors.Is(err, store.ErrAmbiguous):
		return ExitUsage, []string{"give more hex digits of the id"}
	case errors.As(err, &ref):
		return ExitUsage, []string{"a session reference is a full id or at least 4 of its leading hex digits"}
	case errors.As(err, &inv):
		return ExitDataErr, nil
	case errors.As(err, &branchErr):
		if branchErr.NotFound {
			return ExitNotFound, nil
		}
		if branchErr.BadName {
			return ExitUsage, nil
		}
		return ExitFailure, nil
	}
	return ExitFailure, nil
}

// errorLine folds err onto one line. Our messages end without a period;
// trimming periods would eat a user's reference such as "..".
func errorLine(err error) string {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if msg == "" {
		return "failed"
	}
	return msg
}
