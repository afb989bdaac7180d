package badgerkv

import (
	"errors"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/ristretto/v2/z"

	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// What the store does to a store directory's database besides
// transactions, and only Badger has (the store reaches it through an
// interface it type-asserts).

// Tables counts the database's tables: all of them, and those in level 0.
func (e *Engine) Tables() (total, level0 int) {
	for _, l := range e.db.Levels() {
		total += l.NumTables
		if l.Level == 0 {
			level0 = l.NumTables
		}
	}
	return total, level0
}

// Size is the bytes of the database's tables.
func (e *Engine) Size() int64 {
	var size int64
	for _, l := range e.db.Levels() {
		size += l.Size
	}
	return size
}

// Flatten merges level 0 into the store's one level (badger.md §2.4).
func (e *Engine) Flatten() error { return e.db.Flatten(1) }

// Sync makes what was committed durable without closing.
func (e *Engine) Sync() error { return e.db.Sync() }

// VerifyChecksum reads every table whole and checks its checksums.
func (e *Engine) VerifyChecksum() error { return e.db.VerifyChecksum() }

// PinTables holds open, until unpin, every table live now, and tells
// which tables those are: live before and after an iterator was made,
// which holds them open. A table not pinned may be closed (a merge's
// input) at any time.
func (e *Engine) PinTables() (pinned func(id uint64) bool, unpin func()) {
	before := e.db.Tables()
	txn := e.db.NewTransaction(false)
	it := txn.NewIterator(badger.IteratorOptions{}) // holds a reference to every table
	live := make(map[uint64]bool, len(before))
	for _, t := range before {
		live[t.ID] = true
	}
	both := make(map[uint64]bool, len(before))
	for _, t := range e.db.Tables() {
		if live[t.ID] {
			both[t.ID] = true
		}
	}
	return func(id uint64) bool { return both[id] }, func() { it.Close(); txn.Discard() }
}

// copyBatch is how much of the store the copy hands the new store's
// writer at a time.
const copyBatch = 8 << 20

// errNotBadger is CopyTo's answer for a destination of another engine.
var errNotBadger = errors.New("badgerkv: a copy's destination is not a Badger engine")

// CopyTo writes the latest value of every live key that keep takes (nil:
// all) into dst, a new database, in key order, through a StreamWriter. It
// reads with one iterator rather than Badger's Stream: that one queues up
// to 32 buffers of 32 MB while the writer is behind, so a copy of a 158 MB
// store held 588 MiB of heap.
func (e *Engine) CopyTo(dst kv.Engine, keep func(key []byte) bool) error {
	to, ok := dst.(*Engine)
	if !ok {
		return errNotBadger
	}
	sw := to.db.NewStreamWriter()
	if err := sw.Prepare(); err != nil {
		return err
	}
	err := e.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		buf := z.NewBuffer(copyBatch+copyBatch/4, "wc.copy")
		defer func() { _ = buf.Release() }()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			if keep != nil && !keep(item.Key()) {
				continue
			}
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			badger.KVToBuffer(&pb.KV{Key: item.KeyCopy(nil), Value: v, Version: item.Version(),
				UserMeta: []byte{item.UserMeta()}, ExpiresAt: item.ExpiresAt(), StreamId: 1}, buf)
			if buf.LenNoPadding() >= copyBatch {
				if err := sw.Write(buf); err != nil {
					return err
				}
				buf.Reset()
			}
		}
		return sw.Write(buf)
	})
	if err != nil {
		sw.Cancel()
		return err
	}
	return sw.Flush()
}
