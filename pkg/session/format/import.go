package format

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// Kind names a transcript format that Import reads.
type Kind string

const (
	KindAuto      Kind = ""          // detect the format from the data
	KindNative    Kind = "native"    // whycodes / wc share JSON, or a stream of messages
	KindClaude    Kind = "claude"    // Claude Code JSONL transcript
	KindCodex     Kind = "codex"     // Codex CLI rollout JSONL
	KindOpencode  Kind = "opencode"  // `opencode export` JSON
	KindOpenAI    Kind = "openai"    // Chat Completions messages array or request body
	KindAnthropic Kind = "anthropic" // Messages API request body or messages array
	KindGemini    Kind = "gemini"    // Gemini CLI chat recording (JSON or JSONL) or stream-json output
	KindCursor    Kind = "cursor"    // cursor-agent --output-format stream-json
)

// Kinds lists every format Import reads, for help texts.
var Kinds = []Kind{KindNative, KindClaude, KindCodex, KindOpencode, KindGemini, KindCursor, KindGoose, KindLLM, KindOpenAI, KindAnthropic}

// ParseKind reads a format name, ignoring case and surrounding space. "auto"
// (and "") is KindAuto; "claude-code" and "whycodes" are aliases.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return KindAuto, nil
	case "native", "whycodes", "wc":
		return KindNative, nil
	case "claude", "claude-code":
		return KindClaude, nil
	case "codex":
		return KindCodex, nil
	case "opencode":
		return KindOpencode, nil
	case "openai":
		return KindOpenAI, nil
	case "anthropic":
		return KindAnthropic, nil
	case "gemini", "gemini-cli":
		return KindGemini, nil
	case "cursor", "cursor-agent":
		return KindCursor, nil
	case "goose":
		return KindGoose, nil
	case "llm":
		return KindLLM, nil
	}
	return "", badInputf("unknown import format %q", s)
}

// Options tune Import.
type Options struct {
	// Sidechains imports Claude Code sidechains (subagent runs written into
	// the main transcript) as sessions of their own. Without it they are
	// counted in Skipped as "sidechain". A file that holds nothing but
	// sidechain records (a subagent's own file) is always imported.
	Sidechains bool
}

// Imported is one session read from a foreign file.
type Imported struct {
	// Share holds the session: Messages is the active path, Branches every
	// other path as a full copy from its root (unnamed). In Meta, Title is
	// set only when the source names the session (a hint, with its
	// TitleSource); ProjectPath is the source's working directory;
	// CreatedAt and UpdatedAt are the earliest and latest source times;
	// Usage is the provider usage, each response counted once.
	Share session.Share
	// Skipped counts what was read but not mapped, by record or item type
	// (see the package documentation of Import for the names).
	Skipped map[string]int
	// SourceID is the source's own session id, if it has one.
	SourceID string
	// Parent is, for a Claude Code sidechain, the SourceID of the session
	// that ran the subagent.
	Parent string
	// Format is the format it was read in (cursor for cursor-agent's
	// stream, which reads as claude).
	Format Kind
}

// Import reads data in the given format (KindAuto: detected) and returns
// one Imported per session it holds: a Claude Code file can hold several
// session ids, and with opt.Sidechains its sidechains come after the main
// sessions. Errors are *session.InvalidError.
//
// Every importer keeps the structure of the source: tool calls stay
// tooluse blocks in the assistant message and every result becomes a
// tool-role message right after it, in call order, with tool_call_id, the
// tool's name and is_error (the form both provider exports pair without
// repair). Thinking blocks keep their signatures, images stay image blocks,
// source timestamps are kept in created_at, and source data that wc does
// not model is kept on the message under a member named after the format
// ("claude", "codex", "opencode"). The share's "imported_from" member names
// the format, the source id and the source's session-level data.
//
// Skipped names are a record type ("progress", "file-history-snapshot",
// "sidechain"), a type and a subtype or reason ("system:turn_duration",
// "user:malformed", "event_msg:agent_message", "response_item:ghost_snapshot",
// "part:<type>", "message:aborted"), or a parenthesised description:
// "(not json)", "(not a record)", "(invalid block)", "(duplicate record)".
func Import(kind Kind, data []byte, opt Options) ([]Imported, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	if err := session.CheckNesting(data); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, badInputf("empty input")
	}
	if kind == KindAuto {
		var err error
		if kind, err = Detect(data); err != nil {
			return nil, err
		}
	}
	if kind != KindNative && kind != KindOpencode && kind != KindOpenAI && kind != KindAnthropic && kind != KindGemini {
		data = oneLine(data)
	}
	var out []Imported
	var err error
	switch kind {
	case KindNative:
		out, err = importNative(data)
	case KindClaude:
		if isStreamJSON(data) {
			out, err = importStreamJSON(data, KindClaude)
		} else {
			out, err = importClaude(data, opt)
		}
	case KindCursor:
		out, err = importStreamJSON(data, KindCursor)
	case KindGemini:
		out, err = importGemini(data)
	case KindGoose, KindLLM:
		return nil, badInputf("a %s database is an SQLite file: give its path", string(kind))
	case KindCodex:
		if isCodexExec(data) {
			out, err = importCodexExec(data)
		} else {
			out, err = importCodex(data)
		}
	case KindOpencode:
		out, err = importOpencode(data)
	case KindOpenAI:
		out, err = importOpenAI(data)
	case KindAnthropic:
		out, err = importAnthropic(data)
	default:
		return nil, badInputf("unknown import format %q", string(kind))
	}
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errNoMessages
	}
	finishImports(out, kind)
	return out, nil
}

// finishImports completes what the importers return: the skipped counts,
// the format each was read in, and no member wc reads kept twice.
func finishImports(out []Imported, kind Kind) {
	for i := range out {
		if out[i].Skipped == nil {
			out[i].Skipped = map[string]int{}
		}
		if out[i].Format == "" {
			out[i].Format = kind
			if f := importedFormat(&out[i].Share); f != "" && kind != KindNative {
				out[i].Format = f
			}
		}
		sanitize(&out[i].Share)
	}
}

// oneLine compacts a JSONL format's input that is a single pretty-printed
// record, so that it reads as the one line it stands for.
func oneLine(data []byte) []byte {
	t := bytes.TrimSpace(data)
	if len(t) == 0 || t[0] != '{' || !bytes.Contains(t, []byte{'\n'}) || !gjson.ValidBytes(t) {
		return data
	}
	return compactJSON(string(t))
}

// Members that wc reads on a message or block: a kept source member of the
// same name would be read back as that field, so it is dropped.
var (
	messageKeys = map[string]bool{
		"role": true, "content": true, "tool_call_id": true, "name": true, "created_at": true,
		"is_error": true, "kind": true, "tool_calls": true,
	}
	blockKeys = map[string]map[string]bool{
		session.BlockText:             {"text": true},
		session.BlockImage:            {"source": true},
		session.BlockToolUse:          {"id": true, "name": true, "input": true},
		session.BlockToolResult:       {"tool_use_id": true, "content": true, "is_error": true},
		session.BlockThinking:         {"text": true, "thinking": true, "signature": true},
		session.BlockRedactedThinking: {"data": true},
	}
)

func sanitize(sh *session.Share) {
	clean := func(msgs []session.Message) {
		for i := range msgs {
			m := &msgs[i]
			m.Extra = dropKeys(m.Extra, messageKeys)
			for j := range m.Content.Blocks {
				b := &m.Content.Blocks[j]
				if b.Raw == nil {
					b.Extra = dropKeys(b.Extra, blockKeys[b.Type])
				}
			}
		}
	}
	clean(sh.Messages)
	for i := range sh.Branches {
		clean(sh.Branches[i].Messages)
	}
}

func dropKeys(fields []session.Field, keys map[string]bool) []session.Field {
	if len(fields) == 0 {
		return fields
	}
	var out []session.Field // never in place: paths share their blocks
	seen := map[string]bool{}
	for _, f := range fields {
		if keys[f.Key] || f.Key == "type" || seen[f.Key] {
			continue
		}
		seen[f.Key] = true
		out = append(out, f)
	}
	return out
}

var errNoMessages = badInputf("no user or assistant messages")

var utf8BOM = []byte("\xef\xbb\xbf")

// errUsageRange is the text of token usage whose sum would wrap around.
const errUsageRange = "the token usage adds up past what wc can count"

func badInputf(format string, args ...any) error {
	return &session.InvalidError{Msg: fmt.Sprintf(format, args...)}
}

// hasTurns reports whether a share holds a user or assistant message.
func hasTurns(sh *session.Share) bool {
	check := func(msgs []session.Message) bool {
		for i := range msgs {
			if msgs[i].Role == session.RoleUser || msgs[i].Role == session.RoleAssistant {
				return true
			}
		}
		return false
	}
	if check(sh.Messages) {
		return true
	}
	for i := range sh.Branches {
		if check(sh.Branches[i].Messages) {
			return true
		}
	}
	return false
}

// ---- times

// timeSpan tracks the earliest and latest valid RFC 3339 times, keeping
// their source spelling.
type timeSpan struct {
	first, last  string
	ftime, ltime time.Time
	seen         bool
}

// add records ts and returns it when it is a valid RFC 3339 time, "" when
// it is not.
func (s *timeSpan) add(ts string) string {
	t, ok := parseTime(ts)
	if !ok {
		return ""
	}
	if !s.seen || t.Before(s.ftime) {
		s.first, s.ftime = ts, t
	}
	if !s.seen || t.After(s.ltime) {
		s.last, s.ltime = ts, t
	}
	s.seen = true
	return ts
}

func parseTime(ts string) (time.Time, bool) {
	if ts == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil || !session.ValidTime(ts) {
		return time.Time{}, false
	}
	return t, true
}

// millisTime formats milliseconds since the epoch as RFC 3339 UTC with
// milliseconds, the precision of the sources that use it.
func millisTime(v gjson.Result) string {
	if v.Type != gjson.Number {
		return ""
	}
	ms := v.Int()
	if ms <= 0 || ms > 253402300799999 { // year 9999
		return ""
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// ---- skipped counts

type skipCounter map[string]int

func (c skipCounter) add(key string) { c[key]++ }

func (c skipCounter) merge(other skipCounter) {
	for k, v := range other {
		c[k] += v
	}
}

// ---- JSON building

// jsonObject builds a JSON object member by member; values are compacted.
type jsonObject struct{ b []byte }

func (o *jsonObject) key(k string) {
	if len(o.b) == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.b = appendStr(o.b, k)
	o.b = append(o.b, ':')
}

// raw adds a member whose value is raw JSON (from a validated document).
func (o *jsonObject) raw(k, raw string) {
	if raw == "" {
		return
	}
	o.key(k)
	o.b = append(o.b, compactJSON(raw)...)
}

func (o *jsonObject) strVal(k, v string) {
	o.key(k)
	o.b = appendStr(o.b, v)
}

func (o *jsonObject) empty() bool { return len(o.b) == 0 }

func (o *jsonObject) done() json.RawMessage {
	if len(o.b) == 0 {
		return json.RawMessage("{}")
	}
	return append(o.b, '}')
}

// field returns the object as a message or block member, or false when it
// has no members.
func (o *jsonObject) field(name string) (session.Field, bool) {
	if o.empty() {
		return session.Field{}, false
	}
	return session.Field{Key: name, Value: o.done()}, true
}

func compactJSON(raw string) json.RawMessage { return session.CompactRaw(raw) }

// appendStr appends s as a JSON string without HTML escaping, the way the
// session package writes strings.
func appendStr(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, r := range s { // invalid UTF-8 reads as U+FFFD
		switch {
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r == '\r':
			dst = append(dst, '\\', 'r')
		case r == '\t':
			dst = append(dst, '\\', 't')
		case r < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
		default:
			dst = append(dst, string(r)...)
		}
	}
	return append(dst, '"')
}

func jsonString(s string) json.RawMessage { return appendStr(nil, s) }

// fieldsOf returns the members of a JSON object except the listed keys, as
// message or block fields.
func fieldsOf(v gjson.Result, except ...string) []session.Field {
	var out []session.Field
	if !v.IsObject() {
		return nil
	}
	seen := map[string]bool{}
	v.ForEach(func(k, val gjson.Result) bool {
		if seen[k.Str] {
			return true
		}
		seen[k.Str] = true
		for _, e := range except {
			if k.Str == e {
				return true
			}
		}
		out = append(out, session.Field{Key: k.Str, Value: compactJSON(val.Raw)})
		return true
	})
	return out
}

// objectOf builds an object from the members of v except the listed keys.
func objectOf(v gjson.Result, except ...string) jsonObject {
	var o jsonObject
	for _, f := range fieldsOf(v, except...) {
		o.raw(f.Key, string(f.Value))
	}
	return o
}

// eachRecord calls fn with every line of a JSONL input that is an object
// with a string type, and counts the others.
func eachRecord(data []byte, skipped skipCounter, fn func(v gjson.Result)) {
	forEachLine(data, func(line []byte) {
		if !gjson.ValidBytes(line) {
			skipped.add("(not json)")
			return
		}
		v := gjson.ParseBytes(line)
		if !v.IsObject() || v.Get("type").Type != gjson.String {
			skipped.add("(not a record)")
			return
		}
		fn(v)
	})
}

// firstRecord is the first line of a JSONL input that is a JSON object.
func firstRecord(data []byte) (gjson.Result, bool) {
	var first gjson.Result
	found := false
	forEachLine(data, func(line []byte) {
		if found || !gjson.ValidBytes(line) {
			return
		}
		if v := gjson.ParseBytes(line); v.IsObject() {
			first, found = v, true
		}
	})
	return first, found
}

// objectJSON is the JSON of v's members except the listed keys.
func objectJSON(v gjson.Result, except ...string) string {
	o := objectOf(v, except...)
	return string(o.done())
}

// each calls fn with the elements of an array, and never for anything
// else (gjson's ForEach calls back once for a scalar or null).
func eachElem(v gjson.Result, fn func(el gjson.Result) bool) {
	if !v.IsArray() {
		return
	}
	v.ForEach(func(_, el gjson.Result) bool { return fn(el) })
}

// ---- content

// decodeBlocks decodes a provider content array into blocks. Elements that
// are not valid blocks are counted as "(invalid block)" and left out.
func decodeBlocks(list gjson.Result, skipped skipCounter) []session.Block {
	out := []session.Block{}
	if !list.IsArray() {
		return out
	}
	// One decode for the common case; element by element when it fails.
	raw := `{"role":"user","content":` + list.Raw + `}`
	if m, err := session.DecodeMessage([]byte(raw)); err == nil && m.Content.IsBlocks {
		return append(out, m.Content.Blocks...)
	}
	list.ForEach(func(_, el gjson.Result) bool {
		raw := `{"role":"user","content":[` + el.Raw + `]}`
		m, err := session.DecodeMessage([]byte(raw))
		if err != nil || len(m.Content.Blocks) != 1 {
			skipped.add("(invalid block)")
			return true
		}
		out = append(out, m.Content.Blocks[0])
		return true
	})
	return out
}

// decodeContent reads a string or a block array.
func decodeContent(v gjson.Result, skipped skipCounter) (session.Content, bool) {
	switch {
	case v.Type == gjson.String:
		return session.TextContent(v.Str), true
	case v.IsArray():
		return session.BlockContent(decodeBlocks(v, skipped)...), true
	}
	return session.Content{}, false
}

// resultContent is the content of the tool message made from a toolresult
// block: its text when the result is a string or all text, otherwise its
// blocks (images stay images).
func resultContent(b *session.Block, skipped skipCounter) session.Content {
	if b.ResultRaw == nil {
		return session.TextContent(b.Result)
	}
	v := gjson.ParseBytes(b.ResultRaw)
	if !v.IsArray() {
		return session.TextContent(string(b.ResultRaw))
	}
	allText := true
	v.ForEach(func(_, p gjson.Result) bool {
		if p.Type != gjson.String && !(p.Get("type").Str == "text" && p.Get("text").Type == gjson.String) {
			allText = false
		}
		return allText
	})
	if allText {
		return session.TextContent(b.ResultText())
	}
	return session.BlockContent(decodeBlocks(v, skipped)...)
}

// toolMessage turns a toolresult block into a tool message. The block's own
// unknown members stay on the message.
func toolMessage(b *session.Block, name, createdAt string, skipped skipCounter) session.Message {
	m := session.Message{
		Role:       session.RoleTool,
		ToolCallID: b.ToolUseID,
		Name:       name,
		CreatedAt:  createdAt,
		IsError:    b.IsError != nil && *b.IsError,
		Content:    resultContent(b, skipped),
	}
	m.Extra = append(m.Extra, b.Extra...)
	return m
}

// toolNames maps tool call ids to tool names.
type toolNames map[string]string

func (t toolNames) record(m *session.Message) {
	for i := range m.Content.Blocks {
		b := &m.Content.Blocks[i]
		if b.Type == session.BlockToolUse && b.ID != "" {
			t[b.ID] = b.Name
		}
	}
}

// contentText is the text of content: the string, or its text blocks joined.
func contentText(c *session.Content) string {
	if !c.IsBlocks {
		return c.Text
	}
	var parts []string
	for i := range c.Blocks {
		if c.Blocks[i].Type == session.BlockText {
			parts = append(parts, c.Blocks[i].Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ---- usage

func optU(v gjson.Result) *uint64 {
	if v.Type != gjson.Number || v.Num < 0 {
		return nil
	}
	n := v.Uint()
	return &n
}

func u64(n uint64) *uint64 { return &n }

// ---- assembly

// linearPath is a message list with stored branches, for the formats whose
// messages are ordered by position only.
type linearPath struct {
	msgs     []session.Message
	branches [][]session.Message
}

func (l *linearPath) add(m session.Message) { l.msgs = append(l.msgs, m) }

// stash stores the current path as a branch (when it is not empty).
func (l *linearPath) stash() {
	if len(l.msgs) > 0 {
		l.branches = append(l.branches, append([]session.Message(nil), l.msgs...))
	}
}

// finish is the share of a linear import, or the error of one whose usage
// overflowed or that holds no turn.
func (l *linearPath) finish(usageRange bool) (session.Share, error) {
	var sh session.Share
	if usageRange {
		return sh, badInputf("%s", errUsageRange)
	}
	l.share(&sh)
	if !hasTurns(&sh) {
		return sh, errNoMessages
	}
	return sh, nil
}

// share fills sh's messages and branches. A branch that is a prefix of the
// active path or of a later branch adds nothing and is dropped.
func (l *linearPath) share(sh *session.Share) {
	sh.Messages = l.msgs
	for i, b := range l.branches {
		covered := isPrefix(b, l.msgs)
		for _, later := range l.branches[i+1:] {
			covered = covered || isPrefix(b, later)
		}
		if !covered {
			sh.Branches = append(sh.Branches, session.SharedBranch{Messages: b})
		}
	}
}

func isPrefix(p, of []session.Message) bool {
	if len(p) > len(of) {
		return false
	}
	for i := range p {
		if !bytes.Equal(p[i].AppendJSON(nil), of[i].AppendJSON(nil)) {
			return false
		}
	}
	return true
}

// importedFormat is the format an importer recorded in imported_from.
func importedFormat(sh *session.Share) Kind {
	for _, f := range sh.Meta.Extra {
		if f.Key == "imported_from" {
			return Kind(gjson.GetBytes(f.Value, "format").Str)
		}
	}
	return ""
}

// setImportedFromID names id as the source's own id in the share's
// imported_from member.
func setImportedFromID(sh *session.Share, id string) {
	for i := range sh.Meta.Extra {
		if f := &sh.Meta.Extra[i]; f.Key == "imported_from" {
			if v, err := sjson.SetBytes(f.Value, "id", id); err == nil {
				f.Value = v
			}
		}
	}
}

// importedFrom is the share member that records where a session came from.
func importedFrom(kind Kind, id string, extra jsonObject) session.Field {
	var o jsonObject
	o.strVal("format", string(kind))
	if id != "" {
		o.strVal("id", id)
	}
	if !extra.empty() {
		o.key("source")
		o.b = append(o.b, extra.done()...)
	}
	return session.Field{Key: "imported_from", Value: o.done()}
}
