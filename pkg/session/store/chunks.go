package store

import (
	"bytes"
	"crypto/sha256"
	"errors"

	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// A node too large for one value of a shared engine (etcd: 1 MiB; wc
// takes messages up to 32 MiB) keeps its header in its record and its
// message in pieces (record.EncodeNodeChunked), each under its sha256 in
// the session's range: chunkKey. The pieces are written first, under the
// commit's guard, in transactions of their own (content-addressed, so
// that writing one again is harmless); the record naming them goes in
// with the rest of the commit. Reads join them (refResolver.resolve);
// Collect deletes the pieces no kept node names.

func chunkKey(id sid, sum [32]byte) []byte {
	return append(append(sessionPrefix(id), tagChunk), sum[:]...)
}

func chunkPrefix(id sid) []byte { return append(sessionPrefix(id), tagChunk) }

// chunkSize is the largest piece: one fits in a value and, with its key,
// in a transaction.
func (s *Store) chunkSize() int {
	lim := s.eng.Limits()
	size := lim.MaxValueBytes
	if lim.MaxTxnBytes > 0 {
		size = min(size, int(lim.MaxTxnBytes)-1024)
	}
	return size - 1024
}

// pending is a write a split commit makes ahead of its metadata.
type pending struct{ key, val []byte }

// chunkLarge turns each value of vals too large for the engine into a
// chunked record, and returns the pieces to write first.
func (s *Store) chunkLarge(id sid, vals [][]byte) ([]pending, error) {
	limit := s.eng.Limits().MaxValueBytes
	var pieces []pending
	for i, v := range vals {
		if limit <= 0 || len(v) <= limit {
			continue
		}
		rec, parts, err := record.EncodeNodeChunked(v, s.chunkSize())
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			pieces = append(pieces, pending{key: chunkKey(id, sha256.Sum256(p)), val: p})
		}
		vals[i] = rec
	}
	return pieces, nil
}

// joinChunks returns, in buf's space, the full record of a chunked one.
func joinChunks(txn kv.Txn, id sid, seq uint64, v, buf []byte) ([]byte, error) {
	sums, ok := record.NodeChunks(v)
	if !ok {
		return nil, corrupt(id, "node %d names its pieces wrongly", seq)
	}
	pieces := make([][]byte, len(sums))
	for i, sum := range sums {
		p, err := txn.Get(chunkKey(id, sum))
		if errors.Is(err, kv.ErrNotFound) {
			return nil, corrupt(id, "a piece of node %d is missing", seq)
		}
		if err != nil {
			return nil, err
		}
		pieces[i] = p
	}
	full, err := record.AppendNodeFromChunks(buf[:0], v, pieces)
	if err != nil {
		return nil, corrupt(id, "node %d is malformed", seq)
	}
	return full, nil
}

// namedChunks adds to named the pieces a chunked record v names.
func namedChunks(named map[[32]byte]bool, v []byte) {
	sums, _ := record.NodeChunks(v)
	for _, sum := range sums {
		named[sum] = true
	}
}

// unnamedChunks is the keys of the session's pieces that no kept node
// names (pieces: what each chunked node names).
func (s *Store) unnamedChunks(id sid, kept map[uint64]bool, pieces map[uint64]map[[32]byte]bool) ([][]byte, error) {
	named := map[[32]byte]bool{}
	for seq, sums := range pieces {
		if kept[seq] {
			for sum := range sums {
				named[sum] = true
			}
		}
	}
	var keys [][]byte
	err := s.eng.View(func(txn kv.Txn) error {
		prefix := chunkPrefix(id)
		it := txn.Iterate(kv.IterOptions{Prefix: prefix, KeysOnly: true})
		defer it.Close()
		for it.Seek(prefix); it.Valid(); it.Next() {
			var sum [32]byte
			copy(sum[:], it.Key()[len(prefix):])
			if !named[sum] {
				keys = append(keys, bytes.Clone(it.Key()))
			}
		}
		return nil
	})
	return keys, mapErr("read", err)
}
