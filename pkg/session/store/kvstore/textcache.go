package kvstore

import (
	"bytes"
	"sync"

	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/textindex"
)

// segmentCache keeps, for the queries of one handle (those of the
// resident process above all), the decoded head and dictionary of each
// segment and the postings chunks queries read. A segment's bytes never
// change under its id: a fold or a merge writes a new segment under a new
// random id, a purge deletes them all, so an entry stays true for as long
// as a manifest names its id, and is dropped when a query reads a manifest
// that no longer does. wc-store --check and merges read the store itself.
type segmentCache struct {
	mu         sync.Mutex
	segs       map[uint64]*cachedSegment
	chunkBytes int // postings bytes held, at most limit
	limit      int
}

type cachedSegment struct {
	seg    *textindex.Segment
	chunks map[uint32][]byte
}

// segmentCacheChunks bounds the postings a cache holds: a bounded part of
// the index (157 MB over the benchmark's store), so that the resident's
// memory does not grow with the store. The heads and dictionaries, a few
// MB there, are all held.
const segmentCacheChunks = 48 << 20

func newSegmentCache(limit int) *segmentCache {
	return &segmentCache{segs: map[uint64]*cachedSegment{}, limit: limit}
}

// keep drops the segments m does not name.
func (c *segmentCache) keep(m *textindex.Manifest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	named := make(map[uint64]bool, len(m.Segments))
	for _, si := range m.Segments {
		named[si.ID] = true
	}
	for id, cs := range c.segs {
		if !named[id] {
			for _, b := range cs.chunks {
				c.chunkBytes -= len(b)
			}
			delete(c.segs, id)
		}
	}
}

// open is openSegment through the cache.
func (c *segmentCache) open(txn kv.Txn, si *textindex.SegmentInfo) (textindex.Source, error) {
	c.mu.Lock()
	cs := c.segs[si.ID]
	c.mu.Unlock()
	if cs == nil {
		seg, err := decodeSegment(txn, si)
		if err != nil {
			return textindex.Source{}, err
		}
		cs = &cachedSegment{seg: seg, chunks: map[uint32][]byte{}}
		c.mu.Lock()
		if had := c.segs[si.ID]; had != nil {
			cs = had // another query's, at once
		} else {
			c.segs[si.ID] = cs
		}
		c.mu.Unlock()
	}
	chunk := func(n uint32) ([]byte, error) {
		c.mu.Lock()
		b, ok := cs.chunks[n]
		c.mu.Unlock()
		if ok {
			return b, nil
		}
		v, err := txn.Get(segChunkKey(si.ID, 'p', n))
		if err != nil {
			return nil, errIndexDamaged(err)
		}
		b = bytes.Clone(v)
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := cs.chunks[n]; !ok {
			c.evict(len(b))
			cs.chunks[n] = b
			c.chunkBytes += len(b)
		}
		return b, nil
	}
	return textindex.Source{Seg: cs.seg, Postings: postingsReader(chunk)}, nil
}

// evict drops chunks, any (map order), until n more bytes fit. Called
// with mu held.
func (c *segmentCache) evict(n int) {
	for _, cs := range c.segs {
		for k, b := range cs.chunks {
			if c.chunkBytes+n <= c.limit {
				return
			}
			delete(cs.chunks, k)
			c.chunkBytes -= len(b)
		}
	}
}
