package record

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math/bits"
	"sync"
	"unicode/utf8"

	"github.com/wctoolkit/wc/pkg/session"
)

// decodeMessage reads the message of a node record, in the form
// session.Message.AppendJSON writes it: compact, no duplicate members,
// strings escaped as AppendJSON escapes them. It scans the bytes once,
// eight at a time (session.DecodeMessage, which reads every spelling of a
// message a provider or agent writes, goes through gjson a byte at a time,
// and the export's target is lost with it: BenchmarkExportMarkdown). ok is
// false for anything outside that form.
func decodeMessage(raw []byte) (session.Message, bool) {
	s := storedScanner{b: raw}
	if p, _ := unescapeBuffers.Get().(*[]byte); p != nil {
		s.buf = *p
	}
	m, ok := s.message()
	if cap(s.buf) <= maxPooledBuffer {
		unescapeBuffers.Put(&s.buf)
	}
	return m, ok
}

func (s *storedScanner) message() (m session.Message, ok bool) {
	if !s.byte('{') {
		return m, false
	}
	var seen uint16 // message members read, as bits
	var extra []session.Field
	for first := true; ; first = false {
		if s.peek('}') && first {
			return m, false // no role
		}
		if !first && !s.byte(',') {
			if s.byte('}') && s.pos == len(s.b) {
				break
			}
			return m, false
		}
		key, ok := s.key()
		if !ok {
			return m, false
		}
		bit := messageMembers[string(key)]
		if bit != 0 && seen&bit != 0 || bit == 0 && hasField(extra, key) {
			if !s.skipValue(0) { // the first wins, as in session.DecodeMessage
				return m, false
			}
			continue
		}
		seen |= bit
		switch bit {
		case memberRole:
			r, ok := s.str()
			if !ok {
				return m, false
			}
			switch session.Role(r) {
			case session.RoleSystem, session.RoleUser, session.RoleAssistant, session.RoleTool:
				m.Role = session.Role(r)
			default:
				return m, false
			}
		case memberContent:
			if m.Content, ok = s.content(); !ok {
				return m, false
			}
		case memberToolCallID:
			if m.ToolCallID, ok = s.str(); !ok {
				return m, false
			}
		case memberName:
			if m.Name, ok = s.str(); !ok {
				return m, false
			}
		case memberCreatedAt:
			if m.CreatedAt, ok = s.str(); !ok {
				return m, false
			}
			if !session.ValidTime(m.CreatedAt) {
				return m, false
			}
		case memberIsError:
			if m.IsError, ok = s.boolean(); !ok {
				return m, false
			}
		case memberKind:
			// Only our own markers are interpreted; any other value is data.
			v, ok := s.value()
			if !ok {
				return m, false
			}
			var k string
			if v[0] == '"' {
				sub := storedScanner{b: v}
				if k, ok = sub.str(); !ok {
					return m, false
				}
			}
			switch session.Kind(k) {
			case session.KindNote, session.KindSummary, session.KindRewind:
				m.Kind = session.Kind(k)
			default:
				extra = append(extra, session.Field{Key: "kind", Value: copyRaw(v)})
			}
		case memberToolCalls, memberWCContent:
			return m, false
		default:
			name := string(key)
			v, ok := s.value()
			if !ok {
				return m, false
			}
			extra = append(extra, session.Field{Key: name, Value: copyRaw(v)})
		}
	}
	if seen&memberRole == 0 {
		return m, false
	}
	m.Extra = extra
	return m, true
}

// unescapeBuffers keeps the text buffers of decodeMessage between nodes:
// an export decodes thousands (BenchmarkDecodeNode).
var unescapeBuffers sync.Pool

const maxPooledBuffer = 1 << 20

// The members of a message that session.DecodeMessage interprets, as bits.
const (
	memberRole uint16 = 1 << iota
	memberContent
	memberToolCallID
	memberName
	memberCreatedAt
	memberIsError
	memberKind
	memberToolCalls
	memberWCContent
)

var messageMembers = map[string]uint16{"role": memberRole, "content": memberContent,
	"tool_call_id": memberToolCallID, "name": memberName, "created_at": memberCreatedAt,
	"is_error": memberIsError, "kind": memberKind, "tool_calls": memberToolCalls, "wc_content": memberWCContent}

func hasField(fields []session.Field, key []byte) bool {
	for i := range fields {
		if fields[i].Key == string(key) {
			return true
		}
	}
	return false
}

// storedScanner reads compact JSON; every method reports false at
// anything else and leaves the caller to give up.
type storedScanner struct {
	b      []byte
	pos    int
	buf    []byte // unescaped text, reused
	keyBuf []byte
	// rareEscape is set by any escape but \n, \t, \" and \\: only those
	// others can make a control character.
	rareEscape bool
}

func (s *storedScanner) peek(c byte) bool { return s.pos < len(s.b) && s.b[s.pos] == c }

func (s *storedScanner) byte(c byte) bool {
	if s.peek(c) {
		s.pos++
		return true
	}
	return false
}

// key reads a member name and its colon. The name is valid until the next
// key.
func (s *storedScanner) key() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.pos
	end := start + nextSpecial(s.b[start:])
	var name []byte
	if end < len(s.b) && s.b[end] == '"' {
		name = s.b[start:end]
		s.pos = end + 1
	} else { // escaped: rare, but AppendJSON keeps any name
		s.pos = start - 1
		var ok bool
		if s.keyBuf, ok = s.appendStr(s.keyBuf[:0]); !ok {
			return nil, false
		}
		name = s.keyBuf
	}
	if !s.byte(':') {
		return nil, false
	}
	return name, true
}

const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

// nextSpecial returns the index of the first '"', '\\' or control byte in
// b, or len(b). It tests eight bytes per step: a byte equal to c makes
// x^c zero, and (v-0x01..)&^v&0x80.. flags a zero (or a byte below 0x20,
// subtracting 0x20..) in its lowest occurrence exactly.
func nextSpecial(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ ('"' * lowBits)
		bs := x ^ ('\\' * lowBits)
		m := (q-lowBits)&^q | (bs-lowBits)&^bs | (x-0x20*lowBits)&^x
		if m &= highBits; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

// str reads a string and returns it unescaped.
func (s *storedScanner) str() (string, bool) {
	t, ok := s.text()
	return string(t), ok
}

// text reads a string and returns its text, valid until the next call.
func (s *storedScanner) text() ([]byte, bool) {
	if !s.peek('"') {
		return nil, false
	}
	start := s.pos + 1
	end := start + nextSpecial(s.b[start:])
	if end < len(s.b) && s.b[end] == '"' { // no escapes
		s.pos = end + 1
		return s.b[start:end], true
	}
	var ok bool
	s.buf, ok = s.unescape(append(s.buf[:0], s.b[start:end]...), end)
	return s.buf, ok
}

// appendStr appends a string's text to out, unescaped.
func (s *storedScanner) appendStr(out []byte) ([]byte, bool) {
	if !s.byte('"') {
		return out, false
	}
	end := s.pos + nextSpecial(s.b[s.pos:])
	return s.unescape(append(out, s.b[s.pos:end]...), end)
}

// unescape goes on with a string whose text up to b[i], a quote, backslash
// or control byte, is in out. Text has an escape every twenty bytes or so
// (newlines, tabs, quotes), so the scan is inlined and copies whole words:
// unescaping never lengthens text, and out gets eight bytes to spare.
func (s *storedScanner) unescape(out []byte, i int) ([]byte, bool) {
	b := s.b
	if need := len(out) + len(b) - i + 8; cap(out) < need {
		out = append(make([]byte, 0, need), out...)
	}
	n := len(out)
	out = out[:cap(out)]
	for {
		if i >= len(b) || b[i] < 0x20 {
			return out[:n], false
		}
		if b[i] == '"' {
			s.pos = i + 1
			return out[:n], true
		}
		if i+1 >= len(b) {
			return out[:n], false
		}
		switch c := b[i+1]; c {
		case 'n':
			out[n], n, i = '\n', n+1, i+2
		case 't':
			out[n], n, i = '\t', n+1, i+2
		case '"', '\\':
			out[n], n, i = c, n+1, i+2
		default:
			s.rareEscape = true
			var ok bool
			var more []byte
			if more, i, ok = unescapeOne(out[:n], b, i); !ok {
				return out[:n], false
			}
			n = len(more)
		}
		for ; i+8 <= len(b); i, n = i+8, n+8 {
			x := binary.LittleEndian.Uint64(b[i:])
			binary.LittleEndian.PutUint64(out[n:], x)
			q := x ^ ('"' * lowBits)
			bs := x ^ ('\\' * lowBits)
			if m := ((q-lowBits)&^q | (bs-lowBits)&^bs | (x-0x20*lowBits)&^x) & highBits; m != 0 {
				k := bits.TrailingZeros64(m) / 8
				i, n = i+k, n+k
				goto next
			}
		}
		for ; i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20; i, n = i+1, n+1 {
			out[n] = b[i]
		}
	next:
	}
}

// unescapeOne decodes the escape at b[at] (a backslash), as gjson and
// encoding/json do, and returns where the text goes on: a surrogate pair
// is one character, a lone surrogate U+FFFD. A malformed escape is not
// JSON: ok is false.
func unescapeOne(out, b []byte, at int) ([]byte, int, bool) {
	if at+1 >= len(b) {
		return out, 0, false
	}
	var c byte
	switch b[at+1] {
	case '"', '\\', '/':
		c = b[at+1]
	case 'b':
		c = '\b'
	case 'f':
		c = '\f'
	case 'n':
		c = '\n'
	case 'r':
		c = '\r'
	case 't':
		c = '\t'
	case 'u':
		r, ok := escapedRune(b, at)
		if !ok {
			return out, 0, false
		}
		next := at + 6
		if r >= 0xd800 && r < 0xdc00 {
			if low, ok := escapedRune(b, next); ok && low >= 0xdc00 && low < 0xe000 {
				return utf8.AppendRune(out, 0x10000+(r-0xd800)<<10+(low-0xdc00)), next + 6, true
			}
		}
		if r >= 0xd800 && r < 0xe000 {
			r = utf8.RuneError
		}
		return utf8.AppendRune(out, r), next, true
	default:
		return out, 0, false
	}
	return append(out, c), at + 2, true
}

// escapedRune reads the \uXXXX escape at b[at], if there is one.
func escapedRune(b []byte, at int) (rune, bool) {
	if at+6 > len(b) || b[at] != '\\' || b[at+1] != 'u' {
		return 0, false
	}
	var v [2]byte
	if _, err := hex.Decode(v[:], b[at+2:at+6]); err != nil {
		return 0, false
	}
	return rune(v[0])<<8 | rune(v[1]), true
}

// skipString passes a string without unescaping it.
func (s *storedScanner) skipString() bool {
	if !s.byte('"') {
		return false
	}
	i := s.pos
	for {
		i += nextSpecial(s.b[i:])
		switch {
		case i >= len(s.b) || s.b[i] < 0x20:
			return false
		case s.b[i] == '"':
			s.pos = i + 1
			return true
		}
		// Any escape JSON allows: the bytes are kept as they are.
		if _, ok := escapedRune(s.b, i); ok {
			i += 6
			continue
		}
		var ok bool
		if _, i, ok = unescapeOne(s.buf[:0], s.b, i); !ok {
			return false
		}
	}
}

func (s *storedScanner) boolean() (bool, bool) {
	switch {
	case s.literal("true"):
		return true, true
	case s.literal("false"):
		return false, true
	}
	return false, false
}

func (s *storedScanner) literal(word string) bool {
	if len(s.b)-s.pos >= len(word) && string(s.b[s.pos:s.pos+len(word)]) == word {
		s.pos += len(word)
		return true
	}
	return false
}

// value passes any compact JSON value and returns its bytes.
func (s *storedScanner) value() ([]byte, bool) {
	start := s.pos
	if !s.skipValue(0) {
		return nil, false
	}
	return s.b[start:s.pos], true
}

func (s *storedScanner) skipValue(depth int) bool {
	if s.pos >= len(s.b) || depth > session.MaxJSONDepth {
		return false
	}
	switch c := s.b[s.pos]; {
	case c == '"':
		return s.skipString()
	case c == '{' || c == '[':
		s.pos++
		end := byte(']')
		if c == '{' {
			end = '}'
		}
		if s.byte(end) {
			return true
		}
		for {
			if c == '{' && (!s.skipString() || !s.byte(':')) {
				return false
			}
			if !s.skipValue(depth + 1) {
				return false
			}
			if s.byte(end) {
				return true
			}
			if !s.byte(',') {
				return false
			}
		}
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.number()
}

// number passes a number in JSON's grammar.
func (s *storedScanner) number() bool {
	b, i := s.b, s.pos
	digits := func() bool {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if !digits() {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	s.pos = i
	return true
}

// copyRaw is a kept value as session.DecodeMessage keeps it (see
// session.KeepRaw): the stored bytes of an older wc may hold a lone
// surrogate.
func copyRaw(v []byte) json.RawMessage { return session.KeepRaw(v) }

// content reads a string or an array of blocks.
func (s *storedScanner) content() (session.Content, bool) {
	if s.peek('"') {
		t, ok := s.str()
		return session.Content{Text: t}, ok
	}
	if !s.byte('[') {
		return session.Content{}, false
	}
	c := session.Content{IsBlocks: true, Blocks: []session.Block{}}
	if s.byte(']') {
		return c, true
	}
	for {
		b, ok := s.block()
		if !ok {
			return c, false
		}
		c.Blocks = append(c.Blocks, b)
		if s.byte(']') {
			return c, true
		}
		if !s.byte(',') {
			return c, false
		}
	}
}

// block reads a block whose first member is its type, as AppendJSON writes
// it; a block of a type this package does not know is kept whole.
func (s *storedScanner) block() (session.Block, bool) {
	start := s.pos
	if !s.byte('{') {
		return session.Block{}, false
	}
	k, ok := s.key()
	for ok && string(k) != "type" { // only a kept unknown block has it later
		ok = s.skipValue(0) && s.byte(',')
		if ok {
			k, ok = s.key()
		}
	}
	if !ok {
		return session.Block{}, false
	}
	t, ok := s.str()
	if !ok {
		return session.Block{}, false
	}
	b := session.Block{Type: t}
	known := session.BlockMembers(t)
	if known == nil {
		if t == "image_url" || t == "tool_use" || t == "tool_result" {
			return b, false // normalised by session.DecodeMessage
		}
		s.pos = start
		v, ok := s.value()
		if !ok {
			return b, false
		}
		b.Raw = copyRaw(v)
		return b, true
	}
	if string(s.b[start+1:start+7]) != `"type"` {
		return b, false // AppendJSON writes a known type first
	}
	var seen uint16 // known members read, as bits
	for {
		if s.byte('}') {
			return b, true
		}
		if !s.byte(',') {
			return b, false
		}
		k, ok := s.key()
		if !ok {
			return b, false
		}
		bit := blockMembers[string(k)]
		switch {
		case string(k) == "thinking" && t == session.BlockThinking:
			return b, false // session.DecodeMessage's spelling of text
		case string(k) == "type" || known[string(k)] && seen&bit != 0 || !known[string(k)] && hasField(b.Extra, k):
			if !s.skipValue(0) { // the first wins, as in session.DecodeMessage
				return b, false
			}
		case !known[string(k)]:
			name := string(k)
			v, ok := s.value()
			if !ok {
				return b, false
			}
			b.Extra = append(b.Extra, session.Field{Key: name, Value: copyRaw(v)})
		default:
			seen |= bit
			if !s.blockField(&b, bit) {
				return b, false
			}
		}
	}
}

// The members of blocks that decodeBlock interprets, as bits.
const (
	fieldText uint16 = 1 << iota
	fieldSignature
	fieldData
	fieldID
	fieldName
	fieldToolUseID
	fieldInput
	fieldSource
	fieldContent
	fieldIsError
)

var blockMembers = map[string]uint16{"text": fieldText, "signature": fieldSignature, "data": fieldData,
	"id": fieldID, "name": fieldName, "tool_use_id": fieldToolUseID, "input": fieldInput,
	"source": fieldSource, "content": fieldContent, "is_error": fieldIsError}

// blockField reads one known member as session.DecodeMessage does.
func (s *storedScanner) blockField(b *session.Block, member uint16) bool {
	if s.literal("null") {
		switch member {
		case fieldInput:
			b.Input = json.RawMessage("null")
		case fieldSource:
			b.Source = json.RawMessage("null")
		}
		return true
	}
	var dst *string
	switch member {
	case fieldText:
		dst = &b.Text
	case fieldSignature:
		b.HasSignature = true
		dst = &b.Signature
	case fieldData:
		dst = &b.Data
	case fieldID:
		dst = &b.ID
	case fieldName:
		dst = &b.Name
	case fieldToolUseID:
		dst = &b.ToolUseID
	case fieldIsError:
		e, ok := s.boolean()
		b.IsError = &e
		return ok
	case fieldContent:
		if s.peek('"') {
			dst = &b.Result
			break
		}
		v, ok := s.value()
		b.ResultRaw = copyRaw(v)
		return ok
	default: // input, source
		v, ok := s.value()
		if member == fieldInput {
			b.Input = copyRaw(v)
		} else {
			b.Source = copyRaw(v)
		}
		return ok
	}
	if !s.peek('"') {
		return false
	}
	var ok bool
	*dst, ok = s.str()
	return ok
}
