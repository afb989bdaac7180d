package format

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// importNative reads a whycodes or wc share (or a bare array of messages),
// several shares (a line each, or an array of them: a session each), or a
// stream of messages (NDJSON, wc-export jsonl).
func importNative(data []byte) ([]Imported, error) {
	data = bytes.TrimSpace(data)
	if gjson.ValidBytes(data) && !isNodeLine(data) && !gjson.GetBytes(data, "role").Exists() {
		if shares := arrayShares(gjson.ParseBytes(data)); shares != nil {
			return importShares(shares, "element")
		}
		return importShares([][]byte{data}, "")
	}
	if shares := lineShares(data); shares != nil {
		return importShares(shares, "line")
	}
	batch, err := ParseMessages(data)
	if err != nil {
		return nil, err
	}
	if out, ok, err := importNodes(&batch); ok {
		return out, err
	}
	var imp Imported
	imp.Share.Messages = batch.Messages
	if batch.Usage != nil {
		imp.Share.Meta.Usage = *batch.Usage
	}
	var span timeSpan
	for i := range batch.Messages {
		span.add(batch.Messages[i].CreatedAt)
	}
	imp.Share.Meta.CreatedAt, imp.Share.Meta.UpdatedAt = span.first, span.last
	if !hasTurns(&imp.Share) {
		return nil, errNoMessages
	}
	return []Imported{imp}, nil
}

// isShare reports whether v is a share: an object with a messages array
// that is not a message itself.
func isShare(v gjson.Result) bool {
	return v.IsObject() && v.Get("messages").IsArray() && !v.Get("role").Exists()
}

// arrayShares is the shares of an array of them (jq -s of wc-export
// --format json), or nil unless every element is one.
func arrayShares(doc gjson.Result) [][]byte {
	if !doc.IsArray() || !isShare(doc.Get("0")) {
		return nil
	}
	var shares [][]byte
	all := true
	doc.ForEach(func(_, v gjson.Result) bool {
		all = isShare(v)
		shares = append(shares, []byte(v.Raw))
		return all
	})
	if !all {
		return nil
	}
	return shares
}

// lineShares is the shares of wc-export --format json's lines, one a
// session, or nil unless every line is one. A stream whose first line is
// not a share (messages) is not read further.
func lineShares(data []byte) [][]byte {
	if first, _, _ := bytes.Cut(data, []byte{'\n'}); !isShare(gjson.ParseBytes(first)) {
		return nil
	}
	var shares [][]byte
	all := true
	forEachLine(data, func(line []byte) {
		if all = all && gjson.ValidBytes(line) && isShare(gjson.ParseBytes(line)); all {
			shares = append(shares, line)
		}
	})
	if !all || len(shares) < 2 {
		return nil
	}
	return shares
}

// importShares reads each share as a session of its own, in order; an
// error names the line or element it is in (where, unless "").
func importShares(shares [][]byte, where string) ([]Imported, error) {
	out := make([]Imported, 0, len(shares))
	for i, raw := range shares {
		sh, err := session.DecodeShare(raw)
		if err == nil && !hasTurns(&sh) {
			err = errNoMessages
		}
		if err != nil && where != "" {
			err = &session.InvalidError{Msg: fmt.Sprintf("%s %d: %v", where, i+1, err)}
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Imported{Share: sh, SourceID: strVal(gjson.GetBytes(raw, "id"))})
	}
	return out, nil
}

// requestMessages finds the messages of a request body or a bare array.
func requestMessages(data []byte, what string) (list, body gjson.Result, err error) {
	if !gjson.ValidBytes(data) {
		return list, body, badInputf("%s input is not valid json", what)
	}
	doc := gjson.ParseBytes(data)
	switch {
	case doc.IsArray():
		return doc, body, nil
	case doc.IsObject() && doc.Get("messages").IsArray():
		return doc.Get("messages"), doc, nil
	}
	return list, body, badInputf("%s input needs a messages array", what)
}

// importOpenAI reads a Chat Completions messages array or request body.
// Leading system and developer messages become the system prompt; later
// ones stay system messages. Tool messages get the name of their call.
func importOpenAI(data []byte) ([]Imported, error) {
	list, body, err := requestMessages(data, "openai")
	if err != nil {
		return nil, err
	}
	var l linearPath
	var span timeSpan
	names := toolNames{}
	var system []string
	leading := true
	lastFn := "" // id given to a deprecated function_call
	i := 0
	eachElem(list, func(el gjson.Result) bool {
		i++
		if !el.IsObject() {
			err = badInputf("message %d is not an object", i)
			return false
		}
		var m session.Message
		if strVal(el.Get("role")) == "function" { // deprecated: the result of a function_call
			m = session.Message{Role: session.RoleTool, Name: strVal(el.Get("name")), ToolCallID: lastFn}
			if c := el.Get("content"); c.Type == gjson.String {
				m.Content = session.TextContent(c.Str)
			} else {
				m.Content = session.TextContent(textOrRaw(c))
			}
		} else {
			var derr error
			if m, derr = session.DecodeMessage([]byte(el.Raw)); derr != nil {
				err = badInputf("message %d: %v", i, derr)
				return false
			}
			if fc := el.Get("function_call"); m.Role == session.RoleAssistant && fc.IsObject() {
				lastFn = "call_" + strconv.Itoa(i)
				blocks := m.Content.Blocks
				if !m.Content.IsBlocks && m.Content.Text != "" {
					blocks = []session.Block{{Type: session.BlockText, Text: m.Content.Text}}
				}
				blocks = append(blocks, session.Block{Type: session.BlockToolUse, ID: lastFn, Name: strVal(fc.Get("name")), Input: toolInput(fc.Get("arguments"))})
				m.Content = session.BlockContent(blocks...)
				m.Extra = dropField(m.Extra, "function_call")
			}
		}
		if m.Role == session.RoleSystem && leading {
			system = append(system, contentText(&m.Content))
			return true
		}
		leading = false
		if m.Role == session.RoleTool && m.Name == "" {
			m.Name = names[m.ToolCallID]
		}
		names.record(&m)
		span.add(m.CreatedAt)
		l.add(m)
		return true
	})
	if err != nil {
		return nil, err
	}
	imp := Imported{}
	l.share(&imp.Share)
	if !hasTurns(&imp.Share) {
		return nil, errNoMessages
	}
	meta := &imp.Share.Meta
	meta.SystemPrompt = strings.Join(system, "\n\n")
	meta.CreatedAt, meta.UpdatedAt = span.first, span.last
	if body.Exists() {
		meta.Extra = append(meta.Extra, importedFrom(KindOpenAI, "", objectOf(body, "messages")))
	}
	return []Imported{imp}, nil
}

// importAnthropic reads a Messages API request body or messages array.
// Each tool_result block becomes a tool message after the assistant turn,
// named after its call; the rest of a user message follows them.
func importAnthropic(data []byte) ([]Imported, error) {
	list, body, err := requestMessages(data, "anthropic")
	if err != nil {
		return nil, err
	}
	var l linearPath
	var span timeSpan
	names := toolNames{}
	skipped := skipCounter{}
	var system []string
	switch s := body.Get("system"); {
	case s.Type == gjson.String:
		if s.Str != "" {
			system = append(system, s.Str)
		}
	case s.IsArray():
		s.ForEach(func(_, b gjson.Result) bool {
			if t := b.Get("text"); t.Type == gjson.String {
				system = append(system, t.Str)
			}
			return true
		})
	}
	leading := true
	i := 0
	eachElem(list, func(el gjson.Result) bool {
		i++
		if !el.IsObject() {
			err = badInputf("message %d is not an object", i)
			return false
		}
		m, derr := session.DecodeMessage([]byte(el.Raw))
		if derr != nil {
			err = badInputf("message %d: %v", i, derr)
			return false
		}
		span.add(m.CreatedAt)
		if m.Role == session.RoleSystem && leading {
			system = append(system, contentText(&m.Content))
			return true
		}
		leading = false
		if m.Role == session.RoleTool && m.Name == "" {
			m.Name = names[m.ToolCallID]
		}
		if m.Role != session.RoleUser || !m.Content.IsBlocks {
			names.record(&m)
			l.add(m)
			return true
		}
		var rest []session.Block
		for j := range m.Content.Blocks {
			blk := &m.Content.Blocks[j]
			if blk.Type == session.BlockToolResult {
				l.add(toolMessage(blk, names[blk.ToolUseID], m.CreatedAt, skipped))
			} else {
				rest = append(rest, *blk)
			}
		}
		if len(rest) > 0 || len(m.Content.Blocks) == 0 {
			m.Content = session.BlockContent(rest...)
			if rest == nil {
				m.Content.Blocks = []session.Block{}
			}
			l.add(m)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	imp := Imported{Skipped: skipped}
	l.share(&imp.Share)
	if !hasTurns(&imp.Share) {
		return nil, errNoMessages
	}
	meta := &imp.Share.Meta
	meta.SystemPrompt = strings.Join(system, "\n\n")
	meta.CreatedAt, meta.UpdatedAt = span.first, span.last
	if body.Exists() {
		except := []string{"messages"}
		if body.Get("system").Type == gjson.String {
			except = append(except, "system") // it is the system prompt as given
		}
		meta.Extra = append(meta.Extra, importedFrom(KindAnthropic, "", objectOf(body, except...)))
	}
	return []Imported{imp}, nil
}

func textOrRaw(v gjson.Result) string {
	if !v.Exists() || v.Type == gjson.Null {
		return ""
	}
	if v.IsArray() {
		var parts []string
		v.ForEach(func(_, p gjson.Result) bool {
			if p.Type == gjson.String {
				parts = append(parts, p.Str)
			} else if t := p.Get("text"); t.Type == gjson.String {
				parts = append(parts, t.Str)
			}
			return true
		})
		return strings.Join(parts, "\n")
	}
	return v.Raw
}

func dropField(fields []session.Field, key string) []session.Field {
	out := fields[:0]
	for _, f := range fields {
		if f.Key != key {
			out = append(out, f)
		}
	}
	return out
}
