package badgerkv

import (
	"bytes"
	"errors"

	"github.com/dgraph-io/badger/v4"

	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// Engine is an open Badger database as a kv.Engine. It is safe for
// concurrent use; each View and Update is a Badger transaction.
type Engine struct {
	db     *badger.DB
	limits kv.Limits
}

var _ kv.Engine = (*Engine)(nil)

// valueHeadroom is what Badger's value-log entry adds to a value, which
// must still fit in one value-log file.
const valueHeadroom = 64 << 10

// New serves db, which stays the caller's: Close closes it.
func New(db *badger.DB) *Engine {
	opt := db.Opts()
	return &Engine{db: db, limits: kv.Limits{
		MaxValueBytes: int(opt.ValueLogFileSize) - valueHeadroom,
		// Badger refuses the write that makes its count reach
		// MaxBatchCount, and counts one entry more for the commit's mark.
		MaxTxnOps: int(db.MaxBatchCount()) - 2,
		// No byte limit in the interface's terms: Badger counts a value it
		// keeps in its value log as a pointer, so a transaction may hold
		// far more than MaxBatchSize of such values, and refuses by its
		// own measure (ErrTooBig) past MaxBatchSize.
	}}
}

// DB is the database under the engine, for the maintenance only Badger has.
func (e *Engine) DB() *badger.DB { return e.db }

func (e *Engine) Limits() kv.Limits { return e.limits }

func (e *Engine) Close() error { return e.db.Close() }

func (e *Engine) View(fn func(kv.Txn) error) error {
	return mapErr(e.db.View(func(txn *badger.Txn) error { return fn(&Txn{txn: txn, e: e}) }))
}

func (e *Engine) Update(fn func(kv.Txn) error) error {
	return mapErr(e.db.Update(func(txn *badger.Txn) error { return fn(&Txn{txn: txn, e: e}) }))
}

// mapErr turns Badger's errors of the interface's kinds into kv's; every
// other error (a damaged file, the caller's own) passes unchanged.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, badger.ErrConflict):
		return kv.ErrConflict
	case errors.Is(err, badger.ErrTxnTooBig):
		return kv.ErrTooBig
	case errors.Is(err, badger.ErrKeyNotFound):
		return kv.ErrNotFound
	}
	return err
}

// Txn is a Badger transaction as a kv.Txn.
type Txn struct {
	txn *badger.Txn
	e   *Engine
}

// Badger is the transaction under t, for the store's Badger-only paths.
func (t *Txn) Badger() *badger.Txn { return t.txn }

// Get returns the value in place: Badger keeps it valid until the
// transaction ends (Item.Value).
func (t *Txn) Get(key []byte) ([]byte, error) {
	item, err := t.txn.Get(key)
	if err != nil {
		return nil, mapErr(err)
	}
	var v []byte
	err = item.Value(func(b []byte) error { v = b; return nil })
	return v, err
}

func (t *Txn) Set(key, value []byte) error {
	if len(value) > t.e.limits.MaxValueBytes {
		return kv.ErrTooBig // Badger's own error would hold a hex dump of the value
	}
	return mapErr(t.txn.Set(key, value))
}

func (t *Txn) Delete(key []byte) error { return mapErr(t.txn.Delete(key)) }

// Iterate reads no value ahead (PrefetchValues off): the store reads few
// of the values it passes over, and most are read once.
func (t *Txn) Iterate(opt kv.IterOptions) kv.Iterator {
	return &Iterator{
		it:      t.txn.NewIterator(badger.IteratorOptions{Prefix: opt.Prefix, Reverse: opt.Reverse}),
		prefix:  opt.Prefix,
		reverse: opt.Reverse,
	}
}

// Iterator is a Badger iterator with the interface's Seek: Badger's own,
// when reversed, seeks to the key at or before the one given, even for an
// empty key (then the prefix itself, before every key inside it).
type Iterator struct {
	it      *badger.Iterator
	prefix  []byte
	reverse bool
	last    []byte // the largest key Badger takes inside prefix (made at need)
}

// maxKey is Badger's largest key.
const maxKey = 65000

func (i *Iterator) Seek(key []byte) {
	switch {
	case !i.reverse:
		if bytes.Compare(key, i.prefix) < 0 {
			key = i.prefix
		}
	case len(i.prefix) == 0:
		// Badger's own: an empty key is the last key.
	case len(key) == 0 || !bytes.HasPrefix(key, i.prefix) && bytes.Compare(key, i.prefix) > 0:
		if i.last == nil {
			i.last = append(bytes.Clone(i.prefix), bytes.Repeat([]byte{0xff}, maxKey-len(i.prefix))...)
		}
		key = i.last
	}
	i.it.Seek(key)
}

func (i *Iterator) Valid() bool { return i.it.Valid() }
func (i *Iterator) Next()       { i.it.Next() }
func (i *Iterator) Key() []byte { return i.it.Item().Key() }
func (i *Iterator) Close()      { i.it.Close() }

// Value is valid until the next Seek, Next or Close (Item.Value).
func (i *Iterator) Value() ([]byte, error) {
	var v []byte
	err := i.it.Item().Value(func(b []byte) error { v = b; return nil })
	return v, err
}

// Item is the Badger item under the iterator, for the store's Badger-only
// paths (versions, sizes).
func (i *Iterator) Item() *badger.Item { return i.it.Item() }

// EstimatedSize is what the entry takes in Badger's tables and value log
// (Item.EstimatedSize), told without reading a value kept in the value log.
func (i *Iterator) EstimatedSize() int64 { return i.it.Item().EstimatedSize() }

// ReadVersion is the timestamp a transaction begun now reads at: every
// commit moves it on, so equal versions are the same data.
func (e *Engine) ReadVersion() uint64 {
	txn := e.db.NewTransaction(false)
	defer txn.Discard()
	return txn.ReadTs()
}
