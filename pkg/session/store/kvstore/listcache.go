package kvstore

import (
	"bytes"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// listCache is the resident process's copy of the newest entries of the
// listing, so that wc-ls -n N through it skips the merge of the listing's
// shards (a seek each, most of a warm listing's time). It holds exactly the
// newest entries as of one state of the store, named by the store's
// engine and its read version (versioned): a commit served by the process moves
// it along, and any other write (a collection, a level-0 merge that
// rebuilt the listing, anything not foreseen here) leaves the timestamp
// behind, so the cache is dropped rather than trusted.
type listCache struct {
	mu       sync.Mutex
	eng      kv.Engine
	ts       uint64      // 0: empty
	entries  []listEntry // newest first, as a listing's keys sort
	complete bool        // entries are every session's
	bytes    int
	filling  atomic.Bool // a fill runs
	tooBig   atomic.Bool // the listing outgrew the cache: do not fill
}

// listCacheBytes bounds the cache: about 20,000 sessions' entries. A
// variable so that tests can lower it.
var listCacheBytes = 4 << 20

// listCacheHits counts the listings answered from a cache (tests).
var listCacheHits atomic.Int64

// versioned is an engine that tells the version a new transaction would
// read at, which every commit moves on (badgerkv: Badger's read
// timestamp). Without it nothing is cached.
type versioned interface{ ReadVersion() uint64 }

// stamp is the state of st the cache must have been taken at to be used.
func stamp(st *Store) (kv.Engine, uint64) {
	if st.closed || st.eng == nil {
		return nil, 0
	}
	v, ok := st.eng.(versioned)
	if !ok {
		return st.eng, 0
	}
	return st.eng, v.ReadVersion()
}

// query answers q from the cache when it can: a newest-first query without
// --grep whose answer lies within the cached entries. It calls nothing and
// returns false otherwise.
func (c *listCache) query(st *Store, q ListQuery, fn func(id sid, summary []byte) error) (bool, error) {
	if q.Oldest || q.Grep != "" {
		return false, nil
	}
	eng, ts := stamp(st)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ts == 0 || c.eng != eng || c.ts != ts {
		return false, nil
	}
	f := newListFilter(q)
	var picked []listEntry
	enough := false
	for _, e := range c.entries {
		t := listingKeyTime(e.key)
		if f.pastBound(t) {
			enough = true
			break
		}
		if !f.keepTime(t) {
			continue
		}
		ok, err := f.keepSummary(listingKeyID(e.key), e.summary)
		if err != nil {
			return false, nil // the store reports the damage
		}
		if ok {
			picked = append(picked, e)
			if q.Limit > 0 && len(picked) == q.Limit {
				enough = true
				break
			}
		}
	}
	if !enough && !c.complete {
		return false, nil
	}
	listCacheHits.Add(1)
	for _, e := range picked {
		if err := fn(listingKeyID(e.key), e.summary); err != nil {
			return true, err
		}
	}
	return true, nil
}

// listNewest lists from the store and, for a query of the newest sessions
// without filters, keeps what it read: the newest entries, all of them
// when it read to the end.
func (c *listCache) listNewest(st *Store, q ListQuery, fn func(id sid, summary []byte) error) error {
	unfiltered := q == ListQuery{Limit: q.Limit}
	if !unfiltered {
		return st.listSummaries(q, fn)
	}
	eng, ts := stamp(st)
	var read []listEntry
	size := 0
	err := st.listSummaries(q, func(id sid, summary []byte) error {
		if size >= 0 {
			if size += listingKeyLen + len(summary); size > listCacheBytes {
				read, size = nil, -1
			} else {
				read = append(read, listEntry{listingKey(id, summaryUpdated(summary)), bytes.Clone(summary)})
			}
		}
		return fn(id, summary)
	})
	if err != nil || size < 0 || eng == nil {
		return err
	}
	if eng2, ts2 := stamp(st); eng2 != eng || ts2 != ts {
		return nil // written meanwhile: what was read may be stale
	}
	complete := q.Limit <= 0 || len(read) < q.Limit
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.eng == eng && c.ts == ts && (c.complete || !complete && len(c.entries) >= len(read)) {
		return nil // as good already
	}
	c.eng, c.ts, c.entries, c.bytes = eng, ts, read, size
	c.complete = complete
	return nil
}

// fillable reports whether q filters what only a complete cache answers:
// an unfiltered listing keeps the newest entries it read itself.
func fillable(q ListQuery) bool {
	return q != ListQuery{Limit: q.Limit} && !q.Oldest && q.Grep == ""
}

// whole reports whether the cache holds every session's entry.
func (c *listCache) whole() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ts != 0 && c.complete
}

var (
	errCacheFull    = errors.New("store: the listing is larger than its cache")
	errFillStopping = errors.New("store: the process stops")
)

// listCacheFills counts the fills that read the listing (tests).
var listCacheFills atomic.Int64

// fill reads the whole listing into the cache: a query that filters (by
// project, title, time or --shard) reads past the newest entries an unfiltered
// listing leaves there, and the store's merge of the listing's shards costs
// it a seek each. A listing larger than the cache is remembered, and not
// read again. It gives up when stop says so.
func (c *listCache) fill(st *Store, stop func() bool) {
	listCacheFills.Add(1)
	size := 0
	err := c.listNewest(st, ListQuery{}, func(_ sid, summary []byte) error {
		if size += listingKeyLen + len(summary); size > listCacheBytes {
			return errCacheFull
		}
		if stop() {
			return errFillStopping
		}
		return nil
	})
	if errors.Is(err, errCacheFull) {
		c.tooBig.Store(true)
	}
}

// committed moves the cache along a Commit of m that took the store from
// state before to after: the session's entry moves to its new place. The
// listing entry is the one Commit wrote (putMeta). Without a cache taken at
// before, it stays as it is, unused.
func (c *listCache) committed(m *session.Meta, before, after uint64, eng kv.Engine) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ts == 0 || c.eng != eng || c.ts != before || after <= before {
		c.ts = 0
		return
	}
	id, err := parseID(m.ID)
	if err != nil {
		c.ts = 0
		return
	}
	summary, err := summaryOf(m, record.EncodeMeta(m))
	if err != nil {
		c.ts = 0
		return
	}
	c.entries = slices.DeleteFunc(c.entries, func(e listEntry) bool {
		if listingKeyID(e.key) == id {
			c.bytes -= len(e.key) + len(e.summary)
			return true
		}
		return false
	})
	e := listEntry{listingKey(id, updatedTime(m.UpdatedAt)), summary}
	order := listOrder(false)
	at, _ := slices.BinarySearchFunc(c.entries, e, func(a, b listEntry) int { return order(a.key, b.key) })
	// Past the last entry it belongs to the store's unread part, unless
	// the cache holds every session.
	if at < len(c.entries) || c.complete {
		c.entries = slices.Insert(c.entries, at, e)
		c.bytes += len(e.key) + len(e.summary)
	}
	if c.bytes > listCacheBytes {
		c.ts = 0
		c.entries = nil
		return
	}
	c.ts = after
}

// summaryUpdated is the update time of a summary, as its listing key
// holds it.
func summaryUpdated(summary []byte) [listingTimeLen]byte {
	updated, ok := record.SummaryField(summary, record.SummaryUpdated)
	if !ok {
		return [listingTimeLen]byte{}
	}
	return updatedTime(string(updated))
}
