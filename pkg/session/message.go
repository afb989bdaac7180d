package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// Role is who wrote a message. It serialises in lowercase, as in whycodes.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Label is the capitalised role that transcripts and exports show.
func (r Role) Label() string {
	switch r {
	case RoleUser:
		return "User"
	case RoleAssistant:
		return "Assistant"
	case RoleSystem:
		return "System"
	case RoleTool:
		return "Tool"
	}
	return string(r)
}

// Kind marks messages that carry a role but are not what the role suggests:
// a user-role agent note or compaction summary is not a turn the user took.
// whycodes does not have the field; it ignores it on load.
type Kind string

const (
	KindNone    Kind = ""
	KindNote    Kind = "note"    // injected by the agent, never a user turn
	KindSummary Kind = "summary" // compaction summary carrier
	KindRewind  Kind = "rewind"  // checkpoint rewind report
)

// Block type names as whycodes writes them (no underscore in the tool ones).
const (
	BlockText             = "text"
	BlockImage            = "image"
	BlockToolUse          = "tooluse"
	BlockToolResult       = "toolresult"
	BlockThinking         = "thinking"
	BlockRedactedThinking = "redacted_thinking"
)

// Field is a JSON member this package does not interpret. Value is the raw
// JSON of the value, compacted; it is written back unchanged.
type Field struct {
	Key   string
	Value json.RawMessage
}

// Message is one whycodes message. Unknown members survive in Extra.
type Message struct {
	Role       Role
	Content    Content
	ToolCallID string
	Name       string // tool name on tool messages
	CreatedAt  string // RFC 3339 as given; never re-formatted
	IsError    bool   // a tool message that reports a failure
	Kind       Kind
	Extra      []Field
}

// Content is either plain text or a list of blocks.
type Content struct {
	Text     string
	Blocks   []Block
	IsBlocks bool
}

// TextContent returns plain-text content.
func TextContent(s string) Content { return Content{Text: s} }

// BlockContent returns block content.
func BlockContent(b ...Block) Content { return Content{Blocks: b, IsBlocks: true} }

// Block is one content block. Fields apply by Type; a block of a type this
// package does not know is kept whole in Raw.
type Block struct {
	Type string

	Text         string // text, thinking
	Signature    string // thinking
	HasSignature bool
	Data         string // redacted_thinking

	ID    string          // tooluse
	Name  string          // tooluse
	Input json.RawMessage // tooluse

	Source json.RawMessage // image

	ToolUseID string          // toolresult
	Result    string          // toolresult content when it is a string
	ResultRaw json.RawMessage // toolresult content when it is not a string (provider block lists)
	IsError   *bool           // toolresult; null when unknown

	Extra []Field
	Raw   json.RawMessage // the whole block, for unknown types
}

// IsThinking is true for both thinking variants.
func (b Block) IsThinking() bool {
	return b.Type == BlockThinking || b.Type == BlockRedactedThinking
}

// ResultText is the text of a toolresult: the string, the text parts of a
// provider block list joined by newlines, or the raw JSON of any other value.
func (b Block) ResultText() string {
	if b.ResultRaw == nil {
		return b.Result
	}
	v := gjson.ParseBytes(b.ResultRaw)
	if !v.IsArray() { // ForEach would walk an object's members as parts
		return string(b.ResultRaw)
	}
	return joinTextParts(v)
}

// AsText mirrors whycodes' as_text: the text content, or the first text block.
func (m *Message) AsText() (string, bool) {
	if !m.Content.IsBlocks {
		return m.Content.Text, true
	}
	for _, b := range m.Content.Blocks {
		if b.Type == BlockText {
			return b.Text, true
		}
	}
	return "", false
}

// IsUserTurn reports whether the message is a turn the user took: agent
// notes, compaction summaries and rewind reports are user-role but not turns.
func (m *Message) IsUserTurn() bool {
	if m.Role != RoleUser || m.Kind != KindNone {
		return false
	}
	if !m.Content.IsBlocks {
		return !IsCompactSummaryText(m.Content.Text)
	}
	// A user message of tool results only (Anthropic's form) answers calls.
	for i := range m.Content.Blocks {
		if m.Content.Blocks[i].Type != BlockToolResult {
			return true
		}
	}
	return len(m.Content.Blocks) == 0
}

// InvalidError reports input that is not a valid message, session or
// document. Commands map it to exit status 65.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

func invalidf(format string, args ...any) error {
	return &InvalidError{Msg: fmt.Sprintf(format, args...)}
}

// DecodeMessage parses one message from JSON that the caller has checked is
// valid (gjson.ValidBytes). Anthropic and OpenAI spellings are normalised.
func DecodeMessage(raw []byte) (Message, error) {
	return decodeMessage(gjson.ParseBytes(raw))
}

func decodeMessage(v gjson.Result) (Message, error) {
	var m Message
	if !v.IsObject() {
		return m, invalidf("a message must be a JSON object, not %s", describe(v))
	}
	var content, wcContent, toolCalls gjson.Result
	seen := map[string]bool{}
	var err error
	v.ForEach(func(k, val gjson.Result) bool {
		key := k.Str
		if seen[key] {
			return true // first wins, as in gjson
		}
		seen[key] = true
		switch key {
		case "role":
			if val.Type != gjson.String {
				err = invalidf("role must be a string")
				return false
			}
			switch Role(val.Str) {
			case RoleSystem, RoleUser, RoleAssistant, RoleTool:
				m.Role = Role(val.Str)
			case "developer": // OpenAI's name for a system message
				m.Role = RoleSystem
			default:
				err = invalidf("unknown role %q (want user, assistant, system or tool)", val.Str)
				return false
			}
		case "content":
			content = val
		case "wc_content": // a share's stored content; content is whycodes' view of it
			wcContent = val
		case "tool_calls":
			toolCalls = val
		case "tool_call_id", "name", "created_at":
			if val.Type == gjson.Null {
				return true
			}
			if val.Type != gjson.String {
				err = invalidf("%s must be a string", key)
				return false
			}
			switch key {
			case "tool_call_id":
				m.ToolCallID = val.Str
			case "name":
				m.Name = val.Str
			default:
				if !ValidTime(val.Str) {
					err = invalidf("created_at %q is not an RFC 3339 time", val.Str)
					return false
				}
				m.CreatedAt = val.Str
			}
		case "is_error":
			if val.Type == gjson.Null {
				return true
			}
			if !val.IsBool() {
				err = invalidf("is_error must be true or false")
				return false
			}
			m.IsError = val.Bool()
		case "kind":
			// Only our own markers are interpreted; any other value is kept as data.
			if val.Type == gjson.String {
				switch Kind(val.Str) {
				case KindNote, KindSummary, KindRewind:
					m.Kind = Kind(val.Str)
					return true
				}
			}
			m.Extra = append(m.Extra, rawField(key, val))
		default:
			m.Extra = append(m.Extra, rawField(key, val))
		}
		return true
	})
	if err != nil {
		return Message{}, err
	}
	if m.Role == "" {
		return Message{}, invalidf("a message needs a role")
	}
	if wcContent.Exists() {
		content = wcContent
	}
	if m.Content, err = decodeContent(content); err != nil {
		return Message{}, err
	}
	if toolCalls.Exists() && toolCalls.Type != gjson.Null {
		if err := m.addOpenAIToolCalls(toolCalls); err != nil {
			return Message{}, err
		}
	}
	return m, nil
}

func rawField(key string, val gjson.Result) Field {
	return Field{Key: key, Value: compactRaw(val.Raw)}
}

func compactRaw(raw string) json.RawMessage { return CompactRaw(raw) }

// CompactRaw is how every raw JSON value wc keeps is stored: without
// insignificant whitespace, so that it fits on one NDJSON line, and with
// each lone surrogate escape (\ud800 alone) turned into \ufffd, as
// encoding/json decodes it: serde_json (whycodes) and jq refuse such
// strings. The text of strings is otherwise untouched.
func CompactRaw(raw string) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(raw)); err != nil {
		return replaceLoneSurrogates([]byte(raw))
	}
	return replaceLoneSurrogates(buf.Bytes())
}

// KeepRaw is CompactRaw of a value already compact (a stored one): a
// copy, with lone surrogates replaced.
func KeepRaw(compact []byte) json.RawMessage {
	return replaceLoneSurrogates(append(json.RawMessage(nil), compact...))
}

func describe(v gjson.Result) string {
	switch v.Type {
	case gjson.Null:
		return "null"
	case gjson.False, gjson.True:
		return "a boolean"
	case gjson.Number:
		return "a number"
	case gjson.String:
		return "a string"
	}
	if v.IsArray() {
		return "an array"
	}
	return "an object"
}

func decodeContent(v gjson.Result) (Content, error) {
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return Content{}, nil
	case v.Type == gjson.String:
		return Content{Text: v.Str}, nil
	case v.IsArray():
		c := Content{IsBlocks: true, Blocks: []Block{}}
		var err error
		i := 0
		v.ForEach(func(_, bv gjson.Result) bool {
			i++
			var b Block
			if b, err = decodeBlock(bv); err != nil {
				err = invalidf("block %d: %v", i, err)
				return false
			}
			c.Blocks = append(c.Blocks, b)
			return true
		})
		return c, err
	}
	return Content{}, invalidf("content must be a string or an array of blocks, not %s", describe(v))
}

func decodeBlock(v gjson.Result) (Block, error) {
	if v.Type == gjson.String { // OpenAI allows bare strings in part lists
		return Block{Type: BlockText, Text: v.Str}, nil
	}
	if !v.IsObject() {
		return Block{}, invalidf("a block must be an object, not %s", describe(v))
	}
	t := v.Get("type")
	if t.Type != gjson.String {
		return Block{}, invalidf("a block needs a string type")
	}
	b := Block{Type: normaliseBlockType(t.Str)}
	known := blockFields[b.Type]
	if known == nil {
		if b.Type == "image_url" {
			return openAIImage(v)
		}
		return Block{Type: t.Str, Raw: compactRaw(v.Raw)}, nil
	}
	var err error
	seen := map[string]bool{}
	v.ForEach(func(k, val gjson.Result) bool {
		key := k.Str
		if seen[key] {
			return true
		}
		seen[key] = true
		if key == "type" {
			return true
		}
		if key == "thinking" && b.Type == BlockThinking {
			key = "text" // Anthropic spells the thinking text "thinking"
		}
		if !known[key] {
			b.Extra = append(b.Extra, rawField(k.Str, val))
			return true
		}
		err = b.setField(key, val)
		return err == nil
	})
	return b, err
}

func normaliseBlockType(t string) string {
	switch t {
	case "tool_use":
		return BlockToolUse
	case "tool_result":
		return BlockToolResult
	}
	return t
}

var blockFields = map[string]map[string]bool{
	BlockText:             {"text": true},
	BlockImage:            {"source": true},
	BlockToolUse:          {"id": true, "name": true, "input": true},
	BlockToolResult:       {"tool_use_id": true, "content": true, "is_error": true},
	BlockThinking:         {"text": true, "signature": true},
	BlockRedactedThinking: {"data": true},
}

// BlockMembers is the set of members a block of type t has as fields of
// Block (the rest go to Extra); nil for a type kept whole in Raw.
func BlockMembers(t string) map[string]bool { return blockFields[t] }

func (b *Block) setField(key string, val gjson.Result) error {
	str := func(dst *string) error {
		if val.Type == gjson.Null {
			return nil
		}
		if val.Type != gjson.String {
			return invalidf("%s %s must be a string", b.Type, key)
		}
		*dst = val.Str
		return nil
	}
	switch key {
	case "text":
		return str(&b.Text)
	case "signature":
		if val.Type == gjson.Null {
			return nil
		}
		b.HasSignature = true
		return str(&b.Signature)
	case "data":
		return str(&b.Data)
	case "id":
		return str(&b.ID)
	case "name":
		return str(&b.Name)
	case "tool_use_id":
		return str(&b.ToolUseID)
	case "input":
		b.Input = compactRaw(val.Raw)
	case "source":
		b.Source = compactRaw(val.Raw)
	case "content":
		switch {
		case val.Type == gjson.String:
			b.Result = val.Str
		case val.Type == gjson.Null:
		default:
			b.ResultRaw = compactRaw(val.Raw)
		}
	case "is_error":
		if val.Type == gjson.Null {
			return nil
		}
		if !val.IsBool() {
			return invalidf("toolresult is_error must be true, false or null")
		}
		e := val.Bool()
		b.IsError = &e
	}
	return nil
}

// openAIImage turns {"type":"image_url","image_url":{"url":…}} into an image
// block with a url or base64 source.
func openAIImage(v gjson.Result) (Block, error) {
	url := v.Get("image_url.url")
	if url.Type != gjson.String {
		url = v.Get("image_url")
	}
	if url.Type != gjson.String {
		return Block{}, invalidf("image_url needs a url")
	}
	var src []byte
	if media, data, ok := parseDataURL(url.Str); ok {
		src = appendString(append(src, `{"type":"base64","media_type":`...), media)
		src = appendString(append(src, `,"data":`...), data)
	} else {
		src = appendString(append(src, `{"type":"url","url":`...), url.Str)
	}
	return Block{Type: BlockImage, Source: append(src, '}')}, nil
}

func parseDataURL(u string) (media, data string, ok bool) {
	const prefix = "data:"
	if len(u) < len(prefix) || u[:len(prefix)] != prefix {
		return "", "", false
	}
	rest := u[len(prefix):]
	comma := bytes.IndexByte([]byte(rest), ',')
	if comma < 0 {
		return "", "", false
	}
	head := rest[:comma]
	const b64 = ";base64"
	if len(head) < len(b64) || head[len(head)-len(b64):] != b64 {
		return "", "", false
	}
	return head[:len(head)-len(b64)], rest[comma+1:], true
}

// addOpenAIToolCalls turns an OpenAI assistant message's tool_calls into
// tooluse blocks after its text.
func (m *Message) addOpenAIToolCalls(calls gjson.Result) error {
	if !calls.IsArray() {
		return invalidf("tool_calls must be an array")
	}
	var blocks []Block
	if m.Content.IsBlocks {
		blocks = m.Content.Blocks
	} else if m.Content.Text != "" {
		blocks = []Block{{Type: BlockText, Text: m.Content.Text}}
	}
	var err error
	calls.ForEach(func(_, c gjson.Result) bool {
		name := c.Get("function.name")
		if name.Type != gjson.String {
			err = invalidf("tool_calls entries need function.name")
			return false
		}
		b := Block{Type: BlockToolUse, ID: c.Get("id").String(), Name: name.Str, Input: json.RawMessage("{}")}
		args := c.Get("function.arguments")
		switch {
		case args.Type == gjson.String && strings.TrimSpace(args.Str) == "":
			// no arguments: keep {}
		case args.Type == gjson.String && gjson.Valid(args.Str):
			b.Input = compactRaw(args.Str)
		case args.Type == gjson.String:
			b.Input = appendString(nil, args.Str) // not JSON: keep the text
		case args.IsObject():
			b.Input = compactRaw(args.Raw)
		}
		blocks = append(blocks, b)
		return true
	})
	if err != nil {
		return err
	}
	m.Content = Content{Blocks: blocks, IsBlocks: true}
	if blocks == nil {
		m.Content.Blocks = []Block{}
	}
	return nil
}

func joinTextParts(v gjson.Result) string {
	var out []byte
	v.ForEach(func(_, p gjson.Result) bool {
		var t gjson.Result
		if p.Type == gjson.String {
			t = p
		} else if p.Get("type").Str == BlockText {
			t = p.Get("text")
		}
		if t.Type == gjson.String {
			if out != nil {
				out = append(out, '\n')
			}
			out = append(out, t.Str...)
		}
		return true
	})
	return string(out)
}

// AppendJSON appends the whycodes JSON of m.
func (m *Message) AppendJSON(dst []byte) []byte {
	return m.appendJSON(slices.Grow(dst, messageSizeHint(m)), false)
}

// appendJSON writes, for a share, the content whycodes loads under
// "content" and, when that leaves anything out, the stored content under
// "wc_content" (see whycodesView).
func (m *Message) appendJSON(dst []byte, share bool) []byte {
	dst = append(dst, `{"role":`...)
	dst = appendString(dst, string(m.Role))
	dst = append(dst, `,"content":`...)
	if share {
		if view, changed := m.Content.whycodesView(); changed {
			dst = view.AppendJSON(dst)
			dst = append(dst, `,"wc_content":`...)
		}
	}
	dst = m.Content.AppendJSON(dst)
	if m.ToolCallID != "" {
		dst = appendString(append(dst, `,"tool_call_id":`...), m.ToolCallID)
	}
	if m.Name != "" {
		dst = appendString(append(dst, `,"name":`...), m.Name)
	}
	if m.CreatedAt != "" {
		dst = appendString(append(dst, `,"created_at":`...), m.CreatedAt)
	}
	if m.IsError {
		dst = append(dst, `,"is_error":true`...)
	}
	if m.Kind != KindNone {
		dst = appendString(append(dst, `,"kind":`...), string(m.Kind))
	}
	dst = appendExtra(dst, m.Extra)
	return append(dst, '}')
}

// MarshalJSON implements json.Marshaler.
func (m Message) MarshalJSON() ([]byte, error) { return m.AppendJSON(nil), nil }

// UnmarshalJSON implements json.Unmarshaler.
func (m *Message) UnmarshalJSON(b []byte) error {
	if !gjson.ValidBytes(b) {
		return invalidf("invalid JSON")
	}
	msg, err := DecodeMessage(b)
	if err != nil {
		return err
	}
	*m = msg
	return nil
}

func appendExtra(dst []byte, extra []Field) []byte {
	for _, f := range extra {
		dst = appendKey(dst, false, f.Key)
		dst = append(dst, f.Value...)
	}
	return dst
}

// AppendJSON appends the content as a string or a block array.
func (c *Content) AppendJSON(dst []byte) []byte {
	if !c.IsBlocks {
		return appendString(dst, c.Text)
	}
	dst = append(dst, '[')
	for i := range c.Blocks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = c.Blocks[i].AppendJSON(dst)
	}
	return append(dst, ']')
}

// AppendJSON appends the block in whycodes' wire form.
func (b *Block) AppendJSON(dst []byte) []byte {
	if b.Raw != nil {
		return append(dst, b.Raw...)
	}
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, b.Type)
	switch b.Type {
	case BlockText:
		dst = appendString(append(dst, `,"text":`...), b.Text)
	case BlockImage:
		dst = append(dst, `,"source":`...)
		dst = appendRawOr(dst, b.Source, "{}")
	case BlockToolUse:
		dst = appendString(append(dst, `,"id":`...), b.ID)
		dst = appendString(append(dst, `,"name":`...), b.Name)
		dst = append(dst, `,"input":`...)
		dst = appendRawOr(dst, b.Input, "{}")
	case BlockToolResult:
		dst = appendString(append(dst, `,"tool_use_id":`...), b.ToolUseID)
		dst = append(dst, `,"content":`...)
		if b.ResultRaw != nil {
			dst = append(dst, b.ResultRaw...)
		} else {
			dst = appendString(dst, b.Result)
		}
		dst = append(dst, `,"is_error":`...)
		if b.IsError == nil {
			dst = append(dst, "null"...)
		} else {
			dst = appendBool(dst, *b.IsError)
		}
	case BlockThinking:
		dst = appendString(append(dst, `,"text":`...), b.Text)
		if b.HasSignature {
			dst = appendString(append(dst, `,"signature":`...), b.Signature)
		}
	case BlockRedactedThinking:
		dst = appendString(append(dst, `,"data":`...), b.Data)
	}
	dst = appendExtra(dst, b.Extra)
	return append(dst, '}')
}

func appendRawOr(dst, raw []byte, def string) []byte {
	if raw == nil {
		return append(dst, def...)
	}
	return append(dst, raw...)
}

// MaxJSONDepth bounds the nesting of any JSON wc reads, the same for every
// command and format: far beyond real transcripts and schemas, and low
// enough that every consumer (whycodes, jq) can read back what wc writes.
const MaxJSONDepth = 512

// CheckNesting refuses JSON nested deeper than MaxJSONDepth.
func CheckNesting(data []byte) error {
	var sc JSONScanner
	for _, c := range data {
		if _, err := sc.Step(c); err != nil {
			return err
		}
	}
	return nil
}

// JSONScanner follows the strings and brackets of JSON a byte at a time:
// enough to find where a value ends, and how deep it is nested, without
// decoding it.
type JSONScanner struct {
	depth             int
	inString, escaped bool
}

// Step takes the next byte; done reports the end of a value that opened
// with a bracket or a quote, and err a value nested past MaxJSONDepth.
// Brackets that do not match are a decoder's to report.
func (s *JSONScanner) Step(c byte) (done bool, err error) {
	switch {
	case s.inString:
		switch {
		case s.escaped:
			s.escaped = false
		case c == '\\':
			s.escaped = true
		case c == '"':
			s.inString = false
			return s.depth == 0, nil
		}
	case c == '"':
		s.inString = true
	case c == '[' || c == '{':
		if s.depth++; s.depth > MaxJSONDepth {
			return false, invalidf("JSON nested deeper than %d levels", MaxJSONDepth)
		}
	case c == ']' || c == '}':
		s.depth--
		return s.depth == 0, nil
	}
	return false, nil
}

// SameJSON reports whether m and o encode to the same JSON. Messages whose
// fields are all equal do without encoding: a compaction compares every
// kept message with the one it came from.
func (m *Message) SameJSON(o *Message) bool {
	if m.sameFields(o) {
		return true
	}
	return bytes.Equal(m.AppendJSON(nil), o.AppendJSON(nil))
}

// sameFields compares every field AppendJSON reads; TestSameFieldsCoversMessage
// fails when a field is added to Message or Block without being compared.
func (m *Message) sameFields(o *Message) bool {
	if m.Role != o.Role || m.ToolCallID != o.ToolCallID || m.Name != o.Name || m.CreatedAt != o.CreatedAt ||
		m.IsError != o.IsError || m.Kind != o.Kind || !sameExtra(m.Extra, o.Extra) ||
		m.Content.IsBlocks != o.Content.IsBlocks || m.Content.Text != o.Content.Text ||
		len(m.Content.Blocks) != len(o.Content.Blocks) {
		return false
	}
	for i := range m.Content.Blocks {
		if !m.Content.Blocks[i].sameFields(&o.Content.Blocks[i]) {
			return false
		}
	}
	return true
}

func (b *Block) sameFields(o *Block) bool {
	return b.Type == o.Type && b.Text == o.Text && b.Signature == o.Signature && b.HasSignature == o.HasSignature &&
		b.Data == o.Data && b.ID == o.ID && b.Name == o.Name && sameRaw(b.Input, o.Input) &&
		sameRaw(b.Source, o.Source) && b.ToolUseID == o.ToolUseID && b.Result == o.Result &&
		sameRaw(b.ResultRaw, o.ResultRaw) && (b.IsError == nil) == (o.IsError == nil) &&
		(b.IsError == nil || *b.IsError == *o.IsError) && sameExtra(b.Extra, o.Extra) && sameRaw(b.Raw, o.Raw)
}

// sameRaw tells nil from empty: AppendJSON writes a default for nil.
func sameRaw(a, b json.RawMessage) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func sameExtra(a, b []Field) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !sameRaw(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}
