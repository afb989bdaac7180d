package record

import (
	"encoding/binary"
	"math"

	"github.com/wctoolkit/wc/pkg/session"
)

// The summary is what wc-ls filters on and prints, session.Info without
// the id (it is in the key), in a layout read without reflection: a version
// byte, the strings (length-prefixed, the project first for the filter),
// flags, the counters as uvarints, the cost's float bits, then the optional
// members. A new member of session.Info needs a new version and schema, so
// that the first writer rebuilds the listing. 2: the import source's
// format, id and path, after the times.
const summaryVersion = 2

const (
	flagCacheCreation = 1 << iota
	flagCacheRead
	flagApproximate
	flagForked
)

func appendSummaryString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// EncodeSummary is the summary of m, which a listing entry stores.
func EncodeSummary(m *session.Meta) []byte {
	titleSource := m.TitleSource
	if titleSource == "" {
		titleSource = session.TitleDefault // as DecodeMeta reads it back
	}
	src := m.ImportSource()
	b := make([]byte, 0, 96+len(m.ProjectPath)+len(m.Title)+len(m.CreatedAt)+len(m.UpdatedAt)+len(src.ID)+len(src.Path))
	b = append(b, summaryVersion)
	b = appendSummaryString(b, m.ProjectPath)
	b = appendSummaryString(b, m.Title)
	b = appendSummaryString(b, string(titleSource))
	b = appendSummaryString(b, m.CreatedAt)
	b = appendSummaryString(b, m.UpdatedAt)
	b = appendSummaryString(b, src.Format)
	b = appendSummaryString(b, src.ID)
	b = appendSummaryString(b, src.Path)
	var flags byte
	if m.Usage.CacheCreationInputTokens != nil {
		flags |= flagCacheCreation
	}
	if m.Usage.CacheReadInputTokens != nil {
		flags |= flagCacheRead
	}
	if m.EditStats.Approximate {
		flags |= flagApproximate
	}
	if m.ForkedFrom != nil {
		flags |= flagForked
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, m.MessageCount)
	b = binary.AppendUvarint(b, m.UserMessageCount)
	b = binary.AppendUvarint(b, m.Tokens)
	b = binary.AppendUvarint(b, m.Head)
	b = binary.AppendUvarint(b, uint64(len(m.Branches)))
	b = binary.AppendUvarint(b, m.Usage.InputTokens)
	b = binary.AppendUvarint(b, m.Usage.OutputTokens)
	b = binary.AppendUvarint(b, uint64(m.Cost.UnpricedSteps))
	b = binary.AppendUvarint(b, m.EditStats.Added)
	b = binary.AppendUvarint(b, m.EditStats.Removed)
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(m.Cost.USD))
	if p := m.Usage.CacheCreationInputTokens; p != nil {
		b = binary.AppendUvarint(b, *p)
	}
	if p := m.Usage.CacheReadInputTokens; p != nil {
		b = binary.AppendUvarint(b, *p)
	}
	if f := m.ForkedFrom; f != nil {
		b = appendSummaryString(b, f.ID)
		b = binary.AppendUvarint(b, f.Seq)
	}
	return b
}

// summaryReader walks a summary; a malformed one sets bad and reads zeros.
type summaryReader struct {
	b   []byte
	pos int
	bad bool
}

func (r *summaryReader) fail() {
	r.bad = true
	r.pos = len(r.b)
}

func (r *summaryReader) byte() byte {
	if r.pos >= len(r.b) {
		r.fail()
		return 0
	}
	r.pos++
	return r.b[r.pos-1]
}

func (r *summaryReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b[r.pos:])
	if n <= 0 {
		r.fail()
		return 0
	}
	r.pos += n
	return v
}

func (r *summaryReader) uint64() uint64 {
	if len(r.b)-r.pos < 8 {
		r.fail()
		return 0
	}
	r.pos += 8
	return binary.BigEndian.Uint64(r.b[r.pos-8:])
}

// span returns the bounds of the next string.
func (r *summaryReader) span() (start, end int) {
	n := r.uvarint()
	if n > uint64(len(r.b)-r.pos) {
		r.fail()
		return r.pos, r.pos
	}
	start = r.pos
	r.pos += int(n)
	return start, r.pos
}

func newSummaryReader(v []byte) summaryReader {
	r := summaryReader{b: v}
	if r.byte() != summaryVersion {
		r.fail()
	}
	return r
}

// AppendSummaryJSON appends the info of session id, whose listing entry
// holds summary, as one line of JSON without the newline: the line wc-ls
// prints, AppendInfoJSON of what DecodeSummary reads. ok is false for a
// summary that does not decode or holds a cost JSON cannot write.
func AppendSummaryJSON(dst []byte, id string, summary []byte) ([]byte, bool) {
	info, ok := DecodeSummary(id, summary)
	if !ok || math.IsNaN(info.Cost.USD) || math.IsInf(info.Cost.USD, 0) {
		return dst, false // no metadata holds such a cost
	}
	return AppendInfoJSON(dst, &info), true
}

// DecodeSummary reads a summary into the Info of session id; ok is false
// when it is malformed. Its strings share one allocation.
func DecodeSummary(id string, v []byte) (info session.Info, ok bool) {
	r := newSummaryReader(v)
	all := string(v)
	str := func() string {
		start, end := r.span()
		return all[start:end]
	}
	info.ID = id
	info.ProjectPath = str()
	info.Title = str()
	info.TitleSource = session.TitleSource(str())
	info.CreatedAt = str()
	info.UpdatedAt = str()
	info.SourceFormat = str()
	info.SourceID = str()
	info.SourcePath = str()
	flags := r.byte()
	info.MessageCount = r.uvarint()
	info.UserMessageCount = r.uvarint()
	info.Tokens = r.uvarint()
	info.Head = r.uvarint()
	info.Branches = int(r.uvarint())
	info.Usage.InputTokens = r.uvarint()
	info.Usage.OutputTokens = r.uvarint()
	unpriced := r.uvarint()
	info.Cost.UnpricedSteps = uint32(unpriced)
	info.EditStats.Added = r.uvarint()
	info.EditStats.Removed = r.uvarint()
	info.EditStats.Approximate = flags&flagApproximate != 0
	info.Cost.USD = math.Float64frombits(r.uint64())
	if flags&flagCacheCreation != 0 {
		n := r.uvarint()
		info.Usage.CacheCreationInputTokens = &n
	}
	if flags&flagCacheRead != 0 {
		n := r.uvarint()
		info.Usage.CacheReadInputTokens = &n
	}
	if flags&flagForked != 0 {
		origin := &session.ForkOrigin{ID: str()}
		origin.Seq = r.uvarint()
		info.ForkedFrom = origin
	}
	if r.bad || r.pos != len(v) || unpriced > math.MaxUint32 || info.Branches < 0 {
		return session.Info{}, false
	}
	return info, true
}

// The strings of a summary, in order, for SummaryField.
const (
	SummaryProject = iota
	SummaryTitle
	SummaryTitleSource
	SummaryCreated
	SummaryUpdated
	SummarySourceFormat
	SummarySourceID
	SummarySourcePath
)

// SummaryField returns the summary's string number n without decoding the
// rest; ok is false when the summary is malformed.
func SummaryField(v []byte, n int) (field []byte, ok bool) {
	r := newSummaryReader(v)
	for range n {
		r.span()
	}
	s, e := r.span()
	return v[s:e], !r.bad
}
