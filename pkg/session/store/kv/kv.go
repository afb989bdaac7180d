package kv

import (
	"errors"
	"time"
)

// Engine is an ordered key-value store with snapshot reads and atomic,
// optimistically checked writes. Keys are compared as bytes.
type Engine interface {
	// View runs fn in a read-only transaction that sees one snapshot of
	// the store from its start to its end.
	View(fn func(Txn) error) error
	// Update runs fn in a read-write transaction and commits what it set
	// and deleted, all of it or none, when fn returns nil. It fails with
	// ErrConflict, committing nothing, when a key fn read with Get was
	// changed by another commit since the transaction began; the store
	// retries such an Update (and looks first, after ErrUnknownResult,
	// whether it was applied). Scans need not be checked for conflicts:
	// the store guards each change of a session by reading (Get) and
	// writing its metadata record. An engine may check them too (Badger
	// counts every key an iterator visited as read: a retry more, never a
	// check less; kvtest.ScansConflict).
	Update(fn func(Txn) error) error
	// Limits are the sizes the engine takes; the store never asks for
	// more.
	Limits() Limits
	Close() error
}

// Bounded is an Engine whose requests can wait on a stalled cluster
// (etcd): Within is the same engine with every request of its
// transactions bounded by deadline as well as by the engine's own
// timeouts, so that a caller retrying until deadline is answered about
// then. Closing what Within returns closes nothing.
type Bounded interface {
	Within(deadline time.Time) Engine
}

// Txn is a transaction's view of the store. Writes are seen by the
// transaction's own Gets (not necessarily by iterators opened before
// them) and by others only once committed.
type Txn interface {
	// Get returns a key's value, or ErrNotFound. The value is the
	// caller's to read until the transaction ends, never to change.
	Get(key []byte) ([]byte, error)
	// Iterate opens an iterator; it must be closed before the
	// transaction ends.
	Iterate(opt IterOptions) Iterator
	// Set writes a key; ErrTooBig when the value, or the transaction
	// with it, exceeds the engine's Limits (the transaction stays usable
	// without that write).
	Set(key, value []byte) error
	// Delete removes a key, which need not exist; ErrTooBig as Set.
	Delete(key []byte) error
}

// IterOptions select the keys an iterator visits.
type IterOptions struct {
	Prefix   []byte // only keys that begin with it (nil: every key)
	Reverse  bool   // from the largest key down
	KeysOnly bool   // Value will not be called: an engine may skip reading values
}

// Iterator visits keys in order. It starts invalid: call Seek first.
type Iterator interface {
	// Seek moves to the first key at or after key (at or before it, when
	// Reverse), within the prefix; an empty key is the start of the
	// prefix (its end, when Reverse).
	Seek(key []byte)
	Valid() bool
	Next()
	// Key and Value are the caller's to read until the next Seek, Next
	// or Close, never to change.
	Key() []byte
	Value() ([]byte, error)
	Close()
}

// Limits are what an engine takes in one value and one transaction. Zero
// means no limit of that kind in these terms: an engine that measures a
// transaction in its own (Badger counts a value kept in its value log as
// a pointer) declares none and answers ErrTooBig by its measure, which
// the store handles as it handles these. Every Set and Delete counts
// against MaxTxnOps; an engine may count a key written twice as two
// writes (Badger; kvtest.RewritesCount).
type Limits struct {
	MaxValueBytes int   // the largest value
	MaxTxnBytes   int64 // the keys and values one transaction may write in all
	MaxTxnOps     int   // the writes (sets and deletes) one transaction may hold
}

var (
	// ErrNotFound is Get's answer for a key that is not there.
	ErrNotFound = errors.New("kv: key not found")
	// ErrConflict is Update's answer when another commit changed what the
	// transaction read: nothing was written, and the update may be run
	// again.
	ErrConflict = errors.New("kv: transaction conflict")
	// ErrTooBig is a write beyond the engine's Limits.
	ErrTooBig = errors.New("kv: value or transaction too big")
	// ErrUnknownResult is Update's answer when the commit was sent but its
	// answer lost (a connection cut, a timeout): it may have been applied
	// or not. The store writes a token of its own in each commit and looks
	// for it before it tries again, so that nothing is applied twice.
	ErrUnknownResult = errors.New("kv: the commit's result is unknown")
)
