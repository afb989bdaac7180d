package kvstore

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// testHookTxnCommitted lets the crash test die between the transactions of
// a split Commit.
var testHookTxnCommitted func(n int)

// testMetaRedone counts Commits whose metadata did not fit beside their
// last nodes (tests).
var testMetaRedone atomic.Int64

// tooBig reports a value beyond the engine's largest (checked here
// because Badger's own error embeds a hex dump of the value).
func (s *Store) tooBig(what string, v []byte) error {
	if limit := s.eng.Limits().MaxValueBytes; limit > 0 && len(v) > limit {
		return fmt.Errorf("store: %s is too large (%d bytes; the limit is %d)", what, len(v), limit)
	}
	return nil
}

// Commit writes nodes and then the metadata with its listing entry, in one
// transaction when they fit in one of the engine's (kv.ErrTooBig tells).
// Otherwise the nodes go in as many transactions as needed and the
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
		if err := s.tooBig(fmt.Sprintf("node %d", n.Seq), vals[i]); err != nil && s.shared == nil {
			return err // a shared engine's store stores it in pieces (chunks.go)
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
	if err := s.tooBig("session metadata", metaVal); err != nil {
		return err
	}
	if err := s.roomFor(size + 2*len(metaVal)); err != nil {
		return err
	}
	summary, err := summaryOf(meta, metaVal)
	if err != nil {
		return fmt.Errorf("store: session %s: its metadata does not read back: %v", id, err)
	}

	if s.shared != nil {
		return s.commitShared(id, meta, nodes, vals, metaVal, summary)
	}
	// In one transaction when it all fits. Else the nodes in as many as
	// they fill, and the metadata with its listing entry alone in the
	// last: the commit point.
	txns := 0
	metaAlone := false
	for first := 0; ; {
		next, metaIn := first, false
		err := s.eng.Update(func(txn kv.Txn) error {
			for next = first; next < len(nodes); next++ {
				err := txn.Set(nodeKey(id, nodes[next].Seq), vals[next])
				if errors.Is(err, kv.ErrTooBig) && next > first {
					return nil // commit the nodes that fit
				}
				if err != nil {
					return err
				}
			}
			if metaAlone && next > first {
				return nil
			}
			err := putMeta(txn, id, meta, metaVal, summary)
			if err == nil {
				err = markPending(txn, id, nodes, meta.NextSeq)
			}
			if errors.Is(err, kv.ErrTooBig) && next > first {
				return errMetaTooBig // nothing committed: the nodes again, alone
			}
			metaIn = err == nil
			return err
		})
		if errors.Is(err, errMetaTooBig) {
			testMetaRedone.Add(1)
			metaAlone = true
			continue
		}
		if err != nil {
			return mapErr("commit", err)
		}
		txns++
		s.wrote.Store(true)
		if metaIn {
			break
		}
		metaAlone, first = true, next
		if testHookTxnCommitted != nil {
			testHookTxnCommitted(txns)
		}
	}
	s.lastTxns.Store(int64(txns))
	s.foldIfDue(id)
	return nil
}

// errMetaTooBig ends a Commit's transaction whose metadata does not fit
// beside its nodes.
var errMetaTooBig = errors.New("store: the metadata does not fit beside the nodes")

// errNoSession ends the transaction of a removal that found no session.
var errNoSession = errors.New("store: no such session")

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
	runs := 0
	err = s.eng.Update(func(txn kv.Txn) error {
		runs++
		listing, err := storedListingKey(txn, key)
		if err != nil {
			return err
		}
		if listing == nil {
			return errNoSession
		}
		if err := txn.Delete(listing); err != nil {
			return err
		}
		return txn.Delete(metaKey(key))
	})
	if errors.Is(err, errNoSession) && runs > 1 && s.shared != nil {
		err = nil // run again after a lost answer: gone, by this run or another
	}
	if errors.Is(err, errNoSession) {
		return sessionNotFound(id)
	}
	if err != nil {
		return mapErr("delete", err)
	}
	s.wrote.Store(true)

	// Past the commit point: the rest may take many transactions, and what
	// a crash leaves is a range without metadata, invisible and purged.
	b := &keyBatch{s: s}
	err = s.eng.View(func(txn kv.Txn) error {
		prefix := sessionPrefix(key)
		it := txn.Iterate(kv.IterOptions{Prefix: prefix, KeysOnly: true})
		defer it.Close()
		for it.Seek(prefix); it.Valid(); it.Next() {
			if err := b.del(it.Key()); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = b.flush()
	}
	return mapErr("delete", err)
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
	if err := s.tooBig("blob", data); err != nil {
		if s.shared == nil {
			return err
		}
		return s.putLargeBlob(key, sum, data)
	}
	if err := s.roomFor(len(data)); err != nil {
		return err
	}
	err = s.eng.Update(func(txn kv.Txn) error { return txn.Set(blobKey(key, sum), data) })
	if err != nil {
		return mapErr("write blob", err)
	}
	s.wrote.Store(true)
	return nil
}
