package kv

import (
	"context"
	"errors"
)

// Change is what one commit did to one key.
type Change struct {
	Key     []byte
	Value   []byte // the new value; nil when Deleted
	Deleted bool
}

// Watcher is an Engine that reports what is committed to it, so that a
// process serving the store can follow sessions and keep its listing as
// other processes (other machines, on a shared engine) change them.
type Watcher interface {
	// Watch runs sync in a read transaction, then calls changed with the
	// changes each later commit made to keys that begin with one of
	// prefixes, in commit order (across prefixes, in commit order for each),
	// a commit's changes under one prefix in one call, until ctx is done
	// (it returns nil), a callback fails (its error), or the watch cannot
	// go on (ErrWatchEnded: the engine closed, or was replaced). No commit
	// is missed: each is either seen by sync's transaction or passed to
	// changed after it, never both. When the engine can no longer tell
	// what changed (etcd compacted the revisions the watch would resume
	// from), it runs sync again in a new transaction, and goes on from
	// there: callers keep state that a sync replaces.
	Watch(ctx context.Context, prefixes [][]byte, sync func(Txn) error, changed func([]Change) error) error
}

// ErrWatchEnded is returned by Watch when the engine stopped reporting
// changes without being asked to: open it (or its replacement) again, and
// watch again.
var ErrWatchEnded = errors.New("kv: the watch ended with the engine")
