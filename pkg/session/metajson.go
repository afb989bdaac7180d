package session

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Metadata and session info are written and read by hand. encoding/json
// inspects a type by reflection the first time it meets it, which cost a
// command about 0.2 ms of its 3 ms append; the bytes are encoding/json's
// all the same (HTML-escaped for the stored form, as json.Marshal writes
// it, not for printed info, as the commands' encoder is set), and so is
// what any input decodes to: a form the scanner below does not take goes
// through encoding/json.

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
			dst = appendEscapedByte(append(dst, s[start:i]...), c)
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
				dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
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
		panic("session: " + strconv.FormatFloat(v, 'g', -1, 64) + " does not encode as JSON")
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

func (u *Usage) appendJSON(dst []byte) []byte {
	dst = appendGoKey(dst, true, "input_tokens")
	dst = appendUint(dst, u.InputTokens)
	dst = appendGoKey(dst, false, "output_tokens")
	dst = appendUint(dst, u.OutputTokens)
	if u.CacheCreationInputTokens != nil {
		dst = appendGoKey(dst, false, "cache_creation_input_tokens")
		dst = appendUint(dst, *u.CacheCreationInputTokens)
	}
	if u.CacheReadInputTokens != nil {
		dst = appendGoKey(dst, false, "cache_read_input_tokens")
		dst = appendUint(dst, *u.CacheReadInputTokens)
	}
	return append(dst, '}')
}

func (c *Cost) appendJSON(dst []byte) []byte {
	dst = appendGoKey(dst, true, "usd")
	dst = appendGoFloat(dst, c.USD)
	dst = appendGoKey(dst, false, "unpriced_steps")
	dst = appendUint(dst, uint64(c.UnpricedSteps))
	return append(dst, '}')
}

func (e *EditStats) appendJSON(dst []byte) []byte {
	dst = appendGoKey(dst, true, "added")
	dst = appendUint(dst, e.Added)
	dst = appendGoKey(dst, false, "removed")
	dst = appendUint(dst, e.Removed)
	dst = appendGoKey(dst, false, "approximate")
	dst = appendBool(dst, e.Approximate)
	return append(dst, '}')
}

func (f *ForkOrigin) appendJSON(dst []byte, html bool) []byte {
	dst = appendGoKey(dst, true, "id")
	dst = appendGoString(dst, f.ID, html)
	dst = appendGoKey(dst, false, "seq")
	dst = appendUint(dst, f.Seq)
	return append(dst, '}')
}

// encodeMeta writes what json.Marshal writes for metaDisk{*m, extra}.
func encodeMeta(m *Meta, extra []byte) []byte {
	dst := make([]byte, 0, 512+len(m.Title)+len(m.SystemPrompt)+len(m.ProjectPath)+len(extra))
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
	dst = m.Usage.appendJSON(append(appendGoKey(dst, false, "usage"), '{'))
	dst = m.Cost.appendJSON(append(appendGoKey(dst, false, "cost"), '{'))
	dst = m.EditStats.appendJSON(append(appendGoKey(dst, false, "edit_stats"), '{'))
	if cp := m.Checkpoint; cp != nil {
		dst = appendGoKey(append(appendGoKey(dst, false, "checkpoint"), '{'), true, "keep_until")
		dst = appendUint(dst, cp.KeepUntil)
		dst = appendGoKey(dst, false, "seq")
		dst = appendUint(dst, cp.Seq)
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
	dst = appendUint(dst, m.StreamRules.Turn)
	dst = appendGoKey(dst, false, "fired")
	if m.StreamRules.Fired == nil {
		dst = append(dst, "null"...)
	} else {
		rules := make([]string, 0, len(m.StreamRules.Fired))
		for r := range m.StreamRules.Fired {
			rules = append(rules, r)
		}
		slices.Sort(rules) // encoding/json sorts map keys
		dst = append(dst, '{')
		for i, r := range rules {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(appendGoString(dst, r, true), ':')
			dst = appendUint(dst, m.StreamRules.Fired[r])
		}
		dst = append(dst, '}')
	}
	dst = append(dst, '}')
	if m.ForkedFrom != nil {
		dst = m.ForkedFrom.appendJSON(append(appendGoKey(dst, false, "forked_from"), '{'), true)
	}
	dst = appendGoKey(dst, false, "head")
	dst = appendUint(dst, m.Head)
	dst = appendGoKey(dst, false, "next_seq")
	dst = appendUint(dst, m.NextSeq)
	if len(m.Branches) > 0 {
		dst = append(appendGoKey(dst, false, "branches"), '[')
		for i, b := range m.Branches {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendGoKey(append(dst, '{'), true, "name")
			dst = appendGoString(dst, b.Name, true)
			dst = appendGoKey(dst, false, "seq")
			dst = append(appendUint(dst, b.Seq), '}')
		}
		dst = append(dst, ']')
	}
	dst = appendGoKey(dst, false, "message_count")
	dst = appendUint(dst, m.MessageCount)
	dst = appendGoKey(dst, false, "user_message_count")
	dst = appendUint(dst, m.UserMessageCount)
	dst = appendGoKey(dst, false, "tokens")
	dst = appendUint(dst, m.Tokens)
	dst = appendGoKey(dst, false, "system_tokens")
	dst = appendUint(dst, m.SystemTokens)
	if m.Source != nil {
		src, err := json.Marshal(m.Source)
		if err != nil {
			panic("session: import source does not encode: " + err.Error())
		}
		dst = append(appendGoKey(dst, false, "import_source"), src...)
	}
	if len(extra) > 0 {
		// As json.Marshal writes a RawMessage: compacted and HTML-escaped.
		var buf bytes.Buffer
		if err := json.Compact(&buf, extra); err != nil {
			panic("session: meta does not encode: " + err.Error())
		}
		dst = appendGoKey(dst, false, "extra")
		var esc bytes.Buffer
		json.HTMLEscape(&esc, buf.Bytes())
		dst = append(dst, esc.Bytes()...)
	}
	return append(dst, '}')
}

// AppendInfoJSON appends info as the commands print it: what encoding/json
// writes without HTML escaping, without the newline. A function, not a
// method: a type embedding Info must not pass for it.
func AppendInfoJSON(dst []byte, in *Info) []byte {
	return append(in.AppendFields(append(dst, '{')), '}')
}

// AppendFields appends info's members, for a caller that adds its own
// after them (as encoding/json writes an embedded Info).
func (in Info) AppendFields(dst []byte) []byte {
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
	dst = appendUint(dst, in.MessageCount)
	dst = appendGoKey(dst, false, "user_message_count")
	dst = appendUint(dst, in.UserMessageCount)
	dst = appendGoKey(dst, false, "tokens")
	dst = appendUint(dst, in.Tokens)
	dst = in.Usage.appendJSON(append(appendGoKey(dst, false, "usage"), '{'))
	dst = in.Cost.appendJSON(append(appendGoKey(dst, false, "cost"), '{'))
	dst = in.EditStats.appendJSON(append(appendGoKey(dst, false, "edit_stats"), '{'))
	dst = appendGoKey(dst, false, "head")
	dst = appendUint(dst, in.Head)
	dst = appendGoKey(dst, false, "branches")
	dst = strconv.AppendInt(dst, int64(in.Branches), 10)
	if in.ForkedFrom != nil {
		dst = in.ForkedFrom.appendJSON(append(appendGoKey(dst, false, "forked_from"), '{'), false)
	}
	for _, f := range [...]struct{ key, val string }{{"source_format", in.SourceFormat}, {"source_id", in.SourceID}, {"source_path", in.SourcePath}} {
		if f.val != "" {
			dst = appendGoString(appendGoKey(dst, false, f.key), f.val, false)
		}
	}
	return dst
}

// decodeStoredMeta reads metadata in the form encodeMeta writes: compact,
// known members each at most once, strings valid UTF-8 without surrogate
// escapes, integers in range. ok is false for anything else, valid or not:
// DecodeMeta then uses encoding/json, so that the result and the errors
// never depend on which decoder ran.
func decodeStoredMeta(raw []byte) (m Meta, extra []byte, ok bool) {
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
			m.TitleSource = TitleSource(t)
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
			m.Checkpoint = &Checkpoint{}
			return s.checkpoint(m.Checkpoint)
		case "last_rewind_report":
			var r string
			ok := s.string(&r)
			m.LastRewindReport = &r
			return ok
		case "stream_rules":
			return s.streamRules(&m.StreamRules)
		case "forked_from":
			m.ForkedFrom = &ForkOrigin{}
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
			v, ok := s.value()
			m.Source = &ImportSource{}
			return ok && string(v) != "null" && json.Unmarshal(v, m.Source) == nil
		case "extra":
			v, ok := s.value()
			// A RawMessage must be valid JSON, which value checks but for
			// depth; what encoding/json would make of a null is left to it.
			extra = v
			return ok && string(v) != "null" && json.Valid(v)
		}
		return false
	}) || s.pos != len(raw) {
		return Meta{}, nil, false
	}
	return m, extra, true
}

// metaScanner reads the members of metadata, each object's keys at most
// once (encoding/json would merge repeated objects).
type metaScanner struct {
	storedScanner
}

// object reads an object, calling member for each key with the scanner at
// its value. A repeated key is refused.
func (s *metaScanner) object(member func(key []byte) bool) bool {
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return true
	}
	// A struct's few keys are compared in a list; a map of fired rules
	// may hold thousands, which a set keeps linear.
	var seen []string
	var many map[string]bool
	for {
		key, ok := s.key()
		if !ok {
			return false
		}
		switch {
		case many != nil:
			if many[string(key)] {
				return false
			}
			many[string(key)] = true
		case slices.Contains(seen, string(key)):
			return false
		case len(seen) < 16:
			seen = append(seen, string(key))
		default:
			many = make(map[string]bool, 2*len(seen))
			for _, k := range seen {
				many[k] = true
			}
			many[string(key)] = true
		}
		if !member(key) {
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

func (s *metaScanner) string(dst *string) bool {
	if s.pos < len(s.b) && s.b[s.pos] == '"' {
		t, ok := s.text()
		if ok && utf8.Valid(t) {
			*dst = string(t)
			return true
		}
	}
	return false
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

func (s *metaScanner) usage(u *Usage) bool {
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
		return false
	})
}

func (s *metaScanner) cost(c *Cost) bool {
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
		return false
	})
}

func (s *metaScanner) editStats(e *EditStats) bool {
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
		return false
	})
}

func (s *metaScanner) checkpoint(cp *Checkpoint) bool {
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
		return false
	})
}

func (s *metaScanner) forkOrigin(f *ForkOrigin) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return s.string(&f.ID)
		case "seq":
			return s.uint(&f.Seq, 64)
		}
		return false
	})
}

func (s *metaScanner) streamRules(l *StreamRules) bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "turn":
			return s.uint(&l.Turn, 64)
		case "fired":
			if s.literal("null") {
				return true
			}
			l.Fired = map[string]uint64{}
			return s.object(func(rule []byte) bool {
				var v uint64
				ok := s.uint(&v, 64)
				l.Fired[string(rule)] = v
				return ok && utf8.Valid(rule)
			})
		}
		return false
	})
}

func (s *metaScanner) branches(dst *[]NamedBranch) bool {
	if !s.byte('[') {
		return false
	}
	*dst = []NamedBranch{}
	if s.byte(']') {
		return true
	}
	for {
		var b NamedBranch
		if !s.object(func(key []byte) bool {
			switch string(key) {
			case "name":
				return s.string(&b.Name)
			case "seq":
				return s.uint(&b.Seq, 64)
			}
			return false
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
