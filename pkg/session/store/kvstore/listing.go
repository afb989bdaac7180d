package kvstore

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// The listing holds one entry per session, listingKey → summary, written in
// the transaction that writes the session's metadata, so that listing the
// newest sessions reads about as many entries as it prints instead of one
// metadata record per session stored.
//
// DESIGN §3 has no global secondary index because a write whose keys span
// the store makes Badger's compactions rewrite what lies between them:
// with the listing in one range, the writer that flattens level 0 (every
// eighth) rewrote most of a 10,000-session store, 614 MiB of heap against
// 59 MiB. The entries are therefore sharded by the leading bits
// of the id, each shard right after the sessions it indexes: a write spans
// from its session to its shard, 1/128 of the key space on average, and a
// listing merges the shards, one seek each to start. The shard count trades
// the two: fewer shards make flattening rewrite more (147 MiB of heap at
// 16 on that store, 60 MiB at 64 and 256), more make each listing seek
// more (BenchmarkListInfo, BenchmarkList).

// ListQuery selects and orders sessions as wc-ls does.
type ListQuery = store.ListQuery

// listingTime orders times as bytes: the seconds since 1970 with the sign
// bit flipped, then the nanoseconds, both big endian.
func listingTime(t time.Time) (b [listingTimeLen]byte) {
	binary.BigEndian.PutUint64(b[:8], uint64(t.Unix())^(1<<63))
	binary.BigEndian.PutUint32(b[8:], uint32(t.Nanosecond()))
	return b
}

// updatedTime is the listing time of a stored updated_at. One that does not
// parse is all zeros, older than any time that does (no RFC 3339 time is
// that old), and never passes --since or --until.
func updatedTime(updated string) [listingTimeLen]byte {
	t, err := time.Parse(time.RFC3339Nano, updated)
	if err != nil {
		return [listingTimeLen]byte{}
	}
	return listingTime(t)
}

// summaryOf is the summary of m as a reader of its stored form metaVal
// decodes it: the JSON encoder replaces invalid UTF-8, so such a string is
// taken from the stored form instead.
func summaryOf(m *session.Meta, metaVal []byte) ([]byte, error) {
	valid := utf8.ValidString(m.ProjectPath) && utf8.ValidString(m.Title) && utf8.ValidString(string(m.TitleSource)) &&
		utf8.ValidString(m.CreatedAt) && utf8.ValidString(m.UpdatedAt) && (m.ForkedFrom == nil || utf8.ValidString(m.ForkedFrom.ID))
	if valid {
		return record.EncodeSummary(m), nil
	}
	stored, err := record.DecodeMeta(metaVal)
	if err != nil {
		return nil, err
	}
	return record.EncodeSummary(&stored), nil
}

// listFilter is a ListQuery prepared for testing summaries.
type listFilter struct {
	q            ListQuery
	projectSlash string // Project + "/"
	title, grep  string // lowercased with Fold
	since, until [listingTimeLen]byte
	index        *grepIndex // the index's candidates for grep (textquery.go)
}

func newListFilter(q ListQuery) *listFilter {
	f := &listFilter{q: q, projectSlash: q.Project + "/", title: q.Title, grep: q.Grep}
	if q.Fold {
		f.title, f.grep = strings.ToLower(f.title), strings.ToLower(f.grep)
	}
	if !q.Since.IsZero() {
		f.since = listingTime(q.Since)
	}
	if !q.Until.IsZero() {
		f.until = listingTime(q.Until)
	}
	return f
}

func (f *listFilter) bounded() bool { return !f.q.Since.IsZero() || !f.q.Until.IsZero() }

// keepTime applies Since and Until to a listing time.
func (f *listFilter) keepTime(t [listingTimeLen]byte) bool {
	if !f.bounded() {
		return true
	}
	if t == ([listingTimeLen]byte{}) { // unparseable
		return false
	}
	if !f.q.Since.IsZero() && bytes.Compare(t[:], f.since[:]) < 0 {
		return false
	}
	return f.q.Until.IsZero() || bytes.Compare(t[:], f.until[:]) < 0
}

// pastBound reports that t, and every time after it in f's order, is out
// of f's bounds. Unparseable times are the oldest.
func (f *listFilter) pastBound(t [listingTimeLen]byte) bool {
	if f.q.Oldest {
		return !f.q.Until.IsZero() && bytes.Compare(t[:], f.until[:]) >= 0
	}
	return !f.q.Since.IsZero() && bytes.Compare(t[:], f.since[:]) < 0
}

// shardStart is where f's order starts in the shard with prefix.
func (f *listFilter) shardStart(prefix []byte) []byte {
	k := append(make([]byte, 0, listingKeyLen), prefix...)
	if !f.q.Oldest {
		if !f.q.Until.IsZero() {
			for _, b := range f.until {
				k = append(k, ^b) // the entries updated at Until, skipped
			}
		}
		return k
	}
	if f.q.Since.IsZero() {
		k = append(k, bytes.Repeat([]byte{0xff}, listingTimeLen)...)
	} else {
		for _, b := range f.since {
			k = append(k, ^b)
		}
	}
	return append(k, bytes.Repeat([]byte{0xff}, idLen)...) // past every id
}

// keepSummary applies Shard, Project and Title without decoding the summary.
func (f *listFilter) keepSummary(id sid, v []byte) (bool, error) {
	if !f.q.Shard.Holds(id) {
		return false, nil
	}
	if f.q.Project == "" && f.title == "" {
		return true, nil
	}
	project, ok := record.SummaryField(v, record.SummaryProject)
	title, ok2 := record.SummaryField(v, record.SummaryTitle)
	if !ok || !ok2 {
		return false, store.DamagedListing(id)
	}
	if f.q.Project != "" && f.q.Project != "/" &&
		string(project) != f.q.Project && !bytes.HasPrefix(project, []byte(f.projectSlash)) {
		return false, nil
	}
	if f.title != "" {
		if f.q.Fold {
			title = bytes.ToLower(title)
		}
		if !bytes.Contains(title, []byte(f.title)) {
			return false, nil
		}
	}
	return true, nil
}

// listOrder compares listing keys in the order asked for: newest first
// (the order of keys within a shard) or oldest first; sessions updated at
// the same instant in id order either way, as a stable sort of the
// id-ordered sessions would have them.
func listOrder(oldest bool) func(a, b []byte) int {
	const t, id = shardPrefixLen, shardPrefixLen + listingTimeLen
	if !oldest {
		return func(a, b []byte) int { return bytes.Compare(a[t:], b[t:]) }
	}
	return func(a, b []byte) int {
		if c := bytes.Compare(b[t:id], a[t:id]); c != 0 { // inverted times
			return c
		}
		return bytes.Compare(a[id:], b[id:])
	}
}

// listVisit is offered each listing entry in order; it returns false to stop.
type listVisit func(key, summary []byte) (more bool, err error)

// listSummaries calls fn with the id and summary of each session q
// selects, in q's order. summary is valid only during fn; fn's error is
// returned as is. Without a listing (a store a wc before it wrote, opened
// read-only) it reads every session's metadata instead.
func (s *Store) listSummaries(q ListQuery, fn func(id sid, summary []byte) error) error {
	f := newListFilter(q)
	if f.grep != "" {
		if err := s.ensureIndex(); err != nil {
			return err
		}
	}
	var fnErr error
	err := s.view(func(txn kv.Txn) error {
		if f.grep != "" {
			var err error
			if f.index, err = prepareGrep(txn, f.grep, s.segments); err != nil {
				return err
			}
		}
		listed := 0
		visit := func(key, v []byte) (bool, error) {
			id := listingKeyID(key)
			if !f.keepTime(listingKeyTime(key)) {
				return true, nil
			}
			if ok, err := f.keepSummary(id, v); err != nil || !ok {
				return err == nil, err
			}
			if f.grep != "" {
				found, err := f.contains(txn, id)
				if err != nil || !found {
					return err == nil, err
				}
			}
			if fnErr = fn(id, v); fnErr != nil {
				return false, fnErr
			}
			listed++
			return q.Limit <= 0 || listed < q.Limit, nil
		}
		return mergeShards(txn, f, visit)
	})
	if fnErr != nil {
		return fnErr
	}
	if errors.Is(err, errNoStore) {
		return nil
	}
	return mapErr("list", err)
}

// shardRefill is how many entries a shard reads at a time once one of its
// entries has been taken; at first each reads only its head.
const shardRefill = 16

// shardCursor reads one shard in f's order, a few entries at a time.
type shardCursor struct {
	prefix []byte
	next   []byte // the first key not read yet; nil when the shard is done
	buf    []listEntry
}

// fill reads at least n entries, or to the end of the shard, and then to
// the end of the last one's update time: reading backwards (oldest first)
// meets sessions updated at the same instant in descending id order, so
// such a group is read whole and sorted.
func (c *shardCursor) fill(it kv.Iterator, f *listFilter, order func(a, b []byte) int, n int) error {
	c.buf = nil
	if c.next == nil {
		return nil
	}
	it.Seek(c.next)
	c.next = nil
	for ; it.Valid(); it.Next() {
		key := it.Key()
		if !bytes.HasPrefix(key, c.prefix) {
			break
		}
		if len(key) != listingKeyLen {
			return fmt.Errorf("store: a listing key is damaged")
		}
		t := listingKeyTime(key)
		if f.pastBound(t) {
			break
		}
		if len(c.buf) >= n && t != listingKeyTime(c.buf[len(c.buf)-1].key) {
			c.next = bytes.Clone(key)
			break
		}
		v, err := iterValueCopy(it)
		if err != nil {
			return err
		}
		c.buf = append(c.buf, listEntry{bytes.Clone(key), v})
	}
	if f.q.Oldest {
		slices.SortFunc(c.buf, func(a, b listEntry) int { return order(a.key, b.key) })
	}
	return nil
}

// cursorHeap orders shard cursors by their next entry.
type cursorHeap struct {
	cs    []*shardCursor
	order func(a, b []byte) int
}

func (h *cursorHeap) Len() int           { return len(h.cs) }
func (h *cursorHeap) Less(i, j int) bool { return h.order(h.cs[i].buf[0].key, h.cs[j].buf[0].key) < 0 }
func (h *cursorHeap) Swap(i, j int)      { h.cs[i], h.cs[j] = h.cs[j], h.cs[i] }
func (h *cursorHeap) Push(x any)         { h.cs = append(h.cs, x.(*shardCursor)) }
func (h *cursorHeap) Pop() any {
	c := h.cs[len(h.cs)-1]
	h.cs = h.cs[:len(h.cs)-1]
	return c
}

// mergeShards offers the entries of every shard within f's time bounds,
// merged in f's order: one seek per shard to start, then one per
// shardRefill entries taken from a shard. One iterator serves all: making
// one per shard cost more than it saved.
func mergeShards(txn kv.Txn, f *listFilter, visit listVisit) error {
	order := listOrder(f.q.Oldest)
	it := txn.Iterate(kv.IterOptions{Prefix: []byte{tagSession}, Reverse: f.q.Oldest})
	defer it.Close()
	h := &cursorHeap{order: order}
	for n := range listingShards {
		c := &shardCursor{prefix: shardPrefix(n)}
		c.next = f.shardStart(c.prefix)
		if err := c.fill(it, f, order, 1); err != nil {
			return err
		}
		if len(c.buf) > 0 {
			h.cs = append(h.cs, c)
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		c := h.cs[0]
		e := c.buf[0]
		c.buf = c.buf[1:]
		if more, err := visit(e.key, e.summary); err != nil || !more {
			return err
		}
		if len(c.buf) == 0 {
			if err := c.fill(it, f, order, shardRefill); err != nil {
				return err
			}
		}
		if len(c.buf) == 0 {
			heap.Pop(h)
		} else {
			heap.Fix(h, 0)
		}
	}
	return nil
}

// listEntry is one entry of the listing, as stored or as derived
// from a session's metadata.
type listEntry struct{ key, summary []byte }

// deriveListing builds the listing entries from the metadata, in key order.
func deriveListing(txn kv.Txn) ([]listEntry, error) {
	var entries []listEntry
	err := eachMeta(txn, func(id sid, v []byte) error {
		m, err := record.DecodeMeta(v)
		if err != nil {
			return corrupt(id, "its metadata is malformed")
		}
		entries = append(entries, listEntry{listingKey(id, updatedTime(m.UpdatedAt)), record.EncodeSummary(&m)})
		return nil
	})
	slices.SortFunc(entries, func(a, b listEntry) int { return bytes.Compare(a.key, b.key) })
	return entries, err
}

// eachMeta calls fn with every session's stored metadata, in id order. It
// reads one record per session and seeks past the session's nodes.
func eachMeta(txn kv.Txn, fn func(id sid, v []byte) error) error {
	return eachRange(txn, []byte{tagSession}, nil, func(id sid, it kv.Iterator) error {
		if !seekMeta(it, id) {
			return nil
		}
		return iterValue(it, func(v []byte) error { return fn(id, v) })
	})
}

// eachRange calls fn with the id of every session range under prefix from
// seek on (a listing shard's included), in key order, and it standing on
// the range's first key. fn may move it within the range, or to the next.
func eachRange(txn kv.Txn, prefix, seek []byte, fn func(id sid, it kv.Iterator) error) error {
	it := txn.Iterate(kv.IterOptions{Prefix: prefix})
	defer it.Close()
	if seek == nil {
		seek = prefix
	}
	for it.Seek(seek); it.Valid(); {
		k := it.Key()
		if len(k) <= sessionKeyLen {
			it.Next()
			continue
		}
		var id sid
		copy(id[:], k[1:sessionKeyLen])
		if err := fn(id, it); err != nil {
			return err
		}
		// The metadata is the range's last key, so one step usually does.
		prefix := sessionPrefix(id)
		in := func() bool { return it.Valid() && bytes.HasPrefix(it.Key(), prefix) }
		if in() {
			if it.Next(); in() {
				it.Seek(append(prefix, 0xff))
			}
		}
	}
	return nil
}

// seekMeta moves it to the metadata of session id, the last key of its
// range, and reports whether it is there; not when the range has none (a
// listing shard, leftovers of an interrupted commit).
func seekMeta(it kv.Iterator, id sid) bool {
	key := metaKey(id)
	it.Seek(key)
	return it.Valid() && bytes.Equal(it.Key(), key)
}

// sessionContains reports whether any visible node of the session holds
// text (lowercase with fold), as Nodes and session.MessageContains would.
func sessionContains(txn kv.Txn, id sid, text string, fold bool) (bool, error) {
	next, err := nextSeq(txn, id)
	if err != nil {
		return false, err
	}
	it := txn.Iterate(kv.IterOptions{Prefix: nodePrefix(id)})
	defer it.Close()
	for it.Seek(nodeKey(id, 1)); it.Valid(); it.Next() {
		seq, ok := keySeq(it.Key())
		if !ok {
			continue
		}
		if seq >= next {
			break
		}
		found := false
		err := iterValue(it, func(v []byte) error {
			if h, _, err := record.DecodeNodeHeader(v); err == nil && h.Same != 0 {
				return nil // the node it refers to holds the message, and is read too
			}
			n, err := record.DecodeNode(seq, v)
			if err != nil {
				return corrupt(id, "node %d is malformed: %v", seq, err)
			}
			found = session.MessageContains(&n.Msg, text, fold)
			return nil
		})
		if err != nil || found {
			return found, err
		}
	}
	return false, nil
}

// ListInfo calls fn with the summary of each session q selects, in q's
// order. It reads one listing entry per session it offers or passes over
// (a project or title filter), plus a seek per shard. fn's error is
// returned as is.
func (s *Store) ListInfo(q ListQuery, fn func(*session.Info) error) error {
	var fnErr error
	list := s.listSummaries
	if q.Search != "" {
		list = s.searchListing
	}
	err := list(q, func(id sid, v []byte) error {
		info, err := store.DecodeSummary(id, v)
		if err != nil {
			return err
		}
		fnErr = fn(&info)
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	return err
}

// ListJSON is ListInfo with each session's info as one line of JSON (see
// store.AppendSummaryJSON); line is valid only during fn.
func (s *Store) ListJSON(q ListQuery, fn func(line []byte) error) error {
	if q.Search != "" {
		return s.searchJSON(q, fn)
	}
	return s.listSummaries(q, summaryLines(fn))
}

// summaryLines turns fn, which takes listing lines, into a function of
// listing entries.
func summaryLines(fn func(line []byte) error) func(id sid, summary []byte) error {
	var line []byte
	return func(id sid, summary []byte) error {
		var err error
		if line, err = store.AppendSummaryJSON(line[:0], id, summary); err != nil {
			return err
		}
		return fn(line)
	}
}

// putMeta writes a session's metadata and its listing entry in txn, and
// removes the entry of the metadata it replaces when the update time moved.
func putMeta(txn kv.Txn, id sid, m *session.Meta, metaVal, summary []byte) error {
	key := listingKey(id, updatedTime(m.UpdatedAt))
	old, err := storedListingKey(txn, id)
	if err != nil {
		return err
	}
	if old != nil && !bytes.Equal(old, key) {
		if err := txn.Delete(old); err != nil {
			return err
		}
	}
	if err := txn.Set(key, summary); err != nil {
		return err
	}
	return txn.Set(metaKey(id), metaVal)
}

// storedListingKey is the listing key of the session's stored metadata;
// nil when there is none.
func storedListingKey(txn kv.Txn, id sid) ([]byte, error) {
	item, err := txn.Get(metaKey(id))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var key []byte
	err = useValue(item, func(v []byte) error {
		key = listingKey(id, updatedTime(gjson.GetBytes(v, "updated_at").Str))
		return nil
	})
	return key, err
}

// eachListingKey calls fn with every key in the listing shards, in key
// order; the key is valid only during fn.
func eachListingKey(txn kv.Txn, fn func(key []byte) error) error {
	return eachShardKey(txn, shardPrefix, fn)
}

// eachShardKey calls fn with every key under the prefixes of the shards.
func eachShardKey(txn kv.Txn, shardPrefix func(int) []byte, fn func(key []byte) error) error {
	it := txn.Iterate(kv.IterOptions{Prefix: []byte{tagSession}})
	defer it.Close()
	for n := range listingShards {
		prefix := shardPrefix(n)
		for it.Seek(prefix); it.Valid() && bytes.HasPrefix(it.Key(), prefix); it.Next() {
			if err := fn(it.Key()); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckListing compares the listing with the sessions' metadata: the same
// sessions, in the same order, with the same summaries. It is what a crash
// must never break.
func (s *Store) CheckListing() error {
	var problems []string
	err := s.view(func(txn kv.Txn) error {
		want, err := deriveListing(txn)
		if err != nil {
			return err
		}
		i := 0
		err = eachListingKey(txn, func(key []byte) error {
			if len(problems) >= 5 {
				return nil
			}
			if len(key) != listingKeyLen {
				problems = append(problems, fmt.Sprintf("key %x is not a listing key", key))
				return nil
			}
			id := listingKeyID(key)
			if i == len(want) || !bytes.Equal(key, want[i].key) {
				problems = append(problems, fmt.Sprintf("entry %d is session %s (key %x), the metadata says %s", i, id, key, wantDesc(want, i)))
				i++
				return nil
			}
			v, err := txn.Get(key)
			if err != nil {
				return err
			}
			summary, err := copyValue(v)
			if err != nil {
				return err
			}
			if !bytes.Equal(summary, want[i].summary) {
				problems = append(problems, fmt.Sprintf("the summary of session %s differs from its metadata", id))
			}
			i++
			return nil
		})
		if err != nil {
			return err
		}
		if i < len(want) && len(problems) < 5 {
			problems = append(problems, fmt.Sprintf("%d sessions are missing from the listing, first %s", len(want)-i, wantDesc(want, i)))
		}
		return nil
	})
	if errors.Is(err, errNoStore) {
		return nil
	}
	if err != nil {
		return mapErr("check the listing", err)
	}
	if len(problems) > 0 {
		return errors.New("store: the listing disagrees with the metadata: " + strings.Join(problems, "; "))
	}
	return nil
}

func wantDesc(want []listEntry, i int) string {
	if i >= len(want) {
		return "nothing more"
	}
	return fmt.Sprintf("session %s (key %x)", listingKeyID(want[i].key), want[i].key)
}
