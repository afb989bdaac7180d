package kvstore

import (
	"math/rand/v2"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// cachedIDs checks that the handle's segment cache holds only segments
// the manifest names, and returns how many it holds.
func cachedIDs(t *testing.T, st *Store) int {
	t.Helper()
	var named map[uint64]bool
	err := st.view(func(txn kv.Txn) error {
		m, err := readIndexManifest(txn)
		if err != nil || m == nil {
			return err
		}
		named = map[uint64]bool{}
		for _, si := range m.Segments {
			named[si.ID] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c := st.segments
	c.mu.Lock()
	defer c.mu.Unlock()
	held := 0
	for id, cs := range c.segs {
		if !named[id] {
			t.Errorf("the cache holds segment %d, which the manifest does not name", id)
		}
		for _, b := range cs.chunks {
			held += len(b)
		}
	}
	if held != c.chunkBytes {
		t.Errorf("the cache counts %d bytes of postings, holds %d", c.chunkBytes, held)
	}
	if c.chunkBytes > max(c.limit, indexChunk) {
		t.Errorf("the cache holds %d bytes of postings, past its bound %d", c.chunkBytes, c.limit)
	}
	return len(c.segs)
}

// TestSegmentCacheExact checks that a handle whose queries go through its
// segment cache answers --grep exactly as a read of every message through
// folds, merges, a removal and a session restored under its id with other
// messages; with a cache that holds every chunk, and with one bound so
// tight that every chunk read evicts another.
func TestSegmentCacheExact(t *testing.T) {
	for _, limit := range []int{segmentCacheChunks, 1} {
		dir := t.TempDir()
		w := &searchWorld{t: t, st: open(t, dir, Write), r: rand.New(rand.NewPCG(11, uint64(limit))), nodes: map[string][]session.Node{}}
		w.st.segments = newSegmentCache(limit)
		var ids []string
		for i := range 40 {
			id := testID(uint32(i)*0x06000000+uint32(i), i)
			ids = append(ids, id)
			w.add(id, 1+w.r.IntN(5))
		}
		w.check("built", w.st)
		if cachedIDs(t, w.st) == 0 {
			t.Fatalf("limit %d: the queries left nothing in the cache", limit)
		}
		for round := range 8 {
			for range 30 {
				w.add(ids[w.r.IntN(len(ids))], 1+w.r.IntN(2))
			}
			if round%2 == 0 {
				if err := w.st.foldIndex(true, mergeBytes); err != nil {
					t.Fatal(err)
				}
			}
			w.check("after a fold", w.st)
			cachedIDs(t, w.st)
		}
		// Restored under its id: the old messages stay in the segments
		// until a merge drops them; the new ones are marked, then folded.
		again := ids[5]
		if err := w.st.DeleteSession(again); err != nil {
			t.Fatal(err)
		}
		delete(w.nodes, again)
		w.check("after a removal", w.st)
		w.add(again, 3)
		w.check("restored, marked", w.st)
		if err := w.st.foldIndex(true, mergeBytes); err != nil {
			t.Fatal(err)
		}
		w.check("restored, folded", w.st)
		cachedIDs(t, w.st)
		mustClose(t, w.st)
	}
}
