package kvstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	mrand "math/rand/v2"
	"slices"
	"sync"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
	"github.com/wctoolkit/wc/pkg/session/store/textindex"
)

// The word index of the stored messages (docs/search.md). Every Commit
// that writes nodes also writes, in its last transaction (the commit
// point), a pending mark: "s" shard-id "P" id next-seq → the first seq it
// wrote, in the shard range beside the listing entry it writes anyway, so
// that the mark costs the append one small blind write and never a
// conflict. Queries read the built segments and scan the marked messages
// directly; a writable handle folds the marked messages into a new
// segment once they pass foldBound, and merges segments (mergeSegments).
// A segment is written in chunks first and becomes part of the index when
// the manifest naming it commits; only then are the marks it covers
// deleted. A crash anywhere leaves either marks the next fold redoes, or
// chunks no manifest names, which the next fold deletes.
//
// Hits are always checked against the stored messages (a session
// removed, a node collected, a session restored under its old id): the
// index only narrows what is read.

const (
	tagPending = 'P'
	// indexChunk bounds a value of a segment part: far below etcd's 1 MiB.
	indexChunk = 256 << 10
	// foldBound is how many marked messages a writable handle leaves
	// unfolded before a query folds them (BenchmarkSearchPending).
	foldBound = 512
	// segmentText bounds the message text one segment indexes, and so a
	// fold's memory.
	segmentText = 48 << 20
)

var (
	indexPrefix    = []byte("\x00x")
	manifestKey    = []byte("\x00xm")
	segChunkPrefix = []byte("\x00xs")
)

// foldMu keeps one fold at a time in a process (the resident serves many
// clients; other processes cannot write while it holds the store).
var foldMu sync.Mutex

func segChunkKey(seg uint64, part byte, chunk uint32) []byte {
	k := binary.BigEndian.AppendUint64(bytes.Clone(segChunkPrefix), seg)
	k = append(k, part)
	return binary.BigEndian.AppendUint32(k, chunk)
}

func pendingPrefix(n int) []byte {
	k := shardPrefix(n)
	k[sessionKeyLen] = tagPending
	return k
}

func pendingKey(id sid, next uint64) []byte {
	k := append(pendingPrefix(shardOf(id)), id[:]...)
	return binary.BigEndian.AppendUint64(k, next)
}

// indexOff turns the index off: no marks, no folds, every grep a full
// read (benchmarks: the append's and a grep's cost without it).
var indexOff bool

// markPending writes the pending mark of a commit of nodes, in its
// transaction.
func markPending(txn kv.Txn, id sid, nodes []session.Node, next uint64) error {
	if len(nodes) == 0 || indexOff {
		return nil
	}
	from := nodes[0].Seq
	for i := range nodes {
		from = min(from, nodes[i].Seq)
	}
	return txn.Set(pendingKey(id, next), textindex.EncodePending(from))
}

// pendingMark is one commit's mark.
type pendingMark struct {
	key  []byte
	id   sid
	from uint64
}

// readPending reads every mark, in shard and id order.
func readPending(txn kv.Txn) ([]pendingMark, error) {
	var marks []pendingMark
	err := eachShardKey(txn, pendingPrefix, func(key []byte) error {
		if len(key) != shardPrefixLen+idLen+8 {
			return errors.New("store: a pending index mark is damaged")
		}
		v, err := txn.Get(key)
		if err != nil {
			return err
		}
		from, ok := textindex.DecodePending(v)
		if !ok {
			return errors.New("store: a pending index mark is damaged")
		}
		var id sid
		copy(id[:], key[shardPrefixLen:])
		marks = append(marks, pendingMark{bytes.Clone(key), id, from})
		return nil
	})
	return marks, err
}

// pendingFrom is, per session, the lowest seq a mark names.
func pendingFrom(marks []pendingMark) map[sid]uint64 {
	out := map[sid]uint64{}
	for _, m := range marks {
		if f, ok := out[m.id]; !ok || m.from < f {
			out[m.id] = m.from
		}
	}
	return out
}

// readIndexManifest is the index's manifest; nil when there is none or it is
// of another version (the index is then rebuilt, and unused until then).
func readIndexManifest(txn kv.Txn) (*textindex.Manifest, error) {
	v, err := txn.Get(manifestKey)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m, err := textindex.DecodeManifest(v)
	if errors.Is(err, textindex.ErrVersion) {
		return nil, nil
	}
	return m, err
}

// readPart reads a segment part whole.
func readPart(txn kv.Txn, si *textindex.SegmentInfo, part int) ([]byte, error) {
	out := make([]byte, 0, si.Bytes[part])
	for c := range si.Chunks[part] {
		v, err := txn.Get(segChunkKey(si.ID, "hdp"[part], c))
		if err != nil {
			return nil, errIndexDamaged(err)
		}
		out = append(out, v...)
	}
	if uint64(len(out)) != si.Bytes[part] {
		return nil, errIndexDamaged(nil)
	}
	return out, nil
}

func errIndexDamaged(err error) error {
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return err
	}
	return errors.New("store: the search index is damaged (wc-store --check; a rebuild: delete nothing, run wc-ls --search as a writer)")
}

// openSegment is a segment's source: its head and dictionary read, its
// postings read chunk by chunk as terms ask.
func openSegment(txn kv.Txn, si *textindex.SegmentInfo) (textindex.Source, error) {
	seg, err := decodeSegment(txn, si)
	if err != nil {
		return textindex.Source{}, err
	}
	chunks := map[uint32][]byte{}
	chunk := func(c uint32) ([]byte, error) {
		if b, ok := chunks[c]; ok {
			return b, nil
		}
		v, err := txn.Get(segChunkKey(si.ID, 'p', c))
		if err != nil {
			return nil, errIndexDamaged(err)
		}
		chunks[c] = v
		return v, nil
	}
	return textindex.Source{Seg: seg, Postings: postingsReader(chunk)}, nil
}

// decodeSegment reads and decodes a segment's head and dictionary.
func decodeSegment(txn kv.Txn, si *textindex.SegmentInfo) (*textindex.Segment, error) {
	head, err := readPart(txn, si, 0)
	if err != nil {
		return nil, err
	}
	dict, err := readPart(txn, si, 1)
	if err != nil {
		return nil, err
	}
	seg, err := textindex.Decode(head, dict)
	if err != nil || seg.PostingsLen() != si.Bytes[2] {
		return nil, errIndexDamaged(nil)
	}
	return seg, nil
}

// postingsReader reads a term's postings from the postings part's chunks.
func postingsReader(chunk func(c uint32) ([]byte, error)) func(t *textindex.Term) ([]byte, error) {
	return func(t *textindex.Term) ([]byte, error) {
		if t.Len == 0 {
			return nil, nil
		}
		first, last := uint32(t.Off/indexChunk), uint32((t.Off+t.Len-1)/indexChunk)
		if first == last {
			b, err := chunk(first)
			if err != nil {
				return nil, err
			}
			lo := t.Off - uint64(first)*indexChunk
			if lo+t.Len > uint64(len(b)) {
				return nil, errIndexDamaged(nil)
			}
			return b[lo : lo+t.Len], nil
		}
		out := make([]byte, 0, t.Len)
		for c := first; c <= last; c++ {
			b, err := chunk(c)
			if err != nil {
				return nil, err
			}
			out = append(out, b...)
		}
		lo := t.Off - uint64(first)*indexChunk
		if lo+t.Len > uint64(len(out)) {
			return nil, errIndexDamaged(nil)
		}
		return out[lo : lo+t.Len], nil
	}
}

// eachMessage calls fn with every visible message of session id from seq
// from on, references resolved; the message is valid only during fn.
func eachMessage(txn kv.Txn, id sid, from, next uint64, fn func(seq uint64, m *session.Message) error) error {
	return eachStoredNode(txn, id, from, next, func(seq uint64, v []byte) error {
		n, err := record.DecodeNode(seq, v)
		if err != nil {
			return corrupt(id, "node %d is malformed: %v", seq, err)
		}
		return fn(seq, &n.Msg)
	})
}

// messageTexts are the texts of m the index holds.
func messageTexts(m *session.Message) []string {
	var texts []string
	textindex.MessageFields(m, func(t string) { texts = append(texts, t) })
	return texts
}

// indexView is what one query reads of the index, in its transaction.
type indexView struct {
	built   bool // a manifest of this version: segments and marks hold every message
	srcs    []textindex.Source
	pending map[sid]uint64 // marked sessions, from the seq on
}

// loadIndex reads the index's manifest, segments (through cache, unless
// nil) and marks.
func loadIndex(txn kv.Txn, cache *segmentCache) (*indexView, error) {
	m, err := readIndexManifest(txn)
	if err != nil || m == nil {
		return &indexView{}, err
	}
	v := &indexView{built: true}
	open := openSegment
	if cache != nil {
		cache.keep(m)
		open = cache.open
	}
	for i := range m.Segments {
		src, err := open(txn, &m.Segments[i])
		if err != nil {
			return nil, err
		}
		v.srcs = append(v.srcs, src)
	}
	marks, err := readPending(txn)
	if err != nil {
		return nil, err
	}
	v.pending = pendingFrom(marks)
	return v, nil
}

// ensureIndex folds the pending marks of a writable handle when they are
// many, and builds the index when there is none; a reader's handle uses
// what there is.
func (s *Store) ensureIndex() error {
	if s.writable() != nil || s.eng == nil {
		return nil
	}
	return s.foldIndex(false, mergeBytes)
}

// foldIndex folds the marked messages into new segments (all messages,
// when the index is missing), then merges segments as mergeSegments says,
// into segments of at most maxMerge bytes. With force it folds whatever
// is marked.
func (s *Store) foldIndex(force bool, maxMerge uint64) error {
	foldMu.Lock()
	defer foldMu.Unlock()
	var man *textindex.Manifest
	var marks []pendingMark
	var todo []pendingMark // sessions to index, from a seq on
	err := s.eng.View(func(txn kv.Txn) error {
		var err error
		if man, err = readIndexManifest(txn); err != nil {
			return err
		}
		if marks, err = readPending(txn); err != nil {
			return err
		}
		if man != nil {
			for id, from := range pendingFrom(marks) {
				todo = append(todo, pendingMark{id: id, from: from})
			}
			return nil
		}
		// No index: every session, whole.
		return eachMeta(txn, func(id sid, _ []byte) error {
			todo = append(todo, pendingMark{id: id, from: 1})
			return nil
		})
	})
	if err != nil {
		return mapErr("index", err)
	}
	rebuild := man == nil
	if rebuild {
		man = &textindex.Manifest{}
	} else if !force && len(marks) < foldBound {
		// Marks are per commit: a commit writes a message or a few.
		return s.mergeSegments(man, maxMerge)
	}
	if len(todo) == 0 && !rebuild {
		return nil
	}
	slices.SortFunc(todo, func(a, b pendingMark) int { return bytes.Compare(a.id[:], b.id[:]) })
	next := *man
	next.Segments = slices.Clone(man.Segments)
	b := textindex.NewBuilder()
	flush := func() error {
		if b.Docs() == 0 {
			return nil
		}
		si, err := s.writeSegment(newSegmentID(&next), b.Encode())
		if err != nil {
			return err
		}
		next.Segments = append(next.Segments, si)
		b = textindex.NewBuilder()
		return nil
	}
	for _, t := range todo {
		err := s.eng.View(func(txn kv.Txn) error {
			n, err := nextSeq(txn, t.id)
			if err != nil {
				if errors.Is(err, ErrNotFound) {
					return nil // removed
				}
				return err
			}
			return eachMessage(txn, t.id, t.from, n, func(seq uint64, m *session.Message) error {
				b.Add(t.id, seq, messageTexts(m))
				return nil
			})
		})
		if err != nil {
			return mapErr("index", err)
		}
		if b.TextBytes() >= segmentText {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := s.commitManifest(man, rebuild, &next); err != nil {
		return errors.Join(err, s.dropSegments(man, added(man, &next)))
	}
	// The marks the new segments cover; a crash before leaves them for the
	// next fold, which indexes their messages again (the newer copy wins).
	kb := &keyBatch{s: s}
	for _, m := range marks {
		if err := kb.del(m.key); err != nil {
			return mapErr("index", err)
		}
	}
	if err := kb.flush(); err != nil {
		return mapErr("index", err)
	}
	if err := s.dropSegments(&next, added(&next, man)); err != nil {
		return err
	}
	return s.mergeSegments(&next, maxMerge)
}

// commitManifest replaces the manifest old (nil: none, or one of another
// version, for a rebuild) with next, unless another fold changed it.
func (s *Store) commitManifest(old *textindex.Manifest, rebuild bool, next *textindex.Manifest) error {
	want := []byte(nil)
	if !rebuild {
		want = textindex.EncodeManifest(old)
	}
	err := s.eng.Update(func(txn kv.Txn) error {
		v, err := txn.Get(manifestKey)
		switch {
		case errors.Is(err, kv.ErrNotFound):
			v = nil
		case err != nil:
			return err
		}
		if rebuild && v != nil {
			if _, err := textindex.DecodeManifest(v); !errors.Is(err, textindex.ErrVersion) {
				return errIndexRace
			}
		}
		if !rebuild && !bytes.Equal(v, want) {
			return errIndexRace
		}
		return txn.Set(manifestKey, textindex.EncodeManifest(next))
	})
	if err != nil {
		return mapErr("index", err)
	}
	s.wrote.Store(true)
	return nil
}

var errIndexRace = errors.New("store: the search index changed during a fold")

// writeSegment writes a segment's parts in chunks, in as many
// transactions as they take: no manifest names it yet.
func (s *Store) writeSegment(id uint64, p textindex.Parts) (textindex.SegmentInfo, error) {
	si := textindex.SegmentInfo{ID: id, Docs: uint64(p.Docs), Bytes: [3]uint64{uint64(len(p.Head)), uint64(len(p.Dict)), uint64(len(p.Postings))}}
	kb := &keyBatch{s: s}
	for part, b := range [][]byte{p.Head, p.Dict, p.Postings} {
		for c := 0; c*indexChunk < len(b) || c == 0 && len(b) == 0; c++ {
			end := min((c+1)*indexChunk, len(b))
			if err := kb.set(segChunkKey(id, "hdp"[part], uint32(c)), bytes.Clone(b[c*indexChunk:end])); err != nil {
				return si, mapErr("index", err)
			}
			si.Chunks[part]++
			if len(b) == 0 {
				break
			}
		}
	}
	if err := kb.flush(); err != nil {
		return si, mapErr("index", err)
	}
	return si, nil
}

// added is the ids of the segments in b and not in a.
func added(a, b *textindex.Manifest) map[uint64]bool {
	ids := map[uint64]bool{}
	for _, si := range b.Segments {
		ids[si.ID] = true
	}
	for _, si := range a.Segments {
		delete(ids, si.ID)
	}
	return ids
}

// newSegmentID is a random id that m does not use: writers of a shared
// store (etcd) fold at once, without a lock, so ids are not counted.
func newSegmentID(m *textindex.Manifest) uint64 {
	for {
		id := mrand.Uint64()
		if !slices.ContainsFunc(m.Segments, func(si textindex.SegmentInfo) bool { return si.ID == id }) {
			return id
		}
	}
}

// dropSegments deletes the chunks of the segments gone names, which the
// committed manifest m does not (merged, replaced, or a fold's that lost
// the race to commit). On a store of its own (the lock held) it deletes
// every chunk m does not name, what a fold a crash cut short left
// included; on a shared store another writer's fold may be writing
// chunks m does not name yet, so only gone's.
func (s *Store) dropSegments(m *textindex.Manifest, gone map[uint64]bool) error {
	listed := map[uint64]bool{}
	for _, si := range m.Segments {
		listed[si.ID] = true
	}
	shared := s.shared != nil
	kb := &keyBatch{s: s}
	err := s.eng.View(func(txn kv.Txn) error {
		it := txn.Iterate(kv.IterOptions{Prefix: segChunkPrefix, KeysOnly: true})
		defer it.Close()
		for it.Seek(segChunkPrefix); it.Valid(); it.Next() {
			k := it.Key()
			if len(k) != len(segChunkPrefix)+13 {
				if shared {
					continue
				}
				if err := kb.del(k); err != nil {
					return err
				}
				continue
			}
			id := binary.BigEndian.Uint64(k[len(segChunkPrefix):])
			if listed[id] || shared && !gone[id] {
				continue
			}
			if err := kb.del(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = kb.flush()
	}
	return mapErr("index", err)
}

// Segments merge by tiers of size (textindex.Tiers): mergeFanIn of a tier
// or more merge into one of at most mergeBytes, so that a query reads a
// few segments whatever the number of folds. A writer's fold only merges
// into segments of appendMergeBytes, so that no append waits for a large
// merge; queries of a writable handle (the resident process) do those.
const (
	mergeFanIn       = 4
	mergeBytes       = 64 << 20
	appendMergeBytes = 4 << 20
)

// mergeSegments merges segments of m while a tier holds too many, dropping
// the messages of removed sessions and those a later merged segment holds
// again. Called with foldMu held.
func (s *Store) mergeSegments(m *textindex.Manifest, maxBytes uint64) error {
	for {
		sizes := make([]uint64, len(m.Segments))
		for i := range m.Segments {
			sizes[i] = m.Segments[i].Size()
		}
		pick := textindex.Tiers(sizes, mergeFanIn, maxBytes)
		if pick == nil {
			return nil
		}
		slices.Sort(pick)
		var parts textindex.Parts
		err := s.eng.View(func(txn kv.Txn) error {
			srcs := make([]textindex.Source, len(pick))
			for i, p := range pick {
				var err error
				if srcs[i], err = openSegment(txn, &m.Segments[p]); err != nil {
					return err
				}
			}
			live := map[sid]bool{}
			type docKey struct {
				id  sid
				seq uint64
			}
			last := map[docKey]int{}
			for i, src := range srcs {
				for doc, seq := range src.Seg.DocSeq {
					id := sid(src.Seg.Sessions[src.Seg.DocSess[doc]])
					if _, ok := live[id]; !ok {
						_, err := txn.Get(metaKey(id))
						if err != nil && !errors.Is(err, kv.ErrNotFound) {
							return err
						}
						live[id] = err == nil
					}
					last[docKey{id, seq}] = i
				}
			}
			var err error
			parts, err = textindex.Merge(srcs, func(i int, doc uint32) bool {
				seg := srcs[i].Seg
				id := sid(seg.Sessions[seg.DocSess[doc]])
				return live[id] && last[docKey{id, seg.DocSeq[doc]}] == i
			})
			return err
		})
		if err != nil {
			return mapErr("index", err)
		}
		next := textindex.Manifest{}
		si, err := s.writeSegment(newSegmentID(m), parts)
		if err != nil {
			return err
		}
		for i := range m.Segments {
			switch {
			case i == pick[0]:
				next.Segments = append(next.Segments, si)
			case !slices.Contains(pick, i):
				next.Segments = append(next.Segments, m.Segments[i])
			}
		}
		if err := s.commitManifest(m, false, &next); err != nil {
			return errors.Join(err, s.dropSegments(m, added(m, &next)))
		}
		if err := s.dropSegments(&next, added(&next, m)); err != nil {
			return err
		}
		m = &next
	}
}

// IndexStats is what the search index holds.
type IndexStats struct {
	Built    bool  `json:"built"`
	Segments int   `json:"segments"`
	Docs     int64 `json:"messages"`
	Bytes    int64 `json:"bytes"`
	Pending  int   `json:"pending_commits"`
}

// IndexStats reads the manifest and counts the pending marks.
func (s *Store) IndexStats() (IndexStats, error) {
	var st IndexStats
	err := s.view(func(txn kv.Txn) error {
		m, err := readIndexManifest(txn)
		if err != nil {
			return err
		}
		marks, err := readPending(txn)
		st.Pending = len(marks)
		if m == nil {
			return err
		}
		st.Built, st.Segments = true, len(m.Segments)
		for _, si := range m.Segments {
			st.Docs += int64(si.Docs)
			st.Bytes += int64(si.Size())
		}
		return err
	})
	return st, err
}

// foldIfDue folds the pending marks after a commit once the commit's
// shard holds its share of foldBound: the writer that crosses the bound
// folds, so that marks stay few without a reader's help. Not when there
// is no index yet: building one is a query's (or wc-store's) to do, not an
// append's. A failed fold leaves the marks, which the next one folds: the
// commit stands either way.
func (s *Store) foldIfDue(id sid) {
	if indexOff {
		return
	}
	n := 0
	err := s.eng.View(func(txn kv.Txn) error {
		prefix := pendingPrefix(shardOf(id))
		it := txn.Iterate(kv.IterOptions{Prefix: prefix, KeysOnly: true})
		defer it.Close()
		for it.Seek(prefix); it.Valid() && n*listingShards < foldBound; it.Next() {
			n++
		}
		if n*listingShards < foldBound {
			return nil
		}
		m, err := readIndexManifest(txn)
		if m == nil {
			n = 0
		}
		return err
	})
	if err == nil && n*listingShards >= foldBound {
		_ = s.foldIndex(true, appendMergeBytes)
	}
}

// checkIndex reports what the index holds, and a segment that does not
// decode or whose parts are not all there.
func (s *Store) checkIndex(r *CheckReport) {
	stats, err := s.IndexStats()
	if err != nil {
		r.add("", "reading the search index: %s", err.Error())
		return
	}
	r.Index = &stats
	err = s.view(func(txn kv.Txn) error {
		m, err := readIndexManifest(txn)
		if err != nil || m == nil {
			return err
		}
		for i := range m.Segments {
			si := &m.Segments[i]
			src, err := openSegment(txn, si)
			if err == nil {
				for t := range src.Seg.Terms {
					var b []byte
					if b, err = src.Postings(&src.Seg.Terms[t]); err != nil {
						break
					}
					p := textindex.NewPostings(b)
					for p.Next() {
					}
					if err = p.Err(); err != nil {
						break
					}
				}
			}
			if err != nil {
				r.add("", "search index segment %d: %s", si.ID, err.Error())
			}
		}
		return nil
	})
	if err != nil {
		r.add("", "reading the search index: %s", err.Error())
	}
}

// keepUnindexed is what a purge keeps: live's keys without the search
// index, whose dictionary holds the words of what was removed. The next
// writable query builds the index again from what was kept.
func (live liveSet) keepUnindexed(key []byte) bool {
	return !bytes.HasPrefix(key, indexPrefix) && live.keep(key)
}
