package kvstore

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
	"github.com/wctoolkit/wc/pkg/session/store/textindex"
)

// grepIndex is what the index says of a --grep: the messages that may
// hold the text, per session, and the sessions whose marked messages are
// read whole.
type grepIndex struct {
	cands   map[sid][]uint64
	pending map[sid]uint64
}

// prepareGrep asks the index for the candidates of needle; nil when it
// cannot narrow them (no index yet on a reader's handle, a needle without
// a word): every session is then read, as without an index.
func prepareGrep(txn kv.Txn, needle string, cache *segmentCache) (*grepIndex, error) {
	frags, ok := textindex.GrepPlan(needle)
	if !ok || indexOff {
		return nil, nil
	}
	v, err := loadIndex(txn, cache)
	if err != nil || !v.built {
		return nil, err
	}
	g := &grepIndex{cands: map[sid][]uint64{}, pending: v.pending}
	for _, src := range v.srcs {
		docs, err := textindex.Match(src, frags)
		if err != nil {
			return nil, errIndexDamaged(err)
		}
		for doc := range docs {
			id := sid(src.Seg.Sessions[src.Seg.DocSess[doc]])
			g.cands[id] = append(g.cands[id], src.Seg.DocSeq[doc])
		}
	}
	for id, seqs := range g.cands {
		slices.Sort(seqs)
		g.cands[id] = slices.Compact(seqs)
	}
	return g, nil
}

// contains is sessionContains narrowed by the index: the candidate
// messages, then the marked ones.
func (f *listFilter) contains(txn kv.Txn, id sid) (bool, error) {
	if f.index == nil {
		return sessionContains(txn, id, f.grep, f.q.Fold)
	}
	seqs, from := f.index.cands[id], uint64(0)
	if p, ok := f.index.pending[id]; ok {
		from = p
	}
	if len(seqs) == 0 && from == 0 {
		return false, nil
	}
	next, err := nextSeq(txn, id)
	if err != nil {
		return false, err
	}
	for _, seq := range seqs {
		if seq >= next || from != 0 && seq >= from {
			break
		}
		m, ok, err := storedMessage(txn, id, seq)
		if err != nil {
			return false, err
		}
		if ok && session.MessageContains(m, f.grep, f.q.Fold) {
			return true, nil
		}
	}
	if from == 0 {
		return false, nil
	}
	found := false
	err = eachMessage(txn, id, from, next, func(_ uint64, m *session.Message) error {
		if session.MessageContains(m, f.grep, f.q.Fold) {
			found = true
			return errFound
		}
		return nil
	})
	if errors.Is(err, errFound) {
		err = nil
	}
	return found, err
}

var errFound = errors.New("found")

// storedMessage reads one message, its reference resolved; false when
// the node is not there (collected).
func storedMessage(txn kv.Txn, id sid, seq uint64) (*session.Message, bool, error) {
	v, err := txn.Get(nodeKey(id, seq))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var m *session.Message
	err = useValue(v, func(v []byte) error {
		full, err := resolveRef(txn, id, seq, v)
		if err != nil {
			return err
		}
		n, err := record.DecodeNode(seq, full)
		if err != nil {
			return corrupt(id, "node %d is malformed: %v", seq, err)
		}
		m = &n.Msg
		return nil
	})
	return m, m != nil, err
}

// SearchHit is a session's best message for a search.
type SearchHit struct {
	Seq     uint64
	Snippet string
	Score   float64
}

// snippetBytes is about how long a hit's snippet is.
const snippetBytes = 160

// searchSummaries calls fn with the id, summary and best hit of each
// session that q.Search finds and q's other filters keep, best first.
func (s *Store) searchSummaries(q ListQuery, fn func(id sid, summary []byte, hit SearchHit) error) error {
	query, err := textindex.ParseQuery(q.Search)
	if err != nil {
		return err
	}
	if err := s.ensureIndex(); err != nil {
		return err
	}
	f := newListFilter(q)
	var fnErr error
	err = s.view(func(txn kv.Txn) error {
		v, err := loadIndex(txn, s.segments)
		if err != nil {
			return err
		}
		srcs := v.srcs
		more, err := unindexedSources(txn, v)
		if err != nil {
			return err
		}
		srcs = append(srcs, more...)
		hits, err := textindex.Search(srcs, query)
		if err != nil {
			return errIndexDamaged(err)
		}
		type cand struct {
			seq   uint64
			score float64
		}
		bySession := map[sid][]cand{}
		for _, h := range hits {
			seg := srcs[h.Src].Seg
			id := sid(seg.Sessions[seg.DocSess[h.Doc]])
			bySession[id] = append(bySession[id], cand{seg.DocSeq[h.Doc], h.Score})
		}
		type ranked struct {
			id    sid
			best  float64
			cands []cand
		}
		order := make([]ranked, 0, len(bySession))
		for id, cs := range bySession {
			slices.SortFunc(cs, func(a, b cand) int { return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.seq, b.seq)) })
			order = append(order, ranked{id, cs[0].score, cs})
		}
		slices.SortFunc(order, func(a, b ranked) int {
			return cmp.Or(cmp.Compare(b.best, a.best), bytes.Compare(a.id[:], b.id[:]))
		})
		listed := 0
		for _, r := range order {
			key, err := storedListingKey(txn, r.id)
			if err != nil {
				return err
			}
			if key == nil || !f.keepTime(listingKeyTime(key)) {
				continue // removed since it was indexed
			}
			summary, err := txn.Get(key)
			if errors.Is(err, kv.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if ok, err := f.keepSummary(r.id, summary); err != nil || !ok {
				if err != nil {
					return err
				}
				continue
			}
			next, err := nextSeq(txn, r.id)
			if err != nil {
				return err
			}
			var hit *SearchHit
			for _, c := range r.cands {
				if c.seq >= next {
					continue
				}
				m, ok, err := storedMessage(txn, r.id, c.seq)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
				if snip, ok := textindex.Snippet(messageTexts(m), query, snippetBytes); ok {
					hit = &SearchHit{Seq: c.seq, Snippet: snip, Score: c.score}
					break
				}
			}
			if hit == nil {
				continue
			}
			if fnErr = fn(r.id, summary, *hit); fnErr != nil {
				return fnErr
			}
			if listed++; q.Limit > 0 && listed >= q.Limit {
				return nil
			}
		}
		return nil
	})
	if fnErr != nil {
		return fnErr
	}
	if errors.Is(err, errNoStore) {
		return nil
	}
	return mapErr("search", err)
}

// unindexedSources indexes, in memory, the messages the built segments do
// not hold: the marked ones, or every message when there is no index (a
// reader's handle on a store no writer indexed yet).
func unindexedSources(txn kv.Txn, v *indexView) ([]textindex.Source, error) {
	var srcs []textindex.Source
	b := textindex.NewBuilder()
	flush := func() {
		if b.Docs() == 0 {
			return
		}
		srcs = append(srcs, memorySource(b.Encode()))
		b = textindex.NewBuilder()
	}
	add := func(id sid, from uint64) error {
		next, err := nextSeq(txn, id)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		err = eachMessage(txn, id, from, next, func(seq uint64, m *session.Message) error {
			b.Add(id, seq, messageTexts(m))
			return nil
		})
		if b.TextBytes() >= segmentText {
			flush()
		}
		return err
	}
	if v.built {
		ids := make([]sid, 0, len(v.pending))
		for id := range v.pending {
			ids = append(ids, id)
		}
		slices.SortFunc(ids, func(a, b sid) int { return bytes.Compare(a[:], b[:]) })
		for _, id := range ids {
			if err := add(id, v.pending[id]); err != nil {
				return nil, err
			}
		}
	} else {
		var ids []sid
		if err := eachMeta(txn, func(id sid, _ []byte) error { ids = append(ids, id); return nil }); err != nil {
			return nil, err
		}
		for _, id := range ids {
			if err := add(id, 1); err != nil {
				return nil, err
			}
		}
	}
	flush()
	return srcs, nil
}

// memorySource is a segment built in memory as a source.
func memorySource(p textindex.Parts) textindex.Source {
	seg, err := textindex.Decode(p.Head, p.Dict)
	if err != nil {
		panic("textindex: a segment just encoded does not decode: " + err.Error())
	}
	return textindex.Source{Seg: seg, Postings: func(t *textindex.Term) ([]byte, error) {
		return p.Postings[t.Off : t.Off+t.Len], nil
	}}
}

// AppendSearchJSON is a listing line with the hit's members added:
// "seq", "snippet" and "score".
func AppendSearchJSON(dst []byte, id sid, summary []byte, h SearchHit) ([]byte, error) {
	line, err := store.AppendSummaryJSON(dst, id, summary)
	if err != nil || len(line) == 0 || line[len(line)-1] != '}' {
		return line, err
	}
	line = append(line[:len(line)-1], `,"seq":`...)
	line = strconv.AppendUint(line, h.Seq, 10)
	snip, _ := json.Marshal(h.Snippet)
	line = append(append(line, `,"snippet":`...), snip...)
	line = append(line, `,"score":`...)
	line = strconv.AppendFloat(line, h.Score, 'f', 4, 64)
	return append(line, '}'), nil
}

// searchJSON is ListJSON for a search.
func (s *Store) searchJSON(q ListQuery, fn func(line []byte) error) error {
	var line []byte
	return s.searchSummaries(q, func(id sid, summary []byte, h SearchHit) error {
		var err error
		if line, err = AppendSearchJSON(line[:0], id, summary, h); err != nil {
			return err
		}
		return fn(line)
	})
}

// searchListing is searchSummaries without the hits, for ListInfo.
func (s *Store) searchListing(q ListQuery, fn func(id sid, summary []byte) error) error {
	return s.searchSummaries(q, func(id sid, summary []byte, _ SearchHit) error { return fn(id, summary) })
}
