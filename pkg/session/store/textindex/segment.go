package textindex

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
)

// A segment indexes a set of messages ("documents"), each named by its
// session and seq. It is written once and read in three parts, each a
// byte string the store keeps in chunks:
//
//   - the head: a version, the counts, the session table (each session's
//     id and how many documents it has) and each document's seq (a delta
//     within its session) and length in words, all as uvarints;
//   - the dictionary: the terms in byte order, each front coded (shared
//     prefix length, suffix) with its document frequency and the length of
//     its postings;
//   - the postings, term after term: per document holding the term, the
//     document number's delta shifted left by one, its low bit set when
//     the term is there once, else followed by the term's count; then the
//     positions' deltas.
//
// Positions count the words of a message; each text of it (MessageFields)
// starts one past the end of the one before, so that no phrase spans two.

// segmentVersion is the codec's version; a store whose index was written
// with another one rebuilds it.
const segmentVersion = 4

// ID is a session id as the store keys it.
type ID = [16]byte

// Builder collects documents into a segment. Add them session by session.
type Builder struct {
	sessions []ID
	sessDocs []uint32
	seqs     []uint64
	lens     []uint32
	tokens   uint64
	terms    map[string]*termPostings
	textSize int64
	// One document's words, reused.
	docTerms map[string][]uint32
}

type termPostings struct {
	df      uint32
	lastDoc uint32
	buf     []byte
}

// NewBuilder is an empty builder.
func NewBuilder() *Builder {
	return &Builder{terms: map[string]*termPostings{}, docTerms: map[string][]uint32{}}
}

// Docs is how many documents b holds.
func (b *Builder) Docs() int { return len(b.seqs) }

// TextBytes is the size of the texts added, for bounding a segment.
func (b *Builder) TextBytes() int64 { return b.textSize }

// Add indexes a document: the texts of message seq of session id.
func (b *Builder) Add(id ID, seq uint64, texts []string) {
	if n := len(b.sessions); n == 0 || b.sessions[n-1] != id {
		b.sessions = append(b.sessions, id)
		b.sessDocs = append(b.sessDocs, 0)
	}
	b.sessDocs[len(b.sessDocs)-1]++
	doc := uint32(len(b.seqs))
	clear(b.docTerms)
	pos := uint32(0)
	for _, t := range texts {
		b.textSize += int64(len(t))
		Words(t, func(w string, _, _ int) {
			p, ok := b.docTerms[w]
			if !ok {
				w = string([]byte(w)) // w may be Words' buffer
			}
			b.docTerms[w] = append(p, pos)
			pos++
		})
		pos++ // a gap between texts
	}
	words := uint32(0)
	for w, ps := range b.docTerms {
		tp := b.terms[w]
		if tp == nil {
			tp = &termPostings{}
			b.terms[w] = tp
		}
		tp.add(doc, ps)
		words += uint32(len(ps))
	}
	b.seqs = append(b.seqs, seq)
	b.lens = append(b.lens, words)
	b.tokens += uint64(words)
}

// Parts are a segment's encoded parts.
type Parts struct {
	Head, Dict, Postings []byte
	Docs                 int
}

// Size is the bytes of all three parts.
func (p *Parts) Size() int64 { return int64(len(p.Head) + len(p.Dict) + len(p.Postings)) }

// Encode writes the segment's parts.
func (b *Builder) Encode() Parts {
	p := Parts{Docs: len(b.seqs)}
	h := binary.AppendUvarint(nil, segmentVersion)
	h = binary.AppendUvarint(h, uint64(len(b.sessions)))
	h = binary.AppendUvarint(h, uint64(len(b.seqs)))
	h = binary.AppendUvarint(h, b.tokens)
	doc := 0
	for i, id := range b.sessions {
		h = append(h, id[:]...)
		h = binary.AppendUvarint(h, uint64(b.sessDocs[i]))
		prev := uint64(0)
		for range b.sessDocs[i] {
			h = binary.AppendUvarint(h, b.seqs[doc]-prev)
			h = binary.AppendUvarint(h, uint64(b.lens[doc]))
			prev = b.seqs[doc]
			doc++
		}
	}
	p.Head = h
	terms := make([]string, 0, len(b.terms))
	for t := range b.terms {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	d := binary.AppendUvarint(nil, uint64(len(terms)))
	size := 0
	for _, t := range b.terms {
		size += len(t.buf)
	}
	post := make([]byte, 0, size)
	prev := ""
	for _, t := range terms {
		tp := b.terms[t]
		shared := commonPrefix(prev, t)
		d = binary.AppendUvarint(d, uint64(shared))
		d = binary.AppendUvarint(d, uint64(len(t)-shared))
		d = append(d, t[shared:]...)
		d = binary.AppendUvarint(d, uint64(tp.df))
		d = binary.AppendUvarint(d, uint64(len(tp.buf)))
		post = append(post, tp.buf...)
		prev = t
	}
	p.Dict, p.Postings = d, post
	return p
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b), 255)
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// Segment is a segment's head and dictionary, decoded; its postings are
// read term by term (Term.Off, Term.Len into the postings part).
type Segment struct {
	Sessions []ID
	DocSess  []uint32 // each document's session, an index into Sessions
	DocSeq   []uint64
	DocLen   []uint32
	Tokens   uint64
	Terms    []Term
}

// Term is a dictionary entry.
type Term struct {
	Text     string
	DF       uint32
	Off, Len uint64
}

// ErrDamaged is a segment part that does not decode.
var ErrDamaged = errors.New("textindex: a segment is damaged")

// ErrVersion is a segment of another codec version.
var ErrVersion = errors.New("textindex: a segment of another version")

type reader struct {
	b   []byte
	bad bool
}

func (r *reader) uint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(n uint64) []byte {
	if uint64(len(r.b)) < n {
		r.bad = true
		r.b = nil
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// Decode reads a segment's head and dictionary.
func Decode(head, dict []byte) (*Segment, error) {
	r := &reader{b: head}
	if v := r.uint(); v != segmentVersion {
		if r.bad {
			return nil, ErrDamaged
		}
		return nil, ErrVersion
	}
	nsess, ndocs, tokens := r.uint(), r.uint(), r.uint()
	if r.bad || nsess > uint64(len(head)) || ndocs > uint64(len(head)) {
		return nil, ErrDamaged
	}
	s := &Segment{Sessions: make([]ID, nsess), DocSess: make([]uint32, 0, ndocs),
		DocSeq: make([]uint64, 0, ndocs), DocLen: make([]uint32, 0, ndocs), Tokens: tokens}
	for i := range s.Sessions {
		copy(s.Sessions[i][:], r.bytes(16))
		n := r.uint()
		if r.bad || n > ndocs {
			return nil, ErrDamaged
		}
		seq := uint64(0)
		for range n {
			seq += r.uint()
			s.DocSess = append(s.DocSess, uint32(i))
			s.DocSeq = append(s.DocSeq, seq)
			s.DocLen = append(s.DocLen, uint32(r.uint()))
		}
	}
	if r.bad || uint64(len(s.DocSeq)) != ndocs || len(r.b) != 0 {
		return nil, ErrDamaged
	}
	r = &reader{b: dict}
	nterms := r.uint()
	if r.bad || nterms > uint64(len(dict)) {
		return nil, ErrDamaged
	}
	s.Terms = make([]Term, nterms)
	prev := []byte{}
	off := uint64(0)
	for i := range s.Terms {
		shared := r.uint()
		suffix := r.bytes(r.uint())
		if r.bad || shared > uint64(len(prev)) {
			return nil, ErrDamaged
		}
		text := append(prev[:shared:shared], suffix...)
		t := &s.Terms[i]
		t.Text = string(text)
		t.DF = uint32(r.uint())
		t.Off, t.Len = off, r.uint()
		off += t.Len
		prev = text
	}
	if r.bad || len(r.b) != 0 {
		return nil, ErrDamaged
	}
	return s, nil
}

// PostingsLen is the length of the postings part the dictionary implies.
func (s *Segment) PostingsLen() uint64 {
	if len(s.Terms) == 0 {
		return 0
	}
	t := s.Terms[len(s.Terms)-1]
	return t.Off + t.Len
}

// Find is the index of term, or -1.
func (s *Segment) Find(term string) int {
	i, ok := slices.BinarySearchFunc(s.Terms, term, func(t Term, x string) int { return compareString(t.Text, x) })
	if !ok {
		return -1
	}
	return i
}

// PrefixRange is the range of terms beginning with prefix.
func (s *Segment) PrefixRange(prefix string) (lo, hi int) {
	lo, _ = slices.BinarySearchFunc(s.Terms, prefix, func(t Term, x string) int { return compareString(t.Text, x) })
	hi = lo
	for hi < len(s.Terms) && len(s.Terms[hi].Text) >= len(prefix) && s.Terms[hi].Text[:len(prefix)] == prefix {
		hi++
	}
	return lo, hi
}

func compareString(a, b string) int { return strings.Compare(a, b) }

// Postings reads a term's postings document by document.
type Postings struct {
	r       reader
	doc     uint32
	tf      int
	pos     []byte // the current document's positions, not yet read
	read    bool   // whether they were read (Positions)
	started bool
	err     error
}

// NewPostings reads b, a term's postings.
func NewPostings(b []byte) *Postings { return &Postings{r: reader{b: b}, read: true} }

// Next moves to the next document; false at the end or on damage (Err).
func (p *Postings) Next() bool {
	if !p.read {
		p.skip()
	}
	if len(p.r.b) == 0 || p.err != nil {
		return false
	}
	v := p.r.uint()
	d := uint32(v >> 1)
	if p.started {
		p.doc += d
	} else {
		p.doc, p.started = d, true
	}
	p.tf = 1
	if v&1 == 0 {
		p.tf = int(p.r.uint())
	}
	if p.r.bad || p.tf > len(p.r.b) {
		p.err = ErrDamaged
		return false
	}
	p.read = false
	return true
}

// skip passes over the current document's positions.
func (p *Postings) skip() {
	b := p.r.b
	for n := p.tf; n > 0; {
		if len(b) == 0 {
			p.err = ErrDamaged
			return
		}
		if b[0] < 0x80 {
			n--
		}
		b = b[1:]
	}
	p.r.b, p.read = b, true
}

// Doc is the current document; TF how many times the term is in it.
func (p *Postings) Doc() uint32 { return p.doc }
func (p *Postings) TF() int     { return p.tf }

// Positions appends the current document's positions to dst; once a
// document.
func (p *Postings) Positions(dst []uint32) []uint32 {
	pos := uint32(0)
	for range p.tf {
		pos += uint32(p.r.uint())
		dst = append(dst, pos)
	}
	if p.r.bad {
		p.err = ErrDamaged
	}
	p.read = true
	return dst
}

// Err is the damage Next met.
func (p *Postings) Err() error { return p.err }
