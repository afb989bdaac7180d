package record

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/wctoolkit/wc/pkg/session"
)

// The metadata record is one JSON object, written and read by hand: a
// command decodes one and writes one per append, and encoding/json's
// reflection over session.Meta, paid anew by each process, cost the
// append target of scripts/bench.sh (BenchmarkDecodeMeta measures the
// codec; docs/performance.md, the first use in a process). The bytes are those encoding/json has
// always written for it, HTML-escaped, so that every store a wc wrote
// reads the same; the session's info line (AppendInfoJSON) is written the
// same way, without HTML escaping, as the commands print JSON.

// EncodeMeta is the record of a session's metadata.
func EncodeMeta(m *session.Meta) []byte {
	dst := make([]byte, 0, 512+len(m.Title)+len(m.SystemPrompt)+len(m.ProjectPath))
	dst = appendGoKey(append(dst, '{'), true, "id")
	dst = appendGoString(dst, m.ID, true)
	dst = appendGoKey(dst, false, "title")
	dst = appendGoString(dst, m.Title, true)
	dst = appendGoKey(dst, false, "title_source")
	dst = appendGoString(dst, string(m.TitleSource), true)
	dst = appendGoKey(dst, false, "system_prompt")
	dst = appendGoString(dst, m.SystemPrompt, true)
	dst = appendGoKey(dst, false, "project_path")
	dst = appendGoString(dst, m.ProjectPath, true)
	dst = appendGoKey(dst, false, "created_at")
	dst = appendGoString(dst, m.CreatedAt, true)
	dst = appendGoKey(dst, false, "updated_at")
	dst = appendGoString(dst, m.UpdatedAt, true)
	dst = appendUsage(appendGoKey(dst, false, "usage"), &m.Usage)
	dst = appendCost(appendGoKey(dst, false, "cost"), &m.Cost)
	dst = appendEditStats(appendGoKey(dst, false, "edit_stats"), &m.EditStats)
	if cp := m.Checkpoint; cp != nil {
		dst = appendGoKey(append(appendGoKey(dst, false, "checkpoint"), '{'), true, "keep_until")
		dst = strconv.AppendUint(dst, cp.KeepUntil, 10)
		dst = appendGoKey(dst, false, "seq")
		dst = strconv.AppendUint(dst, cp.Seq, 10)
		dst = appendGoKey(dst, false, "goal")
		dst = appendGoString(dst, cp.Goal, true)
		dst = appendGoKey(dst, false, "started_at")
		dst = append(appendGoString(dst, cp.StartedAt, true), '}')
	}
	if m.LastRewindReport != nil {
		dst = appendGoKey(dst, false, "last_rewind_report")
		dst = appendGoString(dst, *m.LastRewindReport, true)
	}
	dst = appendGoKey(append(appendGoKey(dst, false, "stream_rules"), '{'), true, "turn")
	dst = strconv.AppendUint(dst, m.StreamRules.Turn, 10)
	dst = appendGoKey(dst, false, "fired")
	if m.StreamRules.Fired == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '{')
		for i, r := range slices.Sorted(mapKeys(m.StreamRules.Fired)) { // as encoding/json sorts map keys
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(appendGoString(dst, r, true), ':')
			dst = strconv.AppendUint(dst, m.StreamRules.Fired[r], 10)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, '}')
	if m.ForkedFrom != nil {
		dst = appendForkOrigin(appendGoKey(dst, false, "forked_from"), m.ForkedFrom, true)
	}
	dst = appendGoKey(dst, false, "head")
	dst = strconv.AppendUint(dst, m.Head, 10)
	dst = appendGoKey(dst, false, "next_seq")
	dst = strconv.AppendUint(dst, m.NextSeq, 10)
	if len(m.Branches) > 0 {
		dst = append(appendGoKey(dst, false, "branches"), '[')
		for i, b := range m.Branches {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendGoKey(append(dst, '{'), true, "name")
			dst = appendGoString(dst, b.Name, true)
			dst = appendGoKey(dst, false, "seq")
			dst = append(strconv.AppendUint(dst, b.Seq, 10), '}')
		}
		dst = append(dst, ']')
	}
	dst = appendGoKey(dst, false, "message_count")
	dst = strconv.AppendUint(dst, m.MessageCount, 10)
	dst = appendGoKey(dst, false, "user_message_count")
	dst = strconv.AppendUint(dst, m.UserMessageCount, 10)
	dst = appendGoKey(dst, false, "tokens")
	dst = strconv.AppendUint(dst, m.Tokens, 10)
	dst = appendGoKey(dst, false, "system_tokens")
	dst = strconv.AppendUint(dst, m.SystemTokens, 10)
	if src := m.Source; src != nil {
		dst = appendGoKey(append(appendGoKey(dst, false, "import_source"), '{'), true, "format")
		dst = appendGoString(dst, src.Format, true)
		if src.ID != "" {
			dst = appendGoString(appendGoKey(dst, false, "id"), src.ID, true)
		}
		if src.Path != "" {
			dst = appendGoString(appendGoKey(dst, false, "path"), src.Path, true)
		}
		if src.Usage != nil {
			dst = appendUsage(appendGoKey(dst, false, "usage"), src.Usage)
		}
		dst = append(dst, '}')
	}
	if len(m.Extra) > 0 {
		// The share's members wc keeps, as encoding/json writes a raw
		// value: compacted and HTML-escaped.
		extra := []byte{'{'}
		for i, f := range m.Extra {
			if i > 0 {
				extra = append(extra, ',')
			}
			extra = append(session.AppendString(extra, f.Key), ':')
			extra = append(extra, f.Value...)
		}
		extra = append(extra, '}')
		var buf bytes.Buffer
		if err := json.Compact(&buf, extra); err != nil {
			panic("record: metadata does not encode: " + err.Error())
		}
		dst = appendGoKey(dst, false, "extra")
		esc := bytes.NewBuffer(dst)
		json.HTMLEscape(esc, buf.Bytes())
		dst = esc.Bytes()
	}
	return append(dst, '}')
}

func mapKeys(m map[string]uint64) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// AppendInfoJSON appends info as the commands print it, without the
// newline.
func AppendInfoJSON(dst []byte, in *session.Info) []byte {
	return append(AppendInfoFields(append(dst, '{'), in), '}')
}

// AppendInfoFields appends info's members, for a caller that adds its own
// after them (a line that holds the info and more).
func AppendInfoFields(dst []byte, in *session.Info) []byte {
	dst = appendGoKey(dst, true, "id")
	dst = appendGoString(dst, in.ID, false)
	dst = appendGoKey(dst, false, "title")
	dst = appendGoString(dst, in.Title, false)
	dst = appendGoKey(dst, false, "title_source")
	dst = appendGoString(dst, string(in.TitleSource), false)
	dst = appendGoKey(dst, false, "project_path")
	dst = appendGoString(dst, in.ProjectPath, false)
	dst = appendGoKey(dst, false, "created_at")
	dst = appendGoString(dst, in.CreatedAt, false)
	dst = appendGoKey(dst, false, "updated_at")
	dst = appendGoString(dst, in.UpdatedAt, false)
	dst = appendGoKey(dst, false, "message_count")
	dst = strconv.AppendUint(dst, in.MessageCount, 10)
	dst = appendGoKey(dst, false, "user_message_count")
	dst = strconv.AppendUint(dst, in.UserMessageCount, 10)
	dst = appendGoKey(dst, false, "tokens")
	dst = strconv.AppendUint(dst, in.Tokens, 10)
	dst = appendUsage(appendGoKey(dst, false, "usage"), &in.Usage)
	dst = appendCost(appendGoKey(dst, false, "cost"), &in.Cost)
	dst = appendEditStats(appendGoKey(dst, false, "edit_stats"), &in.EditStats)
	dst = appendGoKey(dst, false, "head")
	dst = strconv.AppendUint(dst, in.Head, 10)
	dst = appendGoKey(dst, false, "branches")
	dst = strconv.AppendInt(dst, int64(in.Branches), 10)
	if in.ForkedFrom != nil {
		dst = appendForkOrigin(appendGoKey(dst, false, "forked_from"), in.ForkedFrom, false)
	}
	for _, f := range [...]struct{ key, val string }{{"source_format", in.SourceFormat}, {"source_id", in.SourceID}, {"source_path", in.SourcePath}} {
		if f.val != "" {
			dst = appendGoString(appendGoKey(dst, false, f.key), f.val, false)
		}
	}
	return dst
}

// appendGoString appends s as encoding/json writes a string: invalid
// UTF-8 as \ufffd, U+2028 and U+2029 escaped, and with html <, > and &.
func appendGoString(dst []byte, s string, html bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			dst = session.AppendEscapedByte(append(dst, s[start:i]...), c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			if r == utf8.RuneError {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, `\u202`...)
				dst = append(dst, "0123456789abcdef"[r&0xf])
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendGoFloat appends v as encoding/json writes a float64; it panics on
// NaN and infinities, which encoding/json refuses.
func appendGoFloat(dst []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		panic("record: " + strconv.FormatFloat(v, 'g', -1, 64) + " does not encode as JSON")
	}
	format := byte('f')
	if abs := math.Abs(v); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, v, format, -1, 64)
	if n := len(dst) - start; format == 'e' && n >= 4 && dst[len(dst)-4] == 'e' && dst[len(dst)-3] == '-' && dst[len(dst)-2] == '0' {
		dst[len(dst)-2] = dst[len(dst)-1] // e-07 -> e-7
		dst = dst[:len(dst)-1]
	}
	return dst
}

func appendGoKey(dst []byte, first bool, key string) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, key...) // every key here is plain ASCII
	return append(dst, '"', ':')
}

func appendUsage(dst []byte, u *session.Usage) []byte {
	dst = appendGoKey(append(dst, '{'), true, "input_tokens")
	dst = strconv.AppendUint(dst, u.InputTokens, 10)
	dst = appendGoKey(dst, false, "output_tokens")
	dst = strconv.AppendUint(dst, u.OutputTokens, 10)
	if u.CacheCreationInputTokens != nil {
		dst = appendGoKey(dst, false, "cache_creation_input_tokens")
		dst = strconv.AppendUint(dst, *u.CacheCreationInputTokens, 10)
	}
	if u.CacheReadInputTokens != nil {
		dst = appendGoKey(dst, false, "cache_read_input_tokens")
		dst = strconv.AppendUint(dst, *u.CacheReadInputTokens, 10)
	}
	return append(dst, '}')
}

func appendCost(dst []byte, c *session.Cost) []byte {
	dst = appendGoKey(append(dst, '{'), true, "usd")
	dst = appendGoFloat(dst, c.USD)
	dst = appendGoKey(dst, false, "unpriced_steps")
	dst = strconv.AppendUint(dst, uint64(c.UnpricedSteps), 10)
	return append(dst, '}')
}

func appendEditStats(dst []byte, e *session.EditStats) []byte {
	dst = appendGoKey(append(dst, '{'), true, "added")
	dst = strconv.AppendUint(dst, e.Added, 10)
	dst = appendGoKey(dst, false, "removed")
	dst = strconv.AppendUint(dst, e.Removed, 10)
	dst = appendGoKey(dst, false, "approximate")
	dst = strconv.AppendBool(dst, e.Approximate)
	return append(dst, '}')
}

func appendForkOrigin(dst []byte, f *session.ForkOrigin, html bool) []byte {
	dst = appendGoKey(append(dst, '{'), true, "id")
	dst = appendGoString(dst, f.ID, html)
	dst = appendGoKey(dst, false, "seq")
	dst = strconv.AppendUint(dst, f.Seq, 10)
	return append(dst, '}')
}

// DecodeMeta reads a metadata record: the form EncodeMeta writes, and any
// other JSON of the same members (a backup's, once a tool other than wc
// has rewritten it): insignificant white space, other escapes, other
// orders, null for an absent member. As encoding/json reads it, a member
// given twice takes its last value, and unknown members are passed over.
func DecodeMeta(b []byte) (session.Meta, error) {
	m, extra, ok := decodeMeta(b)
	if !ok && json.Valid(b) {
		// The scanner reads compact JSON: white space goes first.
		var buf bytes.Buffer
		if json.Compact(&buf, b) == nil {
			m, extra, ok = decodeMeta(buf.Bytes())
		}
	}
	if !ok {
		return session.Meta{}, errMalformedMeta
	}
	if len(extra) > 0 {
		gjson.ParseBytes(extra).ForEach(func(k, v gjson.Result) bool {
			m.Extra = append(m.Extra, session.Field{Key: k.Str, Value: session.CompactRaw(v.Raw)})
			return true
		})
	}
	if m.TitleSource == "" {
		m.TitleSource = session.TitleDefault
	}
	return m, nil
}

var errMalformedMeta = &session.InvalidError{Msg: "session metadata is malformed"}

// decodeMeta reads compact metadata; ok is false for anything else.
func decodeMeta(raw []byte) (m session.Meta, extra []byte, ok bool) {
	s := metaScanner{storedScanner: storedScanner{b: raw}}
	if !s.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return s.string(&m.ID)
		case "title":
			return s.string(&m.Title)
		case "title_source":
			var t string
			ok := s.string(&t)
			m.TitleSource = session.TitleSource(t)
			return ok
		case "system_prompt":
			return s.string(&m.SystemPrompt)
		case "project_path":
			return s.string(&m.ProjectPath)
		case "created_at":
			return s.string(&m.CreatedAt)
		case "updated_at":
			return s.string(&m.UpdatedAt)
		case "usage":
			return s.usage(&m.Usage)
		case "cost":
			return s.cost(&m.Cost)
		case "edit_stats":
			return s.editStats(&m.EditStats)
		case "checkpoint":
			if m.Checkpoint == nil {
				m.Checkpoint = &session.Checkpoint{}
			}
			return s.checkpoint(m.Checkpoint)
		case "last_rewind_report":
			var r string
			ok := s.string(&r)
			m.LastRewindReport = &r
			return ok
		case "stream_rules":
			return s.streamRules(&m.StreamRules)
		case "forked_from":
			if m.ForkedFrom == nil {
				m.ForkedFrom = &session.ForkOrigin{}
			}
			return s.forkOrigin(m.ForkedFrom)
		case "head":
			return s.uint(&m.Head, 64)
		case "next_seq":
			return s.uint(&m.NextSeq, 64)
		case "branches":
			return s.branches(&m.Branches)
		case "message_count":
			return s.uint(&m.MessageCount, 64)
		case "user_message_count":
			return s.uint(&m.UserMessageCount, 64)
		case "tokens":
			return s.uint(&m.Tokens, 64)
		case "system_tokens":
			return s.uint(&m.SystemTokens, 64)
		case "import_source":
			if m.Source == nil {
				m.Source = &session.ImportSource{}
			}
			return s.importSource(m.Source)
		case "extra":
			v, ok := s.value()
			extra = v
			return ok && v[0] == '{'
		}
		_, ok := s.value() // not a member of the record
		return ok
	}) || s.pos != len(raw) {
		return session.Meta{}, nil, false
	}
	return m, extra, true
}

// metaScanner reads the members of metadata.
type metaScanner struct {
	storedScanner
}

// object reads an object, calling member for each key with the scanner at
// its value; a null value is passed over, leaving the member as it was.
func (s *metaScanner) object(member func(key []byte) bool) bool {
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return true
	}
	for {
		key, ok := s.key()
		if !ok {
			return false
		}
		if !s.literal("null") && !member(key) {
			return false
		}
		if s.byte('}') {
			return true
		}
		if !s.byte(',') {
			return false
		}
	}
}

// string reads a string; invalid UTF-8 becomes U+FFFD, a byte at a time,
// as encoding/json decodes it.
func (s *metaScanner) string(dst *string) bool {
	if s.pos >= len(s.b) || s.b[s.pos] != '"' {
		return false
	}
	t, ok := s.text()
	if !ok {
		return false
	}
	*dst = goString(t)
	return true
}

// goString is unescaped text as encoding/json reads it: invalid UTF-8
// becomes U+FFFD.
func goString(t []byte) string {
	if utf8.Valid(t) {
		return string(t)
	}
	var out []byte
	for len(t) > 0 {
		r, size := utf8.DecodeRune(t)
		out = utf8.AppendRune(out, r)
		t = t[size:]
	}
	return string(out)
}

// uint reads an unsigned integer of the given bits, as JSON spells it.
func (s *metaScanner) uint(dst *uint64, bits int) bool {
	start := s.pos
	if s.pos >= len(s.b) || s.b[s.pos] < '0' || s.b[s.pos] > '9' || !s.number() {
		return false
	}
	v, err := strconv.ParseUint(string(s.b[start:s.pos]), 10, bits)
	*dst = v
	return err == nil
}

func (s *metaScanner) float(dst *float64) bool {
	start := s.pos
	if !s.number() {
		return false
	}
	v, err := strconv.ParseFloat(string(s.b[start:s.pos]), 64)
	*dst = v
	return err == nil
}

func (s *metaScanner) optUint(dst **uint64) bool {
	var v uint64
	ok := s.uint(&v, 64)
	*dst = &v
	return ok
}

func (s *metaScanner) usage(u *session.Usage) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "input_tokens":
			return s.uint(&u.InputTokens, 64)
		case "output_tokens":
			return s.uint(&u.OutputTokens, 64)
		case "cache_creation_input_tokens":
			return s.optUint(&u.CacheCreationInputTokens)
		case "cache_read_input_tokens":
			return s.optUint(&u.CacheReadInputTokens)
		}
		_, ok := s.value()
		return ok
	})
}

func (s *metaScanner) cost(c *session.Cost) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "usd":
			return s.float(&c.USD)
		case "unpriced_steps":
			var v uint64
			ok := s.uint(&v, 32)
			c.UnpricedSteps = uint32(v)
			return ok
		}
		_, ok := s.value()
		return ok
	})
}

func (s *metaScanner) editStats(e *session.EditStats) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "added":
			return s.uint(&e.Added, 64)
		case "removed":
			return s.uint(&e.Removed, 64)
		case "approximate":
			v, ok := s.boolean()
			e.Approximate = v
			return ok
		}
		_, ok := s.value()
		return ok
	})
}

func (s *metaScanner) checkpoint(cp *session.Checkpoint) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "keep_until":
			return s.uint(&cp.KeepUntil, 64)
		case "seq":
			return s.uint(&cp.Seq, 64)
		case "goal":
			return s.string(&cp.Goal)
		case "started_at":
			return s.string(&cp.StartedAt)
		}
		_, ok := s.value()
		return ok
	})
}

func (s *metaScanner) forkOrigin(f *session.ForkOrigin) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return s.string(&f.ID)
		case "seq":
			return s.uint(&f.Seq, 64)
		}
		_, ok := s.value()
		return ok
	})
}

func (s *metaScanner) importSource(src *session.ImportSource) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "format":
			return s.string(&src.Format)
		case "id":
			return s.string(&src.ID)
		case "path":
			return s.string(&src.Path)
		case "usage":
			if src.Usage == nil {
				src.Usage = &session.Usage{}
			}
			return s.usage(src.Usage)
		}
		_, ok := s.value()
		return ok
	})
}

func (s *metaScanner) streamRules(l *session.StreamRules) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "turn":
			return s.uint(&l.Turn, 64)
		case "fired":
			if l.Fired == nil {
				l.Fired = map[string]uint64{}
			}
			return s.object(func(rule []byte) bool {
				var v uint64
				ok := s.uint(&v, 64)
				l.Fired[goString(rule)] = v
				return ok
			})
		}
		_, ok := s.value()
		return ok
	})
}

func (s *metaScanner) branches(dst *[]session.NamedBranch) bool {
	if !s.byte('[') {
		return false
	}
	*dst = []session.NamedBranch{}
	if s.byte(']') {
		return true
	}
	for {
		var b session.NamedBranch
		if !s.object(func(key []byte) bool {
			switch string(key) {
			case "name":
				return s.string(&b.Name)
			case "seq":
				return s.uint(&b.Seq, 64)
			}
			_, ok := s.value()
			return ok
		}) {
			return false
		}
		*dst = append(*dst, b)
		if s.byte(']') {
			return true
		}
		if !s.byte(',') {
			return false
		}
	}
}
