package format

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// MissingResult answers, in a request copy, a tool call the transcript
// never answered: providers refuse a call without a result.
const MissingResult = "error: no result was recorded for this tool call"

// RequestOptions shape a provider request body.
type RequestOptions struct {
	Model       string
	MaxTokens   uint64
	Temperature *float64
	Tools       json.RawMessage // an array of {name, description, parameters|input_schema}
}

// DefaultMaxTokens is what an Anthropic request asks for when no limit is
// given: the field is required there.
const DefaultMaxTokens = 8192

// wire is a provider message under construction: role and raw content parts.
type wire struct {
	role  string
	parts []json.RawMessage
	text  string // OpenAI: the message's text; Anthropic: unused
	calls []json.RawMessage
	callIDs,
	resultIDs []string
	toolCallID string // OpenAI tool messages
}

// AnthropicRequest builds a Messages API body from a system prompt and the
// active path. The stored transcript is not touched; pairing is repaired in
// the copy: an unanswered call gets MissingResult, a result that answers no
// call is dropped, and consecutive messages of one role are merged.
func AnthropicRequest(system string, msgs []session.Message, opt RequestOptions) []byte {
	var out []*wire
	systemParts := []string{}
	if system != "" {
		systemParts = append(systemParts, system)
	}
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case session.RoleSystem:
			if t := plainText(m); t != "" {
				systemParts = append(systemParts, t)
			}
			continue
		case session.RoleTool:
			text, _ := m.AsText()
			if m.Content.IsBlocks {
				text = blocksText(m.Content.Blocks)
			}
			out = appendWire(out, &wire{role: "user", parts: []json.RawMessage{anthropicResult(m.ToolCallID, text, m.IsError)}, resultIDs: []string{m.ToolCallID}})
			continue
		}
		w := &wire{role: string(m.Role)}
		if !m.Content.IsBlocks {
			if m.Content.Text != "" {
				w.parts = append(w.parts, textPart(m.Content.Text))
			}
		}
		for j := range m.Content.Blocks {
			b := &m.Content.Blocks[j]
			switch b.Type {
			case session.BlockToolUse:
				w.callIDs = append(w.callIDs, b.ID)
			case session.BlockToolResult:
				w.resultIDs = append(w.resultIDs, b.ToolUseID)
			}
			if p := anthropicPart(b); p != nil {
				w.parts = append(w.parts, p)
			}
		}
		if len(w.parts) > 0 {
			out = appendWire(out, w)
		}
	}
	out = repairPairs(out, func(id string) json.RawMessage { return anthropicResult(id, MissingResult, true) })

	var b []byte
	b = append(b, '{')
	if opt.Model != "" {
		b = appendMember(b, "model", quote(opt.Model))
	}
	maxTokens := opt.MaxTokens
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	b = appendMember(b, "max_tokens", []byte(strconv.FormatUint(maxTokens, 10)))
	if len(systemParts) > 0 {
		b = appendMember(b, "system", quote(strings.Join(systemParts, "\n\n")))
	}
	if opt.Temperature != nil {
		b = appendMember(b, "temperature", []byte(strconv.FormatFloat(*opt.Temperature, 'g', -1, 64)))
	}
	if tools := anthropicTools(opt.Tools); tools != nil {
		b = appendMember(b, "tools", tools)
	}
	b = append(b, `,"messages":[`...)
	for i, w := range out {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"role":`...)
		b = append(b, quote(w.role)...)
		b = append(b, `,"content":[`...)
		for j, p := range w.parts {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, p...)
		}
		b = append(b, "]}"...)
	}
	b = append(b, "]}"...)
	return fixLeadingComma(b)
}

// appendWire merges a message into the previous one of the same role.
func appendWire(out []*wire, w *wire) []*wire {
	if n := len(out); n > 0 && out[n-1].role == w.role && w.role != "tool" {
		prev := out[n-1]
		prev.parts = append(prev.parts, w.parts...)
		prev.callIDs = append(prev.callIDs, w.callIDs...)
		prev.resultIDs = append(prev.resultIDs, w.resultIDs...)
		return out
	}
	return append(out, w)
}

// repairPairs makes every assistant call answered in the next user message
// and drops results that answer nothing, for Anthropic's wire form.
func repairPairs(out []*wire, missing func(id string) json.RawMessage) []*wire {
	var fixed []*wire
	open := map[string]bool{}
	var openOrder []string
	for i := 0; i < len(out); i++ {
		w := out[i]
		if w.role == "assistant" {
			if len(openOrder) > 0 { // calls left open by an earlier assistant message
				fixed = append(fixed, &wire{role: "user", parts: missingParts(openOrder, missing)})
			}
			open, openOrder = map[string]bool{}, nil
			for _, id := range w.callIDs {
				open[id] = true
				openOrder = append(openOrder, id)
			}
			fixed = append(fixed, w)
			continue
		}
		// a user message: keep only results that answer an open call
		var parts []json.RawMessage
		answered := map[string]bool{}
		var results, others []json.RawMessage
		for _, p := range w.parts {
			if id := gjson.GetBytes(p, "tool_use_id"); gjson.GetBytes(p, "type").Str == "tool_result" {
				if open[id.Str] && !answered[id.Str] {
					answered[id.Str] = true
					results = append(results, p)
				}
				continue
			}
			others = append(others, p)
		}
		var still []string
		for _, id := range openOrder {
			if !answered[id] {
				still = append(still, id)
			}
		}
		parts = append(parts, results...)
		parts = append(parts, missingParts(still, missing)...) // results come first in a user turn
		parts = append(parts, others...)
		open, openOrder = map[string]bool{}, nil
		if len(parts) > 0 {
			fixed = append(fixed, &wire{role: "user", parts: parts})
		}
	}
	if len(openOrder) > 0 {
		fixed = append(fixed, &wire{role: "user", parts: missingParts(openOrder, missing)})
	}
	return fixed
}

func missingParts(ids []string, missing func(string) json.RawMessage) []json.RawMessage {
	var parts []json.RawMessage
	for _, id := range ids {
		parts = append(parts, missing(id))
	}
	return parts
}

func anthropicResult(id, text string, isError bool) json.RawMessage {
	b := []byte(`{"type":"tool_result","tool_use_id":`)
	b = append(b, quote(id)...)
	b = append(b, `,"content":`...)
	b = append(b, quote(text)...)
	if isError {
		b = append(b, `,"is_error":true`...)
	}
	return append(b, '}')
}

func textPart(text string) json.RawMessage {
	return append(append([]byte(`{"type":"text","text":`), quote(text)...), '}')
}

// anthropicPart is a block in Anthropic's spelling; wc's own markers (the
// summary kind) are left out, provider members are kept.
func anthropicPart(b *session.Block) json.RawMessage {
	if b.Raw != nil {
		return b.Raw
	}
	var p []byte
	switch b.Type {
	case session.BlockText:
		if b.Text == "" {
			return nil
		}
		p = append([]byte(`{"type":"text","text":`), quote(b.Text)...)
	case session.BlockImage:
		p = append([]byte(`{"type":"image","source":`), orEmpty(b.Source)...)
	case session.BlockToolUse:
		p = append([]byte(`{"type":"tool_use","id":`), quote(b.ID)...)
		p = append(append(p, `,"name":`...), quote(b.Name)...)
		p = append(append(p, `,"input":`...), orEmpty(b.Input)...)
	case session.BlockToolResult:
		p = append([]byte(`{"type":"tool_result","tool_use_id":`), quote(b.ToolUseID)...)
		p = append(p, `,"content":`...)
		if b.ResultRaw != nil {
			p = append(p, b.ResultRaw...)
		} else {
			p = append(p, quote(b.Result)...)
		}
		if b.IsError != nil && *b.IsError {
			p = append(p, `,"is_error":true`...)
		}
	case session.BlockThinking:
		p = append([]byte(`{"type":"thinking","thinking":`), quote(b.Text)...)
		if b.HasSignature {
			p = append(append(p, `,"signature":`...), quote(b.Signature)...)
		}
	case session.BlockRedactedThinking:
		p = append([]byte(`{"type":"redacted_thinking","data":`), quote(b.Data)...)
	default:
		return nil
	}
	for _, f := range b.Extra {
		if f.Key == "kind" {
			continue
		}
		p = append(append(append(append(p, ','), quote(f.Key)...), ':'), f.Value...)
	}
	return append(p, '}')
}

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
		b = append(append(b, open...), quote(d.name)...)
		if d.hasDescription {
			b = append(append(b, `,"description":`...), quote(d.description)...)
		}
		b = append(append(append(b, ',', '"'), schemaKey...), '"', ':')
		b = append(append(b, d.schema...), close...)
	}
	return append(b, ']')
}

func anthropicTools(tools json.RawMessage) []byte {
	return appendTools(tools, `{"name":`, "input_schema", "}")
}

func openAITools(tools json.RawMessage) []byte {
	return appendTools(tools, `{"type":"function","function":{"name":`, "parameters", "}}")
}

// OpenAIRequest builds a chat completions body: the system prompt as the
// first message, tool calls as tool_calls, results as tool messages, with
// pairing repaired in the copy.
func OpenAIRequest(system string, msgs []session.Message, opt RequestOptions) []byte {
	type omsg struct {
		role, toolCallID string
		content          []byte // raw JSON value
		calls            []string
		callsRaw         []json.RawMessage
	}
	var out []omsg
	if system != "" {
		out = append(out, omsg{role: "system", content: quote(system)})
	}
	addResult := func(id, text string) {
		out = append(out, omsg{role: "tool", toolCallID: id, content: quote(text)})
	}
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case session.RoleTool:
			text, _ := m.AsText()
			if m.Content.IsBlocks {
				text = blocksText(m.Content.Blocks)
			}
			addResult(m.ToolCallID, text)
		case session.RoleAssistant:
			o := omsg{role: "assistant"}
			var text []string
			for j := range m.Content.Blocks {
				b := &m.Content.Blocks[j]
				switch b.Type {
				case session.BlockText:
					text = append(text, b.Text)
				case session.BlockToolUse:
					o.calls = append(o.calls, b.ID)
					args, _ := json.Marshal(string(orEmpty(b.Input)))
					call := append([]byte(`{"id":`), quote(b.ID)...)
					call = append(append(call, `,"type":"function","function":{"name":`...), quote(b.Name)...)
					call = append(append(call, `,"arguments":`...), args...)
					o.callsRaw = append(o.callsRaw, append(call, "}}"...))
				}
			}
			if !m.Content.IsBlocks {
				text = append(text, m.Content.Text)
			}
			o.content = quote(strings.Join(text, "\n"))
			if len(text) == 0 && len(o.calls) > 0 {
				o.content = []byte("null")
			}
			out = append(out, o)
		default: // user and system
			role := string(m.Role)
			if !m.Content.IsBlocks {
				out = append(out, omsg{role: role, content: quote(m.Content.Text)})
				continue
			}
			var parts []json.RawMessage
			for j := range m.Content.Blocks {
				b := &m.Content.Blocks[j]
				switch b.Type {
				case session.BlockToolResult:
					addResult(b.ToolUseID, b.ResultText())
				case session.BlockText:
					parts = append(parts, textPart(b.Text))
				case session.BlockImage:
					if u := imageURL(b.Source); u != "" {
						parts = append(parts, append(append([]byte(`{"type":"image_url","image_url":{"url":`), quote(u)...), "}}"...))
					}
				}
			}
			if len(parts) > 0 {
				c := []byte{'['}
				for k, p := range parts {
					if k > 0 {
						c = append(c, ',')
					}
					c = append(c, p...)
				}
				out = append(out, omsg{role: role, content: append(c, ']')})
			}
		}
	}
	// Repair: after an assistant message with calls come exactly its results.
	var fixed []omsg
	for i := 0; i < len(out); i++ {
		o := out[i]
		if o.role == "tool" {
			continue // placed with their call below; orphans are dropped
		}
		fixed = append(fixed, o)
		if o.role != "assistant" || len(o.calls) == 0 {
			continue
		}
		results := map[string]omsg{}
		for j := i + 1; j < len(out) && out[j].role != "assistant"; j++ {
			if out[j].role == "tool" {
				if _, dup := results[out[j].toolCallID]; !dup {
					results[out[j].toolCallID] = out[j]
				}
			}
		}
		for _, id := range o.calls {
			r, ok := results[id]
			if !ok {
				r = omsg{role: "tool", toolCallID: id, content: quote(MissingResult)}
			}
			fixed = append(fixed, r)
		}
	}

	var b []byte
	b = append(b, '{')
	if opt.Model != "" {
		b = appendMember(b, "model", quote(opt.Model))
	}
	if opt.MaxTokens > 0 {
		b = appendMember(b, "max_tokens", []byte(strconv.FormatUint(opt.MaxTokens, 10)))
	}
	if opt.Temperature != nil {
		b = appendMember(b, "temperature", []byte(strconv.FormatFloat(*opt.Temperature, 'g', -1, 64)))
	}
	if tools := openAITools(opt.Tools); tools != nil {
		b = appendMember(b, "tools", tools)
	}
	b = append(b, `,"messages":[`...)
	for i, o := range fixed {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(b, `{"role":`...), quote(o.role)...)
		b = append(append(b, `,"content":`...), o.content...)
		if o.toolCallID != "" {
			b = append(append(b, `,"tool_call_id":`...), quote(o.toolCallID)...)
		}
		if len(o.callsRaw) > 0 {
			b = append(b, `,"tool_calls":[`...)
			for k, c := range o.callsRaw {
				if k > 0 {
					b = append(b, ',')
				}
				b = append(b, c...)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, "]}"...)
	return fixLeadingComma(b)
}

func imageURL(source json.RawMessage) string {
	s := gjson.ParseBytes(source)
	if u := s.Get("url"); u.Exists() {
		return u.String()
	}
	if d := s.Get("data"); d.Exists() {
		return "data:" + s.Get("media_type").String() + ";base64," + d.String()
	}
	return ""
}

func plainText(m *session.Message) string {
	if !m.Content.IsBlocks {
		return m.Content.Text
	}
	return blocksText(m.Content.Blocks)
}

func blocksText(blocks []session.Block) string {
	var parts []string
	for i := range blocks {
		switch blocks[i].Type {
		case session.BlockText:
			parts = append(parts, blocks[i].Text)
		case session.BlockToolResult:
			parts = append(parts, blocks[i].ResultText())
		}
	}
	return strings.Join(parts, "\n")
}

func quote(s string) []byte {
	b, _ := json.Marshal(s) // a Go string always encodes
	return b
}

func orEmpty(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return []byte("{}")
	}
	return raw
}

func appendMember(b []byte, key string, value []byte) []byte {
	b = append(b, ',')
	b = append(b, quote(key)...)
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
