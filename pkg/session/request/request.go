package request

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// MissingResult answers, in a request copy, a tool call the transcript
// never answered: providers refuse a call without a result.
const MissingResult = "error: no result was recorded for this tool call"

// LeadingUser opens an Anthropic body whose path begins with the
// assistant: the first message must be the user's.
const LeadingUser = "[earlier turns of this conversation are not included]"

// Options shape a request body.
type Options struct {
	Model       string
	MaxTokens   uint64
	Temperature *float64
	Tools       json.RawMessage // an array of {name, description, parameters|input_schema}
	Trailing    Trailing
}

// Trailing says what a body does with an assistant message at its end.
type Trailing int

const (
	// TrailingDefault refuses it for Anthropic, which takes it as a
	// prefill, and sends it to OpenAI, which answers after it.
	TrailingDefault Trailing = iota
	TrailingKeep             // sent: a prefill for Anthropic (--prefill)
	TrailingDrop             // left out (--no-prefill)
)

// PrefillError is the refusal of a body that would end with an assistant
// message.
type PrefillError struct{}

func (*PrefillError) Error() string {
	return "the session ends with an assistant message, which the Messages API takes as a prefill"
}

// NothingToSendError is the refusal of a body with no message.
type NothingToSendError struct{}

func (*NothingToSendError) Error() string { return "the session has no message to send" }

// DefaultMaxTokens is what an Anthropic request asks for when no limit is
// given: the field is required there.
const DefaultMaxTokens = 8192

// ---- the copy, in neither provider's spelling yet

type reqKind int

const (
	reqText reqKind = iota
	reqImage
	reqDocument
	reqThinking  // signed: Anthropic only
	reqRedacted  // Anthropic only
	reqServer    // an Anthropic server-tool block, verbatim: Anthropic only
	reqCallBlock // the place of calls[call] among the blocks
)

type reqBlock struct {
	kind   reqKind
	text   string // text, thinking; redacted_thinking's data
	sig    string
	source gjson.Result    // image, document
	title  string          // document
	raw    json.RawMessage // server-tool block
	call   int
}

type reqCall struct {
	id, name string
	input    json.RawMessage // always an object
	wire     string          // the id in the body
}

type reqResult struct {
	id      string
	isError bool
	blocks  []reqBlock // text, images, documents
}

// reqTurn is one message of the copy. A user turn's results come first.
type reqTurn struct {
	role    session.Role // user, assistant or system
	plain   bool         // the content was one string
	blocks  []reqBlock
	calls   []reqCall
	results []reqResult
}

func (t *reqTurn) empty() bool { return len(t.blocks) == 0 && len(t.results) == 0 }

// collect turns the path into turns, pairing not yet repaired.
func collect(msgs []session.Message) []reqTurn {
	var out []reqTurn
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case session.RoleTool:
			out = append(out, reqTurn{role: session.RoleUser, results: []reqResult{{id: m.ToolCallID, isError: m.IsError, blocks: contentBlocks(&m.Content)}}})
			continue
		case session.RoleSystem:
			if t := systemText(m); t != "" {
				out = append(out, reqTurn{role: session.RoleSystem, plain: true, blocks: []reqBlock{{kind: reqText, text: t}}})
			}
			continue
		}
		t := reqTurn{role: m.Role, plain: !m.Content.IsBlocks}
		if !m.Content.IsBlocks {
			t.blocks = textBlocks(m.Content.Text)
		}
		var results []reqResult
		for j := range m.Content.Blocks {
			b := &m.Content.Blocks[j]
			switch {
			case b.Type == session.BlockToolResult:
				e := b.IsError != nil && *b.IsError
				results = append(results, reqResult{id: b.ToolUseID, isError: e, blocks: resultBlocks(b)})
			case b.Type == session.BlockToolUse && m.Role == session.RoleAssistant:
				t.blocks = append(t.blocks, reqBlock{kind: reqCallBlock, call: len(t.calls)})
				t.calls = append(t.calls, reqCall{id: b.ID, name: b.Name, input: objectInput(b.Input)})
			default:
				t.blocks = append(t.blocks, blockOf(b)...)
			}
		}
		if m.Role == session.RoleAssistant {
			out = append(out, t)
			if results != nil { // results stored in the call's message answer after it
				out = append(out, reqTurn{role: session.RoleUser, results: results})
			}
			continue
		}
		t.results = results
		out = append(out, t)
	}
	return out
}

func textBlocks(s string) []reqBlock {
	if strings.TrimSpace(s) == "" { // the Messages API refuses such text
		return nil
	}
	return []reqBlock{{kind: reqText, text: s}}
}

func systemText(m *session.Message) string {
	if !m.Content.IsBlocks {
		return strings.TrimSpace(m.Content.Text)
	}
	var parts []string
	for i := range m.Content.Blocks {
		for _, b := range blockOf(&m.Content.Blocks[i]) {
			if b.kind == reqText {
				parts = append(parts, b.text)
			}
		}
	}
	return strings.TrimSpace(strings.Join(parts, "\n"))
}

// anthropicServerBlocks are the blocks of Anthropic's server tools that a
// request may carry back.
var anthropicServerBlocks = map[string]bool{
	"server_tool_use": true, "web_search_tool_result": true, "web_fetch_tool_result": true,
	"code_execution_tool_result": true, "bash_code_execution_tool_result": true,
	"text_editor_code_execution_tool_result": true, "tool_search_tool_result": true,
}

// blockOf maps one stored block to the copy's blocks.
func blockOf(b *session.Block) []reqBlock {
	switch b.Type {
	case session.BlockText:
		return textBlocks(b.Text)
	case session.BlockImage:
		return []reqBlock{{kind: reqImage, source: gjson.ParseBytes(b.Source)}}
	case session.BlockThinking:
		if b.HasSignature && b.Signature != "" {
			return []reqBlock{{kind: reqThinking, text: b.Text, sig: b.Signature}}
		}
		return nil // another provider's reasoning, or unsigned: no API replays it
	case session.BlockRedactedThinking:
		if b.Data != "" {
			return []reqBlock{{kind: reqRedacted, text: b.Data}}
		}
		return nil
	case session.BlockToolResult:
		return resultBlocks(b)
	}
	if b.Raw == nil {
		return nil // a call outside an assistant message
	}
	v := gjson.ParseBytes(b.Raw)
	switch {
	case b.Type == "document":
		return []reqBlock{{kind: reqDocument, source: v.Get("source"), title: v.Get("title").String()}}
	case anthropicServerBlocks[b.Type]:
		return []reqBlock{{kind: reqServer, raw: b.Raw}}
	case b.Type == "compaction": // a --native block: its summary, when it is readable
		for _, k := range []string{"content", "summary"} {
			if s := v.Get(k); s.Type == gjson.String {
				return textBlocks(s.Str)
			}
		}
		return nil
	case strings.HasSuffix(b.Type, "_call"):
		return nil // an OpenAI Responses server-tool item: neither API here replays it
	}
	if t := v.Get("text"); t.Type == gjson.String {
		return textBlocks(t.Str)
	}
	return nil
}

// contentBlocks is a tool message's content as result blocks.
func contentBlocks(c *session.Content) []reqBlock {
	if !c.IsBlocks {
		return textBlocks(c.Text)
	}
	var out []reqBlock
	for i := range c.Blocks {
		out = append(out, resultParts(blockOf(&c.Blocks[i]))...)
	}
	return out
}

// resultBlocks is a toolresult block's content: its string, or the text,
// images and documents of its block list.
func resultBlocks(b *session.Block) []reqBlock {
	if b.ResultRaw == nil {
		return textBlocks(b.Result)
	}
	v := gjson.ParseBytes(b.ResultRaw)
	if !v.IsArray() {
		return textBlocks(b.ResultText())
	}
	var out []reqBlock
	v.ForEach(func(_, p gjson.Result) bool {
		switch {
		case p.Type == gjson.String:
			out = append(out, textBlocks(p.Str)...)
		case p.Get("type").Str == "text" && p.Get("text").Type == gjson.String:
			out = append(out, textBlocks(p.Get("text").Str)...)
		case p.Get("type").Str == "image":
			out = append(out, reqBlock{kind: reqImage, source: p.Get("source")})
		case p.Get("type").Str == "document":
			out = append(out, reqBlock{kind: reqDocument, source: p.Get("source"), title: p.Get("title").String()})
		}
		return true
	})
	return out
}

// resultParts keeps what a tool result can hold.
func resultParts(bs []reqBlock) []reqBlock {
	out := bs[:0]
	for _, b := range bs {
		if b.kind == reqText || b.kind == reqImage || b.kind == reqDocument {
			out = append(out, b)
		}
	}
	return out
}

// objectInput is a call's input as an object: JSON of any other kind (a
// custom tool's text, arguments that did not parse) goes under "input".
func objectInput(raw json.RawMessage) json.RawMessage {
	v := gjson.ParseBytes(raw)
	switch {
	case len(raw) == 0 || v.Type == gjson.Null:
		return json.RawMessage("{}")
	case v.IsObject():
		return raw
	}
	return append(append([]byte(`{"input":`), raw...), '}')
}

// pair repairs the pairing of the copy: after an assistant turn with
// calls comes one user turn answering each of them in order, its own
// result or MissingResult, and then what the path held meanwhile (user
// content, system messages). Results that answer no open call are left
// out. wireID gives each call its id in the body.
func pair(turns []reqTurn, wireID func(c *reqCall, n int) string) []reqTurn {
	var out []reqTurn
	var calls []reqCall
	var answers []*reqResult
	var after []reqTurn
	ncalls := 0
	closeCalls := func() {
		if calls == nil {
			return
		}
		ans := reqTurn{role: session.RoleUser}
		for k := range calls {
			r := reqResult{id: calls[k].wire, isError: true, blocks: []reqBlock{{kind: reqText, text: MissingResult}}}
			if answers[k] != nil {
				r = *answers[k]
				r.id = calls[k].wire
			}
			ans.results = append(ans.results, r)
		}
		out = append(out, ans)
		out = append(out, after...)
		calls, answers, after = nil, nil, nil
	}
	for _, t := range turns {
		switch t.role {
		case session.RoleAssistant:
			closeCalls()
			for k := range t.calls {
				t.calls[k].wire = wireID(&t.calls[k], ncalls)
				ncalls++
			}
			out = append(out, t)
			if len(t.calls) > 0 {
				calls, answers = t.calls, make([]*reqResult, len(t.calls))
			}
		case session.RoleUser:
			for i := range t.results {
				r := &t.results[i]
				// The first unanswered call with its id; a result without
				// one answers the first call without one.
				for k := range calls {
					if answers[k] == nil && calls[k].id == r.id {
						answers[k] = r
						break
					}
				}
			}
			t.results = nil
			if t.empty() {
				continue
			}
			if calls != nil {
				after = append(after, t)
			} else {
				out = append(out, t)
			}
		default:
			if calls != nil {
				after = append(after, t)
			} else {
				out = append(out, t)
			}
		}
	}
	closeCalls()
	return out
}

// idMaker gives calls unique ids in a body: clean maps an id to the
// characters the provider takes, and an empty or repeated id gets a new
// one.
func idMaker(clean func(string) string, reserved map[string]bool) func(c *reqCall, n int) string {
	used := map[string]bool{}
	for id := range reserved {
		used[id] = true
	}
	return func(c *reqCall, n int) string {
		id := clean(c.id)
		if id == "" {
			id = "wc_call_" + strconv.Itoa(n+1)
		}
		for base, k := id, 2; used[id]; k++ {
			id = base + "_" + strconv.Itoa(k)
		}
		used[id] = true
		return id
	}
}

// anthropicID keeps the characters ^[a-zA-Z0-9_-]+$ allows.
func anthropicID(id string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, id)
}

func toolNameOf(c *reqCall) string {
	if c.name == "" {
		return "unknown_tool"
	}
	return c.name
}

// ---- images and documents

var anthropicImageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

func isHTTP(u string) bool {
	return strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")
}

// mediaNote is the text a provider gets in place of an image or document
// it cannot take.
func mediaNote(what string, src gjson.Result) string {
	switch t := src.Get("type").String(); {
	case src.Get("url").Type == gjson.String:
		return "[" + what + " not sent: " + src.Get("url").Str + "]"
	case src.Get("file_id").Type == gjson.String:
		return "[" + what + " not sent: file " + src.Get("file_id").Str + "]"
	case src.Get("media_type").Type == gjson.String:
		return "[" + what + " not sent: " + src.Get("media_type").Str + "]"
	case t != "":
		return "[" + what + " not sent: " + t + " source]"
	}
	return "[" + what + " not sent]"
}

// anthropicImage is an image block, or nil when the API cannot take the
// source.
func anthropicImage(src gjson.Result) []byte {
	var s []byte
	switch src.Get("type").Str {
	case "base64":
		media, data := src.Get("media_type"), src.Get("data")
		if anthropicImageTypes[media.Str] && data.Type == gjson.String && data.Str != "" {
			s = base64Source(media.Str, data.Str)
		}
	case "url":
		if u := src.Get("url"); u.Type == gjson.String && isHTTP(u.Str) {
			s = append(session.AppendString([]byte(`{"type":"url","url":`), u.Str), '}')
		}
	}
	if s == nil {
		return nil
	}
	return append(append([]byte(`{"type":"image","source":`), s...), '}')
}

func base64Source(media, data string) []byte {
	s := session.AppendString([]byte(`{"type":"base64","media_type":`), media)
	return append(session.AppendString(append(s, `,"data":`...), data), '}')
}

func anthropicDocument(src gjson.Result, title string) []byte {
	var s []byte
	switch media, data := src.Get("media_type").Str, src.Get("data"); src.Get("type").Str {
	case "base64":
		if media == "application/pdf" && data.Type == gjson.String && data.Str != "" {
			s = base64Source(media, data.Str)
		}
	case "text":
		if data.Type == gjson.String {
			s = append(session.AppendString([]byte(`{"type":"text","media_type":"text/plain","data":`), data.Str), '}')
		}
	case "url":
		if u := src.Get("url"); u.Type == gjson.String && isHTTP(u.Str) {
			s = append(session.AppendString([]byte(`{"type":"url","url":`), u.Str), '}')
		}
	}
	if s == nil {
		return nil
	}
	b := append([]byte(`{"type":"document","source":`), s...)
	if title != "" {
		b = session.AppendString(append(b, `,"title":`...), title)
	}
	return append(b, '}')
}

// openAIImage is an image_url part, or nil.
func openAIImage(src gjson.Result) []byte {
	var u string
	switch src.Get("type").Str {
	case "base64":
		media, data := src.Get("media_type").Str, src.Get("data")
		if strings.HasPrefix(media, "image/") && data.Type == gjson.String && data.Str != "" {
			u = "data:" + media + ";base64," + data.Str
		}
	case "url":
		if isHTTP(src.Get("url").Str) || strings.HasPrefix(src.Get("url").Str, "data:image/") {
			u = src.Get("url").Str
		}
	}
	if u == "" {
		return nil
	}
	return append(session.AppendString([]byte(`{"type":"image_url","image_url":{"url":`), u), "}}"...)
}

// openAIDocument is a file part (PDF) or a text part, or nil.
func openAIDocument(src gjson.Result, title string) []byte {
	data := src.Get("data")
	switch src.Get("type").Str {
	case "base64":
		if src.Get("media_type").Str == "application/pdf" && data.Type == gjson.String && data.Str != "" {
			if title == "" {
				title = "document.pdf"
			}
			b := session.AppendString([]byte(`{"type":"file","file":{"filename":`), title)
			b = session.AppendString(append(b, `,"file_data":`...), "data:application/pdf;base64,"+data.Str)
			return append(b, "}}"...)
		}
	case "text":
		if data.Type == gjson.String && strings.TrimSpace(data.Str) != "" {
			return textPart(data.Str)
		}
	}
	return nil
}

func textPart(text string) json.RawMessage {
	return append(session.AppendString([]byte(`{"type":"text","text":`), text), '}')
}

// ---- Anthropic

// Anthropic builds a Messages API body from a system prompt and the
// active path. Consecutive messages of one role are merged, a path that
// begins with the assistant gets LeadingUser before it, and system
// messages join the top-level system prompt.
func Anthropic(system string, msgs []session.Message, opt Options) ([]byte, error) {
	turns := collect(msgs)
	servers := map[string]bool{} // the body's server_tool_use ids, each once
	turns = pair(turns, idMaker(anthropicID, serverIDs(turns)))
	systemParts := []string{}
	if system != "" {
		systemParts = append(systemParts, system)
	}
	type wire struct {
		role  session.Role
		parts []json.RawMessage
	}
	var out []wire
	for i := range turns {
		t := &turns[i]
		if t.role == session.RoleSystem {
			systemParts = append(systemParts, t.blocks[0].text)
			continue
		}
		var parts []json.RawMessage
		for _, r := range t.results {
			parts = append(parts, anthropicResult(&r))
		}
		parts = append(parts, anthropicParts(t)...)
		if t.role == session.RoleAssistant {
			parts = pairServerBlocks(parts, servers)
			if onlyReasoning(parts) {
				parts = nil // nothing the conversation needs, and no message of its own
			}
		}
		if len(parts) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].role == t.role {
			out[n-1].parts = append(out[n-1].parts, parts...)
			continue
		}
		out = append(out, wire{role: t.role, parts: parts})
	}
	if n := len(out); n > 0 && out[n-1].role == session.RoleAssistant {
		switch opt.Trailing {
		case TrailingDefault:
			return nil, &PrefillError{}
		case TrailingDrop:
			out = out[:n-1]
		case TrailingKeep:
			if out[n-1].parts = trimPrefill(out[n-1].parts); len(out[n-1].parts) == 0 {
				out = out[:n-1]
			}
		}
	}
	if len(out) == 0 {
		return nil, &NothingToSendError{} // LeadingUser alone is nothing to send
	}
	if out[0].role == session.RoleAssistant {
		out = append([]wire{{role: session.RoleUser, parts: []json.RawMessage{textPart(LeadingUser)}}}, out...)
	}

	maxTokens := opt.MaxTokens
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	var systemJSON []byte
	if len(systemParts) > 0 {
		systemJSON = session.AppendString(nil, strings.Join(systemParts, "\n\n"))
	}
	body := make([][]byte, len(out))
	for i, w := range out {
		body[i] = session.AppendString([]byte(`{"role":`), string(w.role))
		body[i] = append(append(append(body[i], `,"content":`...), appendParts(w.parts)...), '}')
	}
	return appendBody(opt, maxTokens, systemJSON, anthropicTools(opt.Tools), body), nil
}

// appendBody writes a request body: the options, the system prompt when
// it is a member (Anthropic), the tools, the messages.
func appendBody(opt Options, maxTokens uint64, system, tools []byte, msgs [][]byte) []byte {
	var b []byte
	b = append(b, '{')
	if opt.Model != "" {
		b = appendMember(b, "model", session.AppendString(nil, opt.Model))
	}
	if maxTokens > 0 {
		b = appendMember(b, "max_tokens", []byte(strconv.FormatUint(maxTokens, 10)))
	}
	if system != nil {
		b = appendMember(b, "system", system)
	}
	if opt.Temperature != nil {
		b = appendMember(b, "temperature", []byte(strconv.FormatFloat(*opt.Temperature, 'g', -1, 64)))
	}
	if tools != nil {
		b = appendMember(b, "tools", tools)
	}
	b = append(b, `,"messages":[`...)
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	b = append(b, "]}"...)
	return fixLeadingComma(b)
}

// anthropicParts is a turn's content in the Messages API's spelling.
func anthropicParts(t *reqTurn) []json.RawMessage {
	var parts []json.RawMessage
	for _, blk := range t.blocks {
		switch blk.kind {
		case reqText:
			parts = append(parts, textPart(blk.text))
		case reqImage:
			if p := anthropicImage(blk.source); p != nil {
				parts = append(parts, p)
			} else {
				parts = append(parts, textPart(mediaNote("image", blk.source)))
			}
		case reqDocument:
			if p := anthropicDocument(blk.source, blk.title); p != nil && t.role == session.RoleUser {
				parts = append(parts, p)
			} else {
				parts = append(parts, textPart(mediaNote("document", blk.source)))
			}
		case reqThinking:
			if t.role == session.RoleAssistant {
				p := session.AppendString([]byte(`{"type":"thinking","thinking":`), blk.text)
				parts = append(parts, append(session.AppendString(append(p, `,"signature":`...), blk.sig), '}'))
			}
		case reqRedacted:
			if t.role == session.RoleAssistant {
				parts = append(parts, append(session.AppendString([]byte(`{"type":"redacted_thinking","data":`), blk.text), '}'))
			}
		case reqServer:
			if t.role == session.RoleAssistant {
				parts = append(parts, blk.raw)
			}
		case reqCallBlock:
			c := &t.calls[blk.call]
			p := session.AppendString([]byte(`{"type":"tool_use","id":`), c.wire)
			p = session.AppendString(append(p, `,"name":`...), toolNameOf(c))
			parts = append(parts, append(append(append(p, `,"input":`...), c.input...), '}'))
		}
	}
	return parts
}

func anthropicResult(r *reqResult) json.RawMessage {
	b := session.AppendString([]byte(`{"type":"tool_result","tool_use_id":`), r.id)
	t := reqTurn{role: session.RoleUser, blocks: r.blocks}
	switch parts := anthropicParts(&t); {
	case len(parts) == 1 && len(r.blocks) == 1 && r.blocks[0].kind == reqText:
		b = session.AppendString(append(b, `,"content":`...), r.blocks[0].text)
	case len(parts) > 0:
		b = append(append(b, `,"content":`...), appendParts(parts)...)
	}
	if r.isError {
		b = append(b, `,"is_error":true`...)
	}
	return append(b, '}')
}

// serverIDs lists the server_tool_use ids of the copy, which client call
// ids must not take.
func serverIDs(turns []reqTurn) map[string]bool {
	ids := map[string]bool{}
	for i := range turns {
		for _, b := range turns[i].blocks {
			if v := gjson.ParseBytes(b.raw); b.kind == reqServer && v.Get("type").Str == "server_tool_use" {
				ids[v.Get("id").Str] = true
			}
		}
	}
	return ids
}

// pairServerBlocks keeps a server_tool_use only with a result after it in
// its message, and a result only after its server_tool_use: the API refuses
// either alone. seen holds the ids earlier messages used.
func pairServerBlocks(parts []json.RawMessage, seen map[string]bool) []json.RawMessage {
	uses, answered := map[string]int{}, map[string]bool{}
	for i, p := range parts {
		v := gjson.ParseBytes(p)
		switch t := v.Get("type").Str; {
		case t == "server_tool_use":
			if id := v.Get("id").Str; strings.HasPrefix(id, "srvtoolu_") && anthropicID(id) == id && v.Get("input").IsObject() && !seen[id] {
				if _, dup := uses[id]; !dup {
					uses[id] = i
				}
			}
		case anthropicServerBlocks[t]:
			if k, ok := uses[v.Get("tool_use_id").Str]; ok && k < i {
				answered[v.Get("tool_use_id").Str] = true
			}
		}
	}
	out := parts[:0]
	taken := map[string]bool{}
	for i, p := range parts {
		v := gjson.ParseBytes(p)
		switch t := v.Get("type").Str; {
		case t == "server_tool_use":
			if id := v.Get("id").Str; !answered[id] || uses[id] != i {
				continue
			}
			seen[v.Get("id").Str] = true
		case anthropicServerBlocks[t]:
			id := v.Get("tool_use_id").Str
			if !answered[id] || taken[id] || uses[id] > i {
				continue
			}
			taken[id] = true
		}
		out = append(out, p)
	}
	return out
}

// onlyReasoning reports parts of thinking blocks alone.
func onlyReasoning(parts []json.RawMessage) bool {
	for _, p := range parts {
		if t := gjson.GetBytes(p, "type").Str; t != "thinking" && t != "redacted_thinking" {
			return false
		}
	}
	return true
}

// trimPrefill readies a final assistant message to be a prefill: the API
// refuses one that ends in whitespace, and an assistant message may not end
// with a thinking block.
func trimPrefill(parts []json.RawMessage) []json.RawMessage {
	for n := len(parts); n > 0; n = len(parts) {
		v := gjson.ParseBytes(parts[n-1])
		switch v.Get("type").Str {
		case "thinking", "redacted_thinking":
			parts = parts[:n-1]
			continue
		case "text":
			t := strings.TrimRight(v.Get("text").Str, " \t\r\n")
			if t == "" {
				parts = parts[:n-1]
				continue
			}
			parts[n-1] = textPart(t)
		}
		return parts
	}
	return parts
}

// ---- OpenAI

// OpenAI builds a chat completions body: the system prompt as the
// first message, tool calls as tool_calls, results as tool messages right
// after their call, followed by one user message holding the images and
// PDF documents the results returned (tool messages carry text only).
func OpenAI(system string, msgs []session.Message, opt Options) ([]byte, error) {
	turns := pair(collect(msgs), idMaker(func(id string) string { return id }, nil))
	var out [][]byte
	if system != "" {
		out = append(out, openAIMessage("system", session.AppendString(nil, system), "", nil))
	}
	lastAssistant := -1
	for i := range turns {
		t := &turns[i]
		switch t.role {
		case session.RoleSystem:
			out = append(out, openAIMessage("system", session.AppendString(nil, t.blocks[0].text), "", nil))
		case session.RoleAssistant:
			var text []string
			var calls []json.RawMessage
			for _, blk := range t.blocks {
				switch blk.kind {
				case reqText:
					text = append(text, blk.text)
				case reqCallBlock:
					c := &t.calls[blk.call]
					call := session.AppendString([]byte(`{"id":`), c.wire)
					call = session.AppendString(append(call, `,"type":"function","function":{"name":`...), toolNameOf(c))
					call = session.AppendString(append(call, `,"arguments":`...), string(c.input))
					calls = append(calls, append(call, "}}"...))
				}
			}
			if len(text) == 0 && len(calls) == 0 {
				continue // only what Chat Completions cannot take (reasoning, server tools)
			}
			content := []byte("null")
			if len(text) > 0 {
				content = session.AppendString(nil, strings.Join(text, "\n"))
			}
			out = append(out, openAIMessage("assistant", content, "", calls))
			lastAssistant = len(out) - 1
			if len(calls) > 0 {
				lastAssistant = -1 // answered by what follows
			}
		default:
			var media []json.RawMessage
			var from []string
			for _, r := range t.results {
				var text []string
				for _, blk := range r.blocks {
					if blk.kind == reqText {
						text = append(text, blk.text)
					} else if p := openAIMedia(blk); p != nil {
						media = append(media, p)
						if len(from) == 0 || from[len(from)-1] != r.id {
							from = append(from, r.id)
						}
					} else {
						text = append(text, mediaNote(mediaWhat(blk), blk.source))
					}
				}
				out = append(out, openAIMessage("tool", session.AppendString(nil, strings.Join(text, "\n")), r.id, nil))
			}
			if len(media) > 0 {
				note := textPart("[returned by tool call " + strings.Join(from, ", ") + "]")
				out = append(out, openAIMessage("user", appendParts(append([]json.RawMessage{note}, media...)), "", nil))
			}
			if c := openAIUserContent(t); c != nil {
				out = append(out, openAIMessage("user", c, "", nil))
			}
		}
	}
	if lastAssistant >= 0 && lastAssistant == len(out)-1 && opt.Trailing == TrailingDrop {
		out = out[:lastAssistant]
	}
	if len(out) == 0 {
		return nil, &NothingToSendError{}
	}

	return appendBody(opt, opt.MaxTokens, nil, openAITools(opt.Tools), out), nil
}

func mediaWhat(blk reqBlock) string {
	if blk.kind == reqDocument {
		return "document"
	}
	return "image"
}

func openAIMedia(blk reqBlock) []byte {
	switch blk.kind {
	case reqImage:
		return openAIImage(blk.source)
	case reqDocument:
		return openAIDocument(blk.source, blk.title)
	}
	return nil
}

func openAIMessage(role string, content []byte, toolCallID string, calls []json.RawMessage) []byte {
	b := session.AppendString([]byte(`{"role":`), role)
	b = append(append(b, `,"content":`...), content...)
	if role == "tool" {
		b = session.AppendString(append(b, `,"tool_call_id":`...), toolCallID)
	}
	if len(calls) > 0 {
		b = append(append(b, `,"tool_calls":`...), appendParts(calls)...)
	}
	return append(b, '}')
}

// openAIUserContent is a user turn's own content: its text as a string
// when it was one, parts otherwise; nil when nothing is left.
func openAIUserContent(t *reqTurn) []byte {
	var parts []json.RawMessage
	for _, blk := range t.blocks {
		switch blk.kind {
		case reqText:
			parts = append(parts, textPart(blk.text))
		case reqImage, reqDocument:
			if p := openAIMedia(blk); p != nil {
				parts = append(parts, p)
			} else {
				parts = append(parts, textPart(mediaNote(mediaWhat(blk), blk.source)))
			}
		}
	}
	switch {
	case len(parts) == 0:
		return nil
	case t.plain && len(t.blocks) == 1:
		return session.AppendString(nil, t.blocks[0].text)
	}
	return appendParts(parts)
}

func appendParts(parts []json.RawMessage) []byte {
	c := []byte{'['}
	for i, p := range parts {
		if i > 0 {
			c = append(c, ',')
		}
		c = append(c, p...)
	}
	return append(c, ']')
}

// ---- tools

// toolDef is one tool definition, from whycodes' ToolDefinition
// ({name, description, parameters}) or either provider's own form.
type toolDef struct {
	name, description string
	hasDescription    bool
	schema            string // raw JSON Schema
}

func readTools(tools json.RawMessage) []toolDef {
	var out []toolDef
	gjson.ParseBytes(tools).ForEach(func(_, t gjson.Result) bool {
		if f := t.Get("function"); f.IsObject() { // OpenAI's wrapper
			t = f
		}
		d := toolDef{name: t.Get("name").String(), schema: `{"type":"object"}`}
		if desc := t.Get("description"); desc.Exists() {
			d.description, d.hasDescription = desc.String(), true
		}
		for _, key := range []string{"parameters", "input_schema"} {
			if v := t.Get(key); v.Exists() {
				d.schema = v.Raw
				break
			}
		}
		out = append(out, d)
		return true
	})
	return out
}

// appendTools writes tool definitions, each opened by open and closed by
// close, with the schema under schemaKey.
func appendTools(tools json.RawMessage, open, schemaKey, close string) []byte {
	if len(tools) == 0 {
		return nil
	}
	b := []byte{'['}
	for i, d := range readTools(tools) {
		if i > 0 {
			b = append(b, ',')
		}
		b = session.AppendString(append(b, open...), d.name)
		if d.hasDescription {
			b = session.AppendString(append(b, `,"description":`...), d.description)
		}
		b = append(append(append(b, ',', '"'), schemaKey...), '"', ':')
		b = append(append(b, d.schema...), close...)
	}
	return append(b, ']')
}

// The longest tool names the APIs take.
const (
	AnthropicToolName = 128
	OpenAIToolName    = 64
)

// CheckTools refuses tool definitions an API would refuse: one that is
// not an object, a name missing, twice, longer than maxName or of other
// characters than letters, digits, "_" and "-", a schema that is not an
// object.
func CheckTools(tools json.RawMessage, maxName int) error {
	var err error
	names := map[string]bool{}
	i := 0
	gjson.ParseBytes(tools).ForEach(func(_, t gjson.Result) bool {
		i++
		if !t.IsObject() {
			err = fmt.Errorf("tool %d is not a JSON object", i)
			return false
		}
		if f := t.Get("function"); f.IsObject() {
			t = f
		}
		name := t.Get("name")
		schema := t.Get("parameters")
		if !schema.Exists() {
			schema = t.Get("input_schema")
		}
		switch {
		case name.Type != gjson.String || name.Str == "":
			err = fmt.Errorf("tool %d has no name", i)
		case len(name.Str) > maxName || strings.Trim(name.Str, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "":
			err = fmt.Errorf("tool name %q is not one the API takes (letters, digits, _ and -, at most %d)", name.Str, maxName)
		case names[name.Str]:
			err = fmt.Errorf("tool %q is defined twice", name.Str)
		case schema.Exists() && !schema.IsObject():
			err = fmt.Errorf("the schema of tool %q is not a JSON object", name.Str)
		}
		names[name.Str] = true
		return err == nil
	})
	return err
}

func anthropicTools(tools json.RawMessage) []byte {
	return appendTools(tools, `{"name":`, "input_schema", "}")
}

func openAITools(tools json.RawMessage) []byte {
	return appendTools(tools, `{"type":"function","function":{"name":`, "parameters", "}}")
}

func appendMember(b []byte, key string, value []byte) []byte {
	b = append(b, ',')
	b = session.AppendString(b, key)
	b = append(b, ':')
	return append(b, value...)
}

// fixLeadingComma removes the comma appendMember put after the opening brace.
func fixLeadingComma(b []byte) []byte {
	if len(b) > 1 && b[0] == '{' && b[1] == ',' {
		return append(b[:1], b[2:]...)
	}
	return b
}
