package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/dgraph-io/badger/v4"

	"github.com/wctoolkit/wc/pkg/session/store/client"
)

// Sentinels for errors.Is. The errors returned carry their own text (commands
// print err.Error() verbatim), so these are only matched, never printed.
var (
	ErrBusy      = client.ErrBusy
	ErrNotFound  = client.ErrNotFound
	ErrAmbiguous = client.ErrAmbiguous
	ErrNotStore  = client.ErrNotStore
)

// errReadOnly is returned by mutations on a store opened with Read.
var errReadOnly = client.ErrReadOnly

func notFoundf(format string, args ...any) error {
	return &client.KindError{Msg: fmt.Sprintf(format, args...), Kind: ErrNotFound}
}

func sessionNotFound(ref string) error { return client.SessionNotFound(ref) }

func busyError(dir string) error { return client.BusyError(dir) }

func notStoreError(path string, isFile bool) error {
	if isFile {
		return &client.KindError{Msg: path + " is a file, not a store directory", Kind: ErrNotStore}
	}
	return &client.KindError{Msg: path + " is not a wc store directory", Kind: ErrNotStore}
}

// foreignDirError refuses a directory that holds something a store does not,
// naming it so that the user can see why.
func foreignDirError(dir, entry string) error {
	return &client.KindError{Msg: dir + " is not a wc store directory (it holds " + entry + ")", Kind: ErrNotStore}
}

// RefError is a session reference that cannot name a session at all (too
// short, not hex). Commands treat it as a usage error.
type RefError = client.RefError

// mapErr turns an error from Badger (or the file system under it) into one
// that is safe to print: Badger's size errors append a hex dump of the value,
// which here is transcript content, so only the first line is ever kept.
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var te *client.KindError
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
