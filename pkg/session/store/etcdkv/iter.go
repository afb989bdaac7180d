package etcdkv

import (
	"sort"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// Page sizes: an iterator reads its range in pages at the snapshot,
// sized to about pageBytes each from the values it has seen.
const (
	firstPage    = 16
	firstKeyPage = 256
	maxPage      = 1024
	pageBytes    = 1 << 20
)

// iterator merges the pages etcd returns with the transaction's writes
// made before it was opened (which Badger's iterators see too).
type iterator struct {
	t      *txn
	opt    kv.IterOptions
	lo, hi string // the prefix's range in etcd's keys: [lo, hi)

	page  []*mvccpb.KeyValue
	pi    int
	more  bool   // etcd holds keys past the page
	bound string // where the next page starts (forward) or ends, exclusive (reverse)
	limit int64

	pending []pendingEntry // writes within the range, in the iterator's order
	pj      int

	valid bool
	key   []byte
	value []byte
}

type pendingEntry struct {
	key string // with the namespace
	w   pendingWrite
}

func (t *txn) Iterate(opt kv.IterOptions) kv.Iterator {
	lo := t.e.ns + string(opt.Prefix)
	it := &iterator{t: t, opt: opt, lo: lo, hi: clientv3.GetPrefixRangeEnd(lo)}
	for k, w := range t.writes {
		if strings.HasPrefix(k, string(opt.Prefix)) {
			it.pending = append(it.pending, pendingEntry{t.e.ns + k, w})
		}
	}
	sort.Slice(it.pending, func(i, j int) bool { return it.before(it.pending[i].key, it.pending[j].key) })
	return it
}

// before tells whether key a comes before key b in the iterator's order.
func (it *iterator) before(a, b string) bool {
	if it.opt.Reverse {
		return a > b
	}
	return a < b
}

func (it *iterator) Seek(key []byte) {
	it.valid, it.page, it.pi, it.more = false, nil, 0, false
	if it.opt.Reverse {
		end := it.hi
		if len(key) > 0 {
			// At or before key: the range ends just after it.
			if e := it.t.e.ns + string(key) + "\x00"; e < end {
				end = e
			}
		}
		if end <= it.lo {
			it.pj = len(it.pending)
			return
		}
		it.bound, it.more = end, true
		it.pj = sort.Search(len(it.pending), func(i int) bool { return it.pending[i].key < end })
	} else {
		start := it.lo
		if k := it.t.e.ns + string(key); k > start {
			start = k
		}
		if start >= it.hi {
			it.pj = len(it.pending)
			return
		}
		it.bound, it.more = start, true
		it.pj = sort.Search(len(it.pending), func(i int) bool { return it.pending[i].key >= start })
	}
	it.limit = firstPage
	if it.opt.KeysOnly {
		it.limit = firstKeyPage
	}
	it.step()
}

func (it *iterator) Next() {
	if it.valid {
		it.step()
	}
}

// step moves to the next key of the merge, skipping keys the transaction
// deleted.
func (it *iterator) step() {
	for {
		if it.pi == len(it.page) && it.more && !it.fetch() {
			it.valid = false
			return
		}
		var stored *mvccpb.KeyValue
		if it.pi < len(it.page) {
			stored = it.page[it.pi]
		}
		var mine *pendingEntry
		if it.pj < len(it.pending) {
			mine = &it.pending[it.pj]
		}
		switch {
		case stored == nil && mine == nil:
			it.valid = false
			return
		case mine == nil || stored != nil && it.before(string(stored.Key), mine.key):
			it.pi++
			it.set(stored.Key, stored.Value)
			return
		}
		if stored != nil && string(stored.Key) == mine.key {
			it.pi++
		}
		it.pj++
		if !mine.w.deleted {
			it.set([]byte(mine.key), mine.w.value)
			return
		}
	}
}

func (it *iterator) set(key, value []byte) {
	it.valid, it.key, it.value = true, key[len(it.t.e.ns):], value
}

// fetch reads the next page; false when the read failed (the error fails
// the transaction: an iterator cannot report it, and a range cut short
// must not pass for a whole one).
func (it *iterator) fetch() bool {
	opts := []clientv3.OpOption{clientv3.WithLimit(it.limit)}
	start, end := it.bound, it.hi
	if it.opt.Reverse {
		start, end = it.lo, it.bound
		opts = append(opts, clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
	}
	opts = append(opts, clientv3.WithRange(end))
	if it.opt.KeysOnly {
		opts = append(opts, clientv3.WithKeysOnly())
	}
	resp, err := it.t.get(start, opts...)
	if err != nil {
		it.page, it.pi, it.more = nil, 0, false
		return false
	}
	it.page, it.pi, it.more = resp.Kvs, 0, resp.More && len(resp.Kvs) > 0
	if n := len(resp.Kvs); n > 0 {
		last := string(resp.Kvs[n-1].Key)
		if it.opt.Reverse {
			it.bound = last
		} else {
			it.bound = last + "\x00"
		}
		it.limit = it.nextLimit(resp.Kvs)
	}
	return true
}

// nextLimit grows the page fourfold up to about pageBytes of the sizes
// seen so far.
func (it *iterator) nextLimit(kvs []*mvccpb.KeyValue) int64 {
	var size int
	for _, p := range kvs {
		size += len(p.Key) + len(p.Value)
	}
	limit := it.limit * 4
	if per := size / len(kvs); per > 0 && int64(pageBytes/per) < limit {
		limit = int64(pageBytes / per)
	}
	return max(min(limit, maxPage), firstPage)
}

func (it *iterator) Valid() bool { return it.valid }

func (it *iterator) Key() []byte { return it.key }

func (it *iterator) Value() ([]byte, error) {
	if it.opt.KeysOnly {
		return nil, newError(errUnexpected, "etcd: Value on a KeysOnly iterator")
	}
	if !it.valid {
		return nil, newError(errUnexpected, "etcd: Value on an invalid iterator")
	}
	return it.value, nil
}

func (it *iterator) Close() { it.valid, it.page, it.pending = false, nil, nil }
