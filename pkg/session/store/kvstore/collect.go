package kvstore

import (
	"bytes"
	"encoding/hex"
	"errors"
	"maps"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// testHookMaterialized lets a test look at the store between Collect's
// rewriting of references and its deletions.
var testHookMaterialized func()

// Freed is what a collection removed (or would remove).
type Freed = store.Freed

// Collect deletes the nodes of m's session that no path to the head or to a
// branch reaches, leftovers of interrupted commits, and blobs no kept node
// points at. The metadata is untouched, so a crash midway only leaves
// garbage for the next run. With dryRun it only counts.
func (s *Store) Collect(m *session.Meta, dryRun bool) (Freed, error) {
	var freed Freed
	if err := s.writable(); err != nil && !(dryRun && errors.Is(err, errReadOnly)) {
		return freed, err // a dry run only reads
	}
	key, err := parseID(m.ID)
	if err != nil {
		return freed, err
	}
	if !dryRun {
		// A collection writes little (deletions, and the messages of the
		// references it keeps) but writes through the memtable's map.
		if err := s.roomFor(0); err != nil {
			return freed, err
		}
	}
	parents := map[uint64]uint64{}
	refers := map[uint64]uint64{} // a reference's seq to the node holding its message
	size := map[uint64]int64{}
	pieces := map[uint64]map[[32]byte]bool{} // what chunked nodes name (chunks.go)
	var orphans [][]byte
	err = s.view(func(txn kv.Txn) error {
		it := txn.Iterate(kv.IterOptions{Prefix: nodePrefix(key)})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			seq, ok := keySeq(it.Key())
			if !ok || seq == 0 || seq >= m.NextSeq {
				orphans = append(orphans, bytes.Clone(it.Key()))
				freed.Bytes += entrySize(it)
				continue
			}
			if err := iterValue(it, func(v []byte) error {
				h, _, err := record.DecodeNodeHeader(v)
				parents[seq] = h.Parent
				if h.Same != 0 {
					refers[seq] = h.Same
				}
				if record.IsChunked(v) {
					pieces[seq] = map[[32]byte]bool{}
					namedChunks(pieces[seq], v)
				}
				return err
			}); err != nil {
				return err
			}
			size[seq] = entrySize(it)
		}
		return nil
	})
	if errors.Is(err, errNoStore) {
		return freed, sessionNotFound(m.ID) // a dry run of a reader's missing store
	}
	if err != nil {
		return freed, mapErr("read", err)
	}
	kept := map[uint64]bool{}
	keep := func(seq uint64) {
		for seq != 0 && !kept[seq] {
			if _, ok := parents[seq]; !ok {
				return
			}
			kept[seq] = true
			seq = parents[seq]
		}
	}
	for _, seq := range m.Roots() {
		keep(seq)
	}
	var garbage [][]byte
	for seq := range parents {
		if !kept[seq] {
			garbage = append(garbage, nodeKey(key, seq))
			freed.Bytes += size[seq]
		}
	}
	freed.Nodes = len(garbage) + len(orphans)
	// A kept reference to a node that goes must hold the message itself
	// first; until then, that node's blobs are the reference's.
	var orphaned []uint64
	holders := maps.Clone(kept)
	for seq, same := range refers {
		if kept[seq] {
			holders[same] = true
			if !kept[same] {
				orphaned = append(orphaned, seq)
				freed.Bytes -= size[same] - size[seq] // its message stays
			}
		}
	}
	blobs, blobBytes, err := s.unreferencedBlobs(key, holders)
	if err != nil {
		return freed, err
	}
	freed.Blobs, freed.Bytes = len(blobs), freed.Bytes+blobBytes
	var chunks [][]byte
	if s.shared != nil {
		if chunks, err = s.unnamedChunks(key, kept, pieces, blobs); err != nil {
			return freed, err
		}
	}
	if dryRun || freed.Nodes+freed.Blobs+len(chunks) == 0 {
		return freed, nil
	}
	if err := s.materialize(key, orphaned, m); err != nil {
		return freed, err
	}
	if testHookMaterialized != nil {
		testHookMaterialized()
	}
	// Deleted in as many transactions as it takes: what a crash midway
	// leaves is garbage the next run finds again.
	b := &keyBatch{s: s}
	if s.shared != nil {
		b.check = sessionUnchanged(key, m)
	}
	for _, keys := range [][][]byte{garbage, orphans, blobs, chunks} {
		for _, k := range keys {
			if err := b.del(k); err != nil {
				return freed, mapErr("gc", err)
			}
		}
	}
	if err := b.flush(); err != nil {
		return freed, mapErr("gc", err)
	}
	return freed, nil
}

// unreferencedBlobs finds the session's blobs that no kept node names.
func (s *Store) unreferencedBlobs(key sid, kept map[uint64]bool) ([][]byte, int64, error) {
	var blobs [][]byte
	var total int64
	sizes := map[string]int64{}
	err := s.eng.View(func(txn kv.Txn) error {
		prefix := append(sessionPrefix(key), tagBlob)
		it := txn.Iterate(kv.IterOptions{Prefix: prefix})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			sizes[string(bytes.Clone(it.Key()))] = entrySize(it)
		}
		if s.shared != nil {
			largeBlobSizes(txn, key, sizes)
		}
		if len(sizes) == 0 {
			return nil
		}
		referenced := map[string]bool{}
		it2 := txn.Iterate(kv.IterOptions{Prefix: nodePrefix(key)})
		defer it2.Close()
		for it2.Seek(nil); it2.Valid(); it2.Next() {
			seq, ok := keySeq(it2.Key())
			if !ok || !kept[seq] {
				continue
			}
			if err := iterValue(it2, func(v []byte) error {
				if record.IsChunked(v) {
					full, err := joinChunks(txn, key, seq, v, nil)
					if err != nil {
						return err
					}
					v = full
				}
				for rest := v; ; {
					i := bytes.Index(rest, []byte(session.BlobRefPrefix))
					if i < 0 {
						return nil
					}
					rest = rest[i+len(session.BlobRefPrefix):]
					if len(rest) >= 64 {
						if sum, err := hex.DecodeString(string(rest[:64])); err == nil {
							var s32 [32]byte
							copy(s32[:], sum)
							referenced[string(blobKey(key, s32))] = true
						}
					}
				}
			}); err != nil {
				return err
			}
		}
		for k, size := range sizes {
			if !referenced[k] && !referenced[string(blobKeyOf(key, []byte(k)))] {
				blobs = append(blobs, []byte(k))
				total += size
			}
		}
		return nil
	})
	return blobs, total, mapErr("read", err)
}

// materialize rewrites each reference in seqs as the full node it stands
// for, and makes that durable before Collect deletes anything: a crash in
// between leaves both copies, never a reference to a missing node.
// On a shared engine each transaction checks that the session is still at
// m's metadata.
func (s *Store) materialize(key sid, seqs []uint64, m *session.Meta) error {
	if len(seqs) == 0 {
		return nil
	}
	// Each rewrite stands alone (a reference or the node it stands for,
	// the same message), so any number of transactions keeps that.
	b := &keyBatch{s: s}
	if s.shared != nil {
		b.check = sessionUnchanged(key, m)
	}
	err := s.eng.View(func(txn kv.Txn) error {
		for _, seq := range seqs {
			item, err := txn.Get(nodeKey(key, seq))
			if err != nil {
				return err
			}
			var full []byte
			if err := useValue(item, func(v []byte) error {
				full, err = resolveRef(txn, key, seq, v)
				if err == nil {
					full = bytes.Clone(full)
				}
				return err
			}); err != nil {
				return err
			}
			if err := b.set(nodeKey(key, seq), full); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = b.flush()
	}
	if err != nil {
		return mapErr("gc", err)
	}
	return s.syncNow()
}
