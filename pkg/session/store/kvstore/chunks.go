package kvstore

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"

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
func (s *Store) unnamedChunks(id sid, kept map[uint64]bool, pieces map[uint64]map[[32]byte]bool, doomedBlobs [][]byte) ([][]byte, error) {
	named := map[[32]byte]bool{}
	for seq, sums := range pieces {
		if kept[seq] {
			for sum := range sums {
				named[sum] = true
			}
		}
	}
	doomed := map[string]bool{}
	for _, k := range doomedBlobs {
		doomed[string(k)] = true
	}
	var keys [][]byte
	err := s.eng.View(func(txn kv.Txn) error {
		// The pieces of the large blobs that stay are named too.
		prefix := append(sessionPrefix(id), tagLargeBlob)
		it := txn.Iterate(kv.IterOptions{Prefix: prefix})
		defer it.Close()
		for it.Seek(prefix); it.Valid(); it.Next() {
			if doomed[string(it.Key())] {
				continue
			}
			v, err := it.Value()
			if err != nil {
				return err
			}
			for i := 0; i+32 <= len(v); i += 32 {
				named[[32]byte(v[i:i+32])] = true
			}
		}
		prefix = chunkPrefix(id)
		cit := txn.Iterate(kv.IterOptions{Prefix: prefix, KeysOnly: true})
		defer cit.Close()
		for cit.Seek(prefix); cit.Valid(); cit.Next() {
			var sum [32]byte
			copy(sum[:], cit.Key()[len(prefix):])
			if !named[sum] {
				keys = append(keys, bytes.Clone(cit.Key()))
			}
		}
		return nil
	})
	return keys, mapErr("read", err)
}

// A blob too large for one value is stored the same way: its pieces under
// their sums, then, under largeBlobKey, the sums in order (32 bytes each);
// Blob joins them. Its last transaction reads every piece, so that a
// Collect that deleted one meanwhile (a piece no record named yet) makes
// it write them again rather than name a missing piece.

// tagLargeBlob is the key of the sums of a large blob's pieces.
const tagLargeBlob = 'b'

// maxBlobPieces bounds a large blob's pieces: its last transaction reads
// each (an etcd transaction compares at most 128 keys).
const maxBlobPieces = 100

func largeBlobKey(id sid, sum [32]byte) []byte {
	return append(append(sessionPrefix(id), tagLargeBlob), sum[:]...)
}

// blobKeyOf is the blob key a large blob's key stands for (nil for any
// other key).
func blobKeyOf(id sid, key []byte) []byte {
	if len(key) != sessionKeyLen+1+32 || key[sessionKeyLen] != tagLargeBlob {
		return nil
	}
	return blobKey(id, [32]byte(key[sessionKeyLen+1:]))
}

// errPieceGone ends a large blob's last transaction that found a piece
// missing: its pieces are written again.
var errPieceGone = errors.New("store: a piece of the blob is gone")

func (s *Store) putLargeBlob(id sid, sum [32]byte, data []byte) error {
	size := s.chunkSize()
	if (len(data)+size-1)/size > maxBlobPieces {
		return fmt.Errorf("store: blob is too large (%d bytes; the limit is %d)", len(data), maxBlobPieces*size)
	}
	var sums []byte
	var keys [][]byte
	b := &keyBatch{s: s}
	for rest := data; len(rest) > 0; {
		p := rest[:min(size, len(rest))]
		rest = rest[len(p):]
		ps := sha256.Sum256(p)
		sums = append(sums, ps[:]...)
		keys = append(keys, chunkKey(id, ps))
	}
	for range 3 {
		for i, k := range keys {
			if err := b.set(k, data[i*size:min(len(data), (i+1)*size)]); err != nil {
				return mapErr("write blob", err)
			}
		}
		if err := b.flush(); err != nil {
			return mapErr("write blob", err)
		}
		err := s.eng.Update(func(txn kv.Txn) error {
			for _, k := range keys {
				if _, err := txn.Get(k); errors.Is(err, kv.ErrNotFound) {
					return errPieceGone
				} else if err != nil {
					return err
				}
			}
			return txn.Set(largeBlobKey(id, sum), sums)
		})
		if errors.Is(err, errPieceGone) {
			continue
		}
		if err != nil {
			return mapErr("write blob", err)
		}
		s.wrote.Store(true)
		return nil
	}
	return &changedError{id: id.String(), why: " (its pieces kept being collected)"}
}

// largeBlob reads a blob stored in pieces; kv.ErrNotFound without one.
func largeBlob(txn kv.Txn, id sid, sum [32]byte) ([]byte, error) {
	sums, err := txn.Get(largeBlobKey(id, sum))
	if err != nil {
		return nil, err
	}
	var data []byte
	for i := 0; i+32 <= len(sums); i += 32 {
		p, err := txn.Get(chunkKey(id, [32]byte(sums[i:i+32])))
		if errors.Is(err, kv.ErrNotFound) {
			return nil, corrupt(id, "a piece of blob %x is missing", sum[:6])
		}
		if err != nil {
			return nil, err
		}
		data = append(data, p...)
	}
	if sha256.Sum256(data) != sum {
		return nil, corrupt(id, "blob %x does not match its sha256", sum[:6])
	}
	return data, nil
}

// largeBlobSizes adds to sizes the keys of the session's large blobs.
func largeBlobSizes(txn kv.Txn, id sid, sizes map[string]int64) {
	prefix := append(sessionPrefix(id), tagLargeBlob)
	it := txn.Iterate(kv.IterOptions{Prefix: prefix})
	defer it.Close()
	for it.Seek(prefix); it.Valid(); it.Next() {
		sizes[string(bytes.Clone(it.Key()))] = entrySize(it)
	}
}
