package kvstore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/storedir"
)

// Sentinels for errors.Is. The errors returned carry their own text (commands
// print err.Error() verbatim), so these are only matched, never printed.
var (
	ErrBusy      = store.ErrBusy
	ErrNotFound  = store.ErrNotFound
	ErrAmbiguous = store.ErrAmbiguous
	ErrNotStore  = store.ErrNotStore
)

// ErrChanged is store.ErrChanged: re-read the session and apply the
// operation again (RetryChanged).
var ErrChanged = store.ErrChanged

type changedError struct {
	id  string
	why string
}

func (e *changedError) Error() string {
	return "session " + e.id + " changed since it was read" + e.why
}

func (e *changedError) Is(target error) bool { return target == ErrChanged || target == ErrBusy }

func sessionChanged(id sid) error { return &changedError{id: id.String()} }

// errReadOnly is returned by mutations on a store opened with Read.
var errReadOnly = store.ErrReadOnly

func notFoundf(format string, args ...any) error {
	return &store.KindError{Msg: fmt.Sprintf(format, args...), Kind: ErrNotFound}
}

func sessionNotFound(ref string) error { return store.SessionNotFound(ref) }

func busyError(dir string) error { return storedir.BusyError(dir) }

func notStoreError(path string, isFile bool) error {
	if isFile {
		return &store.KindError{Msg: path + " is a file, not a store directory", Kind: ErrNotStore}
	}
	return &store.KindError{Msg: path + " is not a wc store directory", Kind: ErrNotStore}
}

// foreignDirError refuses a directory that holds something a store does not,
// naming it so that the user can see why.
func foreignDirError(dir, entry string) error {
	return &store.KindError{Msg: dir + " is not a wc store directory (it holds " + entry + ")", Kind: ErrNotStore}
}

// RefError is a session reference that cannot name a session at all (too
// short, not hex). Commands treat it as a usage error.
type RefError = store.RefError

// mapErr turns an error from Badger (or the file system under it) into one
// that is safe to print: Badger's size errors append a hex dump of the value,
// which here is transcript content, so only the first line is ever kept.
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var te *store.KindError
	var re *RefError
	var ce *changedError
	if errors.As(err, &te) || errors.As(err, &re) || errors.As(err, &ce) || strings.HasPrefix(err.Error(), "store: ") {
		return err
	}
	if badgerkv.IsDamage(err) {
		return damagedRead(op, err)
	}
	if isNoSpace(err) {
		return &store.KindError{Msg: fmt.Sprintf("store: %s failed: no space left on the store's device (store unchanged)", op), Kind: ErrNoSpace,
			Hints: []string{"free space on that file system and try again"}}
	}
	if errors.Is(err, kv.ErrConflict) {
		return fmt.Errorf("store: %s failed: conflicting concurrent update", op)
	}
	if errors.Is(err, kv.ErrTooBig) {
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
	msg := badgerkv.Message(err)
	if strings.Contains(msg, " exceeded ") {
		return fmt.Errorf("store: %s failed: value too large", op)
	}
	return fmt.Errorf("store: %s failed: %s", op, msg)
}

// damagedRead is the error of a read that found a damaged file.
func damagedRead(op string, err error) error {
	msg := badgerkv.Message(err)
	return &store.KindError{Msg: fmt.Sprintf("store: the store is damaged: %s found %s", op, msg), Kind: ErrDamaged}
}

// ErrDamaged is the kind of the errors of a damaged store.
var ErrDamaged = store.ErrDamaged

// panicked turns a panic of Badger's, on data that fails its checks
// before it checks them, into the error of a damaged store, and poisons
// the handle: the panic may have left Badger's locks held.
func (s *Store) panicked(op string, err *error) {
	if r := recover(); r != nil {
		s.poisoned.Store(true)
		*err = &store.KindError{Msg: fmt.Sprintf("store %s is damaged: %s failed on data that does not decode (%v)", s.dir, op, firstLineOf(fmt.Sprint(r))), Kind: ErrDamaged}
	}
}

// errLostValue: Badger answers a value it cannot read from its value log
// (the file is missing, or the entry fails its checksum) with an empty
// value and no error, and only logs what it found. Every record wc writes
// holds something, so an empty one is a damaged store.
var errLostValue = &store.KindError{Msg: "store: the store is damaged: a value in its value log cannot be read", Kind: store.ErrDamaged}

// useValue runs fn on a value read from the engine, refusing an empty one
// (errLostValue).
func useValue(v []byte, fn func(v []byte) error) error {
	if len(v) == 0 {
		return errLostValue
	}
	return fn(v)
}

// copyValue is a copy of a value read from the engine, refusing an empty
// one.
func copyValue(v []byte) ([]byte, error) {
	if len(v) == 0 {
		return nil, errLostValue
	}
	return bytes.Clone(v), nil
}

// iterValue is useValue for the iterator's value.
func iterValue(it kv.Iterator, fn func(v []byte) error) error {
	v, err := it.Value()
	if err != nil {
		return err
	}
	return useValue(v, fn)
}

// iterValueCopy is copyValue for the iterator's value.
func iterValueCopy(it kv.Iterator) ([]byte, error) {
	v, err := it.Value()
	if err != nil {
		return nil, err
	}
	return copyValue(v)
}

// entrySize is what an entry takes in the store, as the engine counts it
// when it can tell (Badger: a value in its value log counts there, not in
// the tables), else the key and value.
func entrySize(it kv.Iterator) int64 {
	if e, ok := it.(interface{ EstimatedSize() int64 }); ok {
		return e.EstimatedSize()
	}
	v, _ := it.Value()
	return int64(len(it.Key()) + len(v))
}
