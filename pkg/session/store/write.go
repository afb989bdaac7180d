package store

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// testHookTxnCommitted lets the crash test die between the transactions of
// a split Commit.
var testHookTxnCommitted func(n int)

// testMetaRedone counts Commits whose metadata did not fit beside their
// last nodes (tests).
var testMetaRedone atomic.Int64

func tooLarge(what string, size int) error {
	return fmt.Errorf("store: %s is too large (%d bytes; the limit is %d)", what, size, maxValueSize)
}

// Commit writes nodes and then the metadata with its listing entry, in one
// transaction when they fit. Otherwise the nodes go in as many transactions as needed and the
// metadata last in its own: readers only follow seqs below meta.NextSeq
// reachable from meta.Head, so a crash in between leaves invisible orphans
// that later appends overwrite. Every value is encoded and checked before
// anything is written.
func (s *Store) Commit(meta *session.Meta, nodes []session.Node) error {
	if err := s.writable(); err != nil {
		return err
	}
	id, err := parseID(meta.ID)
	if err != nil {
		return err
	}
	if meta.ID != id.String() {
		return fmt.Errorf("store: session id %s is not in canonical form", meta.ID)
	}
	if reservedID(id) {
		return fmt.Errorf("store: session id %s is reserved", meta.ID)
	}
	if meta.Head >= meta.NextSeq && meta.Head != 0 {
		return fmt.Errorf("store: session %s: head %d is not below next_seq %d", id, meta.Head, meta.NextSeq)
	}
	vals := make([][]byte, len(nodes))
	size := 0
	for i := range nodes {
		n := &nodes[i]
		if n.Seq == 0 || n.Seq >= meta.NextSeq {
			return fmt.Errorf("store: session %s: node seq %d is outside 1..%d", id, n.Seq, meta.NextSeq-1)
		}
		vals[i] = record.EncodeNode(n)
		if len(vals[i]) > maxValueSize {
			return tooLarge(fmt.Sprintf("node %d", n.Seq), len(vals[i]))
		}
	}
	if err := s.shareRepeats(id, nodes, vals); err != nil {
		return mapErr("commit", err)
	}
	for _, v := range vals {
		size += len(v)
	}
	if s.bulk {
		s.moved.Add(int64(size))
	}
	metaVal := record.EncodeMeta(meta)
	if len(metaVal) > maxValueSize {
		return tooLarge("session metadata", len(metaVal))
	}
	if err := s.roomFor(size + 2*len(metaVal)); err != nil {
		return err
	}
	summary, err := summaryOf(meta, metaVal)
	if err != nil {
		return fmt.Errorf("store: session %s: its metadata does not read back: %v", id, err)
	}

	txn := s.db.NewTransaction(true)
	defer func() { txn.Discard() }()
	txns := 1
	next := func() error {
		if err := txn.Commit(); err != nil {
			return err
		}
		s.wrote.Store(true)
		if testHookTxnCommitted != nil {
			testHookTxnCommitted(txns)
		}
		txn = s.db.NewTransaction(true)
		txns++
		return nil
	}
	first := 0 // nodes[first:] are in txn
	for i := range nodes {
		k := nodeKey(id, nodes[i].Seq)
		err := txn.Set(k, vals[i])
		if errors.Is(err, badger.ErrTxnTooBig) {
			if err = next(); err == nil {
				first = i
				err = txn.Set(k, vals[i])
			}
		}
		if err != nil {
			return mapErr("commit", err)
		}
	}
	if txns > 1 {
		// The metadata alone in the last transaction: the commit point.
		if err := next(); err != nil {
			return mapErr("commit", err)
		}
		first = len(nodes)
	}
	err = putMeta(txn, id, meta, metaVal, summary)
	if errors.Is(err, badger.ErrTxnTooBig) {
		// The metadata and its listing entry commit together or not at
		// all: redo this transaction's nodes alone, then the metadata.
		txn.Discard()
		txn = s.db.NewTransaction(true)
		err = nil
		for i := first; i < len(nodes) && err == nil; i++ {
			err = txn.Set(nodeKey(id, nodes[i].Seq), vals[i])
		}
		if err == nil {
			err = next()
		}
		if err == nil {
			testMetaRedone.Add(1)
			err = putMeta(txn, id, meta, metaVal, summary)
		}
	}
	if err == nil {
		err = txn.Commit()
	}
	if err != nil {
		return mapErr("commit", err)
	}
	s.wrote.Store(true)
	s.lastTxns.Store(int64(txns))
	return nil
}

// DeleteSession removes the metadata first (the commit point: the session
// is gone for every reader from then on), then its nodes and blobs.
func (s *Store) DeleteSession(id string) error {
	if err := s.writable(); err != nil {
		return err
	}
	key, err := parseID(id)
	if err != nil {
		return err
	}
	err = s.db.Update(func(txn *badger.Txn) error {
		listing, err := storedListingKey(txn, key)
		if err != nil {
			return err
		}
		if listing == nil {
			return badger.ErrKeyNotFound
		}
		if err := txn.Delete(listing); err != nil {
			return err
		}
		return txn.Delete(metaKey(key))
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return sessionNotFound(id)
	}
	if err != nil {
		return mapErr("delete", err)
	}
	s.wrote.Store(true)

	wb := s.db.NewWriteBatch()
	err = s.db.View(func(txn *badger.Txn) error {
		prefix := sessionPrefix(key)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Seek(prefix); it.Valid(); it.Next() {
			if err := wb.Delete(it.Item().KeyCopy(nil)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		wb.Cancel()
		return mapErr("delete", err)
	}
	return mapErr("delete", wb.Flush())
}

// PutBlob stores content under its sha256 in the session's range.
func (s *Store) PutBlob(id string, sum [32]byte, data []byte) error {
	if err := s.writable(); err != nil {
		return err
	}
	key, err := parseID(id)
	if err != nil {
		return err
	}
	if sha256.Sum256(data) != sum {
		return errors.New("store: blob content does not match its sha256")
	}
	if len(data) > maxValueSize {
		return tooLarge("blob", len(data))
	}
	if err := s.roomFor(len(data)); err != nil {
		return err
	}
	err = s.db.Update(func(txn *badger.Txn) error { return txn.Set(blobKey(key, sum), data) })
	if err != nil {
		return mapErr("write blob", err)
	}
	s.wrote.Store(true)
	return nil
}
