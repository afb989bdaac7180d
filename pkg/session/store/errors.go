package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/dgraph-io/badger/v4"
)

// Sentinels for errors.Is. The errors returned carry their own text (commands
// print err.Error() verbatim), so these are only matched, never printed.
var (
	ErrBusy      = errors.New("store is busy")
	ErrNotFound  = errors.New("not found")
	ErrAmbiguous = errors.New("ambiguous session prefix")
	ErrNotStore  = errors.New("not a wc store directory")
)

// errReadOnly is returned by mutations on a store opened with Read.
var errReadOnly = errors.New("store: opened for reading; cannot write")

// textError carries the message the user sees and the sentinel it matches.
type textError struct {
	msg  string
	kind error
}

func (e *textError) Error() string        { return e.msg }
func (e *textError) Is(target error) bool { return target == e.kind }

func notFoundf(format string, args ...any) error {
	return &textError{msg: fmt.Sprintf(format, args...), kind: ErrNotFound}
}

func sessionNotFound(ref string) error { return notFoundf("session %s not found", ref) }

func busyError(dir string) error {
	return &textError{msg: fmt.Sprintf("store %s is busy (timed out waiting for its lock)", dir), kind: ErrBusy}
}

func notStoreError(path string, isFile bool) error {
	if isFile {
		return &textError{msg: path + " is a file, not a store directory", kind: ErrNotStore}
	}
	return &textError{msg: path + " is not a wc store directory", kind: ErrNotStore}
}

// foreignDirError refuses a directory that holds something a store does not,
// naming it so that the user can see why.
func foreignDirError(dir, entry string) error {
	return &textError{msg: dir + " is not a wc store directory (it holds " + entry + ")", kind: ErrNotStore}
}

// RefError is a session reference that cannot name a session at all (too
// short, not hex). Commands treat it as a usage error.
type RefError struct{ Ref string }

func (e *RefError) Error() string { return "invalid session reference " + e.Ref }

// mapErr turns an error from Badger (or the file system under it) into one
// that is safe to print: Badger's size errors append a hex dump of the value,
// which here is transcript content, so only the first line is ever kept.
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var te *textError
	var re *RefError
	if errors.As(err, &te) || errors.As(err, &re) || strings.HasPrefix(err.Error(), "store: ") {
		return err
	}
	if errors.Is(err, badger.ErrConflict) {
		return fmt.Errorf("store: %s failed: conflicting concurrent update", op)
	}
	if errors.Is(err, badger.ErrTxnTooBig) {
		return fmt.Errorf("store: %s failed: transaction too big", op)
	}
	// Our own file system calls: their text is a path and an errno.
	var pe *fs.PathError
	var le *os.LinkError
	if errors.As(err, &pe) || errors.As(err, &le) {
		return fmt.Errorf("store: %s failed: %w", op, err)
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return fmt.Errorf("store: %s failed: %w", op, errno)
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if strings.Contains(msg, " exceeded ") {
		return fmt.Errorf("store: %s failed: value too large", op)
	}
	const maxLen = 240
	if len(msg) > maxLen {
		msg = msg[:maxLen] + "…"
	}
	return fmt.Errorf("store: %s failed: %s", op, msg)
}
