package textindex

import (
	"encoding/binary"
	"slices"
)

// Merge writes one segment holding the documents of srcs that keep
// accepts, in order (srcs oldest first): their postings are concatenated
// term by term with the documents renumbered, so no message is read again.
func Merge(srcs []Source, keep func(src int, doc uint32) bool) (Parts, error) {
	b := NewBuilder()
	renum := make([][]int64, len(srcs)) // -1: dropped
	for s, src := range srcs {
		seg := src.Seg
		renum[s] = make([]int64, len(seg.DocSeq))
		prevSess := -1
		for doc := range seg.DocSeq {
			if !keep(s, uint32(doc)) {
				renum[s][doc] = -1
				continue
			}
			renum[s][doc] = int64(len(b.seqs))
			if sess := int(seg.DocSess[doc]); sess != prevSess {
				b.sessions = append(b.sessions, seg.Sessions[sess])
				b.sessDocs = append(b.sessDocs, 0)
				prevSess = sess
			}
			b.sessDocs[len(b.sessDocs)-1]++
			b.seqs = append(b.seqs, seg.DocSeq[doc])
			b.lens = append(b.lens, seg.DocLen[doc])
			b.tokens += uint64(seg.DocLen[doc])
		}
	}
	type ref struct{ src, term int }
	where := map[string][]ref{}
	for s, src := range srcs {
		for t := range src.Seg.Terms {
			text := src.Seg.Terms[t].Text
			where[text] = append(where[text], ref{s, t})
		}
	}
	var pos []uint32
	for text, refs := range where {
		tp := &termPostings{}
		for _, r := range refs {
			pb, err := srcs[r.src].Postings(&srcs[r.src].Seg.Terms[r.term])
			if err != nil {
				return Parts{}, err
			}
			p := NewPostings(pb)
			for p.Next() {
				nd := renum[r.src][p.Doc()]
				if nd < 0 {
					continue
				}
				pos = p.Positions(pos[:0])
				tp.add(uint32(nd), pos)
			}
			if p.Err() != nil {
				return Parts{}, p.Err()
			}
		}
		if tp.df > 0 {
			b.terms[text] = tp
		}
	}
	return b.Encode(), nil
}

// add appends a document's positions to the postings (documents in
// ascending order).
func (tp *termPostings) add(doc uint32, ps []uint32) {
	delta := doc - tp.lastDoc
	if tp.df == 0 {
		delta = doc
	}
	if len(ps) == 1 {
		tp.buf = binary.AppendUvarint(tp.buf, uint64(delta)<<1|1)
	} else {
		tp.buf = binary.AppendUvarint(tp.buf, uint64(delta)<<1)
		tp.buf = binary.AppendUvarint(tp.buf, uint64(len(ps)))
	}
	prev := uint32(0)
	for _, p := range ps {
		tp.buf = binary.AppendUvarint(tp.buf, uint64(p-prev))
		prev = p
	}
	tp.df++
	tp.lastDoc = doc
}

// Tiers groups segment sizes for a tiered merge: the indexes of the
// segments of the fullest tier that holds at least fanIn whose sum stays
// within maxBytes (nil when none), a tier being a power of 4 of size.
func Tiers(sizes []uint64, fanIn int, maxBytes uint64) []int {
	tiers := map[int][]int{}
	for i, s := range sizes {
		t := 0
		for v := s >> 18; v > 0; v >>= 2 {
			t++
		}
		tiers[t] = append(tiers[t], i)
	}
	keys := make([]int, 0, len(tiers))
	for t := range tiers {
		keys = append(keys, t)
	}
	slices.Sort(keys)
	for _, t := range keys {
		idx := tiers[t]
		if len(idx) < fanIn {
			continue
		}
		var pick []int
		total := uint64(0)
		for _, i := range idx {
			if total+sizes[i] > maxBytes && len(pick) >= 2 {
				break
			}
			pick = append(pick, i)
			total += sizes[i]
			if len(pick) == 2*fanIn {
				break
			}
		}
		if len(pick) >= 2 {
			return pick
		}
	}
	return nil
}
