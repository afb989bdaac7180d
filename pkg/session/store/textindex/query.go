package textindex

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// Kind says how a fragment of a query matches a term.
type Kind int

const (
	Exact  Kind = iota // the whole term
	Prefix             // the term begins with it
	Suffix             // the term ends with it
	Inside             // the term contains it
)

// Frag is a word of a query, matched at one position after the fragment
// before it.
type Frag struct {
	Text string
	Kind Kind
}

func (f Frag) matches(term string) bool {
	switch f.Kind {
	case Exact:
		return term == f.Text
	case Prefix:
		return strings.HasPrefix(term, f.Text)
	case Suffix:
		return strings.HasSuffix(term, f.Text)
	}
	return strings.Contains(term, f.Text)
}

// GrepPlan is what a substring needle asks of the index: its words, each
// at the position after the one before; the first may end a longer word
// (Suffix) and the last begin one (Prefix) when the needle starts or ends
// within a word, and a needle of one word may lie inside one. Any text
// holding needle, ignoring case, holds words these match at consecutive
// positions, so the documents they match are a superset of the answer.
// It is false for a needle without a word (or not UTF-8): the index
// cannot narrow it.
func GrepPlan(needle string) ([]Frag, bool) {
	if !utf8.ValidString(needle) {
		return nil, false
	}
	var frags []Frag
	Words(needle, func(w string, start, end int) {
		frags = append(frags, Frag{Text: strings.Clone(w), Kind: Exact})
		if start == 0 {
			frags[len(frags)-1].Kind = Suffix
		}
		if end == len(needle) {
			last := &frags[len(frags)-1]
			if last.Kind == Suffix {
				last.Kind = Inside
			} else {
				last.Kind = Prefix
			}
		}
	})
	return frags, len(frags) > 0
}

// Clause is a word, a "phrase" or a prefix* of a search, as fragments.
type Clause []Frag

// Query is a parsed search: every clause must match a message.
type Query struct{ Clauses []Clause }

// QueryError is a search query that does not parse.
type QueryError struct{ Msg string }

func (e *QueryError) Error() string { return "invalid search query: " + e.Msg }

// ParseQuery reads a search: words, "quoted phrases" and prefixes (log*),
// all of which a message must hold; a word with inner punctuation
// (foo-bar, a.b) is a phrase of its words. Case is ignored.
func ParseQuery(q string) (*Query, error) {
	var out Query
	add := func(text string, prefix bool) error {
		var c Clause
		Words(text, func(w string, _, _ int) { c = append(c, Frag{Text: strings.Clone(w), Kind: Exact}) })
		if len(c) == 0 {
			if prefix {
				return &QueryError{"a * must end a word"}
			}
			return nil // punctuation between words
		}
		if prefix {
			c[len(c)-1].Kind = Prefix
		}
		out.Clauses = append(out.Clauses, c)
		return nil
	}
	for i := 0; i < len(q); {
		switch c := q[i]; {
		case c == '"':
			j := strings.IndexByte(q[i+1:], '"')
			if j < 0 {
				return nil, &QueryError{`a " is not closed`}
			}
			phrase := q[i+1 : i+1+j]
			i += j + 2
			prefix := i < len(q) && q[i] == '*'
			if prefix {
				i++
			}
			if !HasWord(phrase) {
				return nil, &QueryError{"a quoted phrase holds no word"}
			}
			if err := add(phrase, prefix); err != nil {
				return nil, err
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		default:
			j := i
			for j < len(q) && !strings.ContainsRune(" \t\n\r\"", rune(q[j])) {
				j++
			}
			item := q[i:j]
			i = j
			prefix := strings.HasSuffix(item, "*")
			item = strings.TrimSuffix(item, "*")
			if strings.Contains(item, "*") {
				return nil, &QueryError{"a * must end a word"}
			}
			if err := add(item, prefix); err != nil {
				return nil, err
			}
		}
	}
	if !utf8.ValidString(q) {
		return nil, &QueryError{"it is not UTF-8"}
	}
	if len(out.Clauses) == 0 {
		return nil, &QueryError{"it holds no word"}
	}
	return &out, nil
}

// Source is a segment and how to read its postings.
type Source struct {
	Seg      *Segment
	Postings func(t *Term) ([]byte, error)
}

// Match finds the documents of src where frags match at consecutive
// positions, and how many times each.
func Match(src Source, frags []Frag) (map[uint32]int, error) {
	seg := src.Seg
	// The terms of each fragment, and the most selective fragment first.
	terms := make([][]int, len(frags))
	cost := make([]uint64, len(frags))
	for i, f := range frags {
		switch f.Kind {
		case Exact:
			if t := seg.Find(f.Text); t >= 0 {
				terms[i] = []int{t}
			}
		case Prefix:
			lo, hi := seg.PrefixRange(f.Text)
			for t := lo; t < hi; t++ {
				terms[i] = append(terms[i], t)
			}
		default:
			for t := range seg.Terms {
				if f.matches(seg.Terms[t].Text) {
					terms[i] = append(terms[i], t)
				}
			}
		}
		if len(terms[i]) == 0 {
			return nil, nil
		}
		for _, t := range terms[i] {
			cost[i] += seg.Terms[t].Len
		}
	}
	order := make([]int, len(frags))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(cost[a], cost[b]) })

	// The candidates: (document, where frags[0] would stand), sorted.
	var cands []uint64
	var pos []uint32
	for k, fi := range order {
		if k == 0 {
			var runs []int // where each term's candidates start: each run is sorted
			for _, t := range terms[fi] {
				runs = append(runs, len(cands))
				b, err := src.Postings(&seg.Terms[t])
				if err != nil {
					return nil, err
				}
				p := NewPostings(b)
				for p.Next() {
					pos = p.Positions(pos[:0])
					for _, q := range pos {
						if q >= uint32(fi) {
							cands = append(cands, uint64(p.Doc())<<32|uint64(q-uint32(fi)))
						}
					}
				}
				if p.Err() != nil {
					return nil, p.Err()
				}
			}
			if len(runs) > 1 {
				cands = slices.Compact(mergeRuns(cands, runs))
			}
		} else {
			kept := make([]bool, len(cands))
			for _, t := range terms[fi] {
				b, err := src.Postings(&seg.Terms[t])
				if err != nil {
					return nil, err
				}
				p := NewPostings(b)
				c := 0
				for c < len(cands) && p.Next() {
					doc := p.Doc()
					if uint32(cands[c]>>32) < doc {
						c = gallop(cands, c, uint64(doc)<<32)
					}
					if c == len(cands) || uint32(cands[c]>>32) != doc {
						continue
					}
					pos = p.Positions(pos[:0])
					for e := c; e < len(cands) && uint32(cands[e]>>32) == doc; e++ {
						if _, ok := slices.BinarySearch(pos, uint32(cands[e])+uint32(fi)); ok {
							kept[e] = true
						}
					}
				}
				if p.Err() != nil {
					return nil, p.Err()
				}
			}
			n := 0
			for e, c := range cands {
				if kept[e] {
					cands[n] = c
					n++
				}
			}
			cands = cands[:n]
		}
		if len(cands) == 0 {
			return nil, nil
		}
	}
	out := map[uint32]int{}
	for _, c := range cands {
		out[uint32(c>>32)]++
	}
	return out, nil
}

// gallop is the first index at or after c whose value is at least v: it
// doubles its step from c, then searches the last step, so that a term
// holding few of the candidates skips most of them.
func gallop(s []uint64, c int, v uint64) int {
	step := 1
	lo := c
	for lo+step < len(s) && s[lo+step] < v {
		lo += step
		step *= 2
	}
	hi := min(lo+step+1, len(s))
	i, _ := slices.BinarySearch(s[lo:hi], v)
	return lo + i
}

// mergeRuns merges the sorted runs of s that start at runs (ascending),
// pairwise, into one sorted slice.
func mergeRuns(s []uint64, runs []int) []uint64 {
	bounds := append(slices.Clone(runs), len(s))
	buf := make([]uint64, len(s))
	for len(bounds) > 2 {
		var next []int
		for i := 0; i+1 < len(bounds); i += 2 {
			lo, mid := bounds[i], bounds[i+1]
			hi := mid
			if i+2 < len(bounds) {
				hi = bounds[i+2]
			}
			a, b, o := lo, mid, lo
			for a < mid && b < hi {
				if s[a] <= s[b] {
					buf[o] = s[a]
					a++
				} else {
					buf[o] = s[b]
					b++
				}
				o++
			}
			o += copy(buf[o:], s[a:mid])
			copy(buf[o:], s[b:hi])
			next = append(next, lo)
		}
		next = append(next, len(s))
		s, buf = buf, s
		bounds = next
	}
	return s
}

// Hit is a document that matches every clause of a search.
type Hit struct {
	Src   int // the index of its source
	Doc   uint32
	Score float64
}

// BM25's parameters, the usual ones.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Search finds the documents of srcs that match every clause of q, scored
// by BM25 over all of them (a clause's document frequency is the
// documents it matches, its term frequency its matches in the document).
func Search(srcs []Source, q *Query) ([]Hit, error) {
	matches := make([][]map[uint32]int, len(srcs)) // source → clause → doc → tf
	df := make([]int, len(q.Clauses))
	n, tokens := 0, uint64(0)
	for s, src := range srcs {
		n += len(src.Seg.DocSeq)
		tokens += src.Seg.Tokens
		matches[s] = make([]map[uint32]int, len(q.Clauses))
		for c, clause := range q.Clauses {
			m, err := Match(src, clause)
			if err != nil {
				return nil, err
			}
			matches[s][c] = m
			df[c] += len(m)
		}
	}
	if n == 0 {
		return nil, nil
	}
	avg := float64(tokens) / float64(n)
	idf := make([]float64, len(df))
	for c := range df {
		idf[c] = math.Log(1 + (float64(n)-float64(df[c])+0.5)/(float64(df[c])+0.5))
	}
	var hits []Hit
	for s, src := range srcs {
		ms := matches[s]
		// The clause with the fewest documents drives.
		drive := 0
		for c := range ms {
			if len(ms[c]) < len(ms[drive]) {
				drive = c
			}
		}
	docs:
		for doc := range ms[drive] {
			score := 0.0
			dl := float64(src.Seg.DocLen[doc])
			for c := range ms {
				tf, ok := ms[c][doc]
				if !ok {
					continue docs
				}
				f := float64(tf)
				score += idf[c] * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*dl/avg))
			}
			hits = append(hits, Hit{Src: s, Doc: doc, Score: score})
		}
	}
	return hits, nil
}

// Snippet finds the clauses of q in a message's texts: it reports whether
// every clause is there (the check of a hit against the stored message)
// and returns about width bytes of the text around the first match, on
// one line, "…" where it was cut.
func Snippet(texts []string, q *Query, width int) (string, bool) {
	found := make([]bool, len(q.Clauses))
	snippet, have := "", false
	type word struct {
		w          string
		start, end int
	}
	var words []word
	for _, text := range texts {
		words = words[:0]
		Words(text, func(w string, start, end int) { words = append(words, word{strings.Clone(w), start, end}) })
		for c, clause := range q.Clauses {
			for i := 0; i+len(clause) <= len(words); i++ {
				ok := true
				for j, f := range clause {
					if !f.matches(words[i+j].w) {
						ok = false
						break
					}
				}
				if !ok {
					continue
				}
				found[c] = true
				if !have {
					snippet, have = cutAround(text, words[i].start, words[i+len(clause)-1].end, width), true
				}
				break
			}
		}
	}
	for _, f := range found {
		if !f {
			return "", false
		}
	}
	return snippet, true
}

// cutAround is about width bytes of text around [start, end), on rune
// boundaries and one line.
func cutAround(text string, start, end, width int) string {
	lo := start - (width-(end-start))/3
	lo = max(lo, 0)
	hi := min(max(end, lo+width), len(text))
	for lo > 0 && !utf8.RuneStart(text[lo]) {
		lo--
	}
	for hi < len(text) && !utf8.RuneStart(text[hi]) {
		hi++
	}
	s := strings.Join(strings.Fields(text[lo:hi]), " ")
	if lo > 0 {
		s = "…" + s
	}
	if hi < len(text) {
		s += "…"
	}
	return s
}
