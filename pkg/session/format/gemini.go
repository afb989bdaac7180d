package format

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// Gemini CLI chat recordings (reference/formats.md §6) and its
// stream-json output.
//
// A recording is one ConversationRecord JSON document (the older layout,
// ~/.gemini/tmp/<hash>/chats/session-*.json) or JSONL: a metadata line
// ({sessionId, projectHash, …}), then message records, "$set" lines that
// update the metadata and "$rewindTo" lines that undo the messages from
// the one named on. A message record written again under the same id
// replaces the earlier one where that one stood (a reply gains its tool
// calls that way). Gemini CLI itself reads the files so.
//
// A "gemini" message becomes an assistant message: its thoughts as
// thinking blocks, its text, then a tooluse block per tool call, each
// followed by a tool message with the call's result. "user" messages are
// user turns; "info", "error" and "warning" (what the CLI showed, never
// sent to the model) are notes. A rewind keeps the undone messages as a
// branch. Token counts follow the Gemini API: the prompt count includes
// cached and tool-prompt tokens aside, the thoughts are output.

// geminiRetryPrompt is the user message Gemini CLI sends itself to retry a
// reply that came back invalid (packages/core/src/core/client.ts).
const geminiRetryPrompt = "System: Please continue."

func isGeminiRecord(v gjson.Result) bool {
	return v.IsObject() && v.Get("sessionId").Type == gjson.String && v.Get("projectHash").Type == gjson.String
}

type gmBuilder struct {
	l       linearPath
	skipped skipCounter
	span    timeSpan
	usage   session.Usage
	names   toolNames
	// counted holds the messages whose tokens are in usage: a message on
	// both a rewound path and the active one counts once.
	counted map[string]bool
	// usageRange is set when the messages' token usage adds up past what
	// a counter holds.
	usageRange bool
}

func importGemini(data []byte) ([]Imported, error) {
	if gjson.ValidBytes(data) {
		doc := gjson.ParseBytes(data)
		if isGeminiRecord(doc) && doc.Get("messages").IsArray() {
			var msgs []gjson.Result
			eachElem(doc.Get("messages"), func(m gjson.Result) bool {
				msgs = append(msgs, m)
				return true
			})
			return geminiSession(doc, msgs, nil, skipCounter{})
		}
	}
	meta := map[string]string{} // member -> raw JSON, the latest wins
	var order []string
	setMeta := func(v gjson.Result) {
		v.ForEach(func(k, val gjson.Result) bool {
			if _, ok := meta[k.Str]; !ok {
				order = append(order, k.Str)
			}
			meta[k.Str] = val.Raw
			return true
		})
	}
	skipped := skipCounter{}
	var msgs []gjson.Result
	pos := map[string]int{}
	var rewound [][]gjson.Result
	stream := false
	forEachLine(data, func(line []byte) {
		if !gjson.ValidBytes(line) {
			skipped.add("(not json)")
			return
		}
		v := gjson.ParseBytes(line)
		switch {
		case !v.IsObject():
			skipped.add("(not a record)")
		case v.Get("$rewindTo").Type == gjson.String:
			at, ok := pos[v.Get("$rewindTo").Str]
			if !ok {
				at = 0 // Gemini CLI clears everything for an id it does not know
			}
			rewound = append(rewound, append([]gjson.Result(nil), msgs...))
			for _, m := range msgs[at:] {
				delete(pos, m.Get("id").Str)
			}
			msgs = msgs[:at]
		case v.Get("$set").IsObject():
			setMeta(v.Get("$set"))
		case v.Get("id").Type == gjson.String:
			id := v.Get("id").Str
			if i, ok := pos[id]; ok {
				msgs[i] = v
				return
			}
			pos[id] = len(msgs)
			msgs = append(msgs, v)
		case isGeminiRecord(v):
			setMeta(v)
		case v.Get("type").Str == "init" && v.Get("session_id").Exists():
			stream = true
		default:
			skipped.add("(not a record)")
		}
	})
	if stream {
		return importGeminiStream(data)
	}
	var o jsonObject
	for _, k := range order {
		o.raw(k, meta[k])
	}
	return geminiSession(gjson.ParseBytes(o.done()), msgs, rewound, skipped)
}

func geminiSession(doc gjson.Result, msgs []gjson.Result, rewound [][]gjson.Result, skipped skipCounter) ([]Imported, error) {
	b := &gmBuilder{skipped: skipped, names: toolNames{}, counted: map[string]bool{}}
	b.span.add(strVal(doc.Get("startTime")))
	b.span.add(strVal(doc.Get("lastUpdated")))
	for _, old := range rewound {
		// A rewound path is kept as a branch; its usage was spent too.
		for _, m := range old {
			b.message(m)
		}
		b.l.stash()
		b.l.msgs = nil
	}
	for _, m := range msgs {
		b.message(m)
	}
	sh, err := b.l.finish(b.usageRange)
	if err != nil {
		return nil, err
	}
	m := &sh.Meta
	if s := strVal(doc.Get("summary")); s != "" {
		m.Title, m.TitleSource = session.SanitizeTitle(s), session.TitleGenerated
		if m.Title == "" {
			m.TitleSource = ""
		}
	}
	m.CreatedAt, m.UpdatedAt = b.span.first, b.span.last
	m.Usage = b.usage
	id := strVal(doc.Get("sessionId"))
	m.Extra = append(m.Extra, importedFrom(KindGemini, id, objectOf(doc, "sessionId", "messages", "summary")))
	return []Imported{{Share: sh, Skipped: b.skipped, SourceID: id}}, nil
}

// geminiParts maps a PartListUnion (a string, a part or a list of them)
// to blocks: text parts stay text, inline data images become image
// blocks, and any other part is kept whole.
func geminiParts(v gjson.Result, skipped skipCounter) []session.Block {
	var out []session.Block
	add := func(p gjson.Result) {
		switch {
		case p.Type == gjson.String:
			out = append(out, session.Block{Type: session.BlockText, Text: p.Str})
		case p.Get("text").Type == gjson.String && p.Get("thought").Type == gjson.True:
			out = append(out, session.Block{Type: session.BlockThinking, Text: p.Get("text").Str, Extra: fieldsOf(p, "text", "thought")})
		case p.Get("text").Type == gjson.String:
			out = append(out, session.Block{Type: session.BlockText, Text: p.Get("text").Str, Extra: fieldsOf(p, "text")})
		case p.Get("inlineData").IsObject() && strings.HasPrefix(p.Get("inlineData.mimeType").Str, "image/"):
			var src jsonObject
			src.strVal("type", "base64")
			src.strVal("media_type", p.Get("inlineData.mimeType").Str)
			src.strVal("data", p.Get("inlineData.data").Str)
			out = append(out, session.Block{Type: session.BlockImage, Source: src.done()})
		case p.IsObject():
			out = append(out, session.Block{Type: "gemini_part", Raw: compactJSON(`{"type":"gemini_part","part":` + p.Raw + `}`)})
		default:
			skipped.add("(invalid block)")
		}
	}
	if v.IsArray() {
		eachElem(v, func(p gjson.Result) bool {
			add(p)
			return true
		})
	} else if v.Exists() && v.Type != gjson.Null {
		add(v)
	}
	return out
}

func (b *gmBuilder) message(v gjson.Result) {
	ts := b.span.add(strVal(v.Get("timestamp")))
	typ := strVal(v.Get("type"))
	blocks := geminiParts(v.Get("content"), b.skipped)
	var keep jsonObject
	for _, f := range fieldsOf(v, "type", "content", "toolCalls", "thoughts", "tokens", "timestamp") {
		keep.raw(f.Key, string(f.Value))
	}
	if typ != "gemini" {
		m := session.Message{Role: session.RoleUser, CreatedAt: ts, Content: geminiContent(blocks)}
		if text, _ := m.AsText(); typ != "user" || text == geminiRetryPrompt {
			m.Kind = session.KindNote
		}
		if typ != "user" {
			keep.strVal("type", typ)
		}
		if f, ok := keep.field("gemini"); ok {
			m.Extra = append(m.Extra, f)
		}
		b.l.add(m)
		return
	}
	var out []session.Block
	calls := map[string]int{} // toolCalls id -> its block in out, once made
	eachElem(v.Get("toolCalls"), func(c gjson.Result) bool {
		calls[strVal(c.Get("id"))] = -1
		return true
	})
	thoughtParts := slices.ContainsFunc(blocks, func(b session.Block) bool { return b.Type == session.BlockThinking })
	if thoughtParts {
		// The content's thought parts are the thinking; the CLI's
		// summaries of them stay on the message.
		keep.raw("thoughts", v.Get("thoughts").Raw)
	} else {
		eachElem(v.Get("thoughts"), func(t gjson.Result) bool {
			out = append(out, session.Block{Type: session.BlockThinking, Text: strVal(t.Get("description")), Extra: fieldsOf(t, "description")})
			return true
		})
	}
	var callParts map[string][]session.Field // call id -> the other members of its functionCall part
	for _, blk := range blocks {
		if blk.Type == session.BlockText && blk.Text == "" {
			continue // a reply that is all tool calls has content ""
		}
		if part := gjson.GetBytes(blk.Raw, "part"); blk.Type == "gemini_part" && part.Get("functionCall").IsObject() {
			// A functionCall part that toolCalls records is that call.
			if id := strVal(part.Get("functionCall.id")); id != "" {
				if _, ok := calls[id]; ok {
					if callParts == nil {
						callParts = map[string][]session.Field{}
					}
					callParts[id] = fieldsOf(part, "functionCall")
					continue
				}
			}
		}
		out = append(out, blk)
	}
	var results []session.Message
	eachElem(v.Get("toolCalls"), func(c gjson.Result) bool {
		call := session.Block{Type: session.BlockToolUse, ID: strVal(c.Get("id")), Name: strVal(c.Get("name")), Input: []byte("{}"),
			Extra: fieldsOf(c, "id", "name", "args", "result", "status", "timestamp", "resultDisplay")}
		if f := callParts[call.ID]; len(f) > 0 {
			var o jsonObject
			for _, x := range f {
				o.raw(x.Key, string(x.Value))
			}
			call.Extra = append(call.Extra, session.Field{Key: "part", Value: o.done()})
		}
		if a := c.Get("args"); a.IsObject() {
			call.Input = compactJSON(a.Raw)
		}
		out = append(out, call)
		status := strVal(c.Get("status"))
		if !c.Get("result").Exists() && status != "error" && status != "cancelled" {
			return true // still running: unanswered
		}
		tm := session.Message{Role: session.RoleTool, ToolCallID: call.ID, Name: call.Name, IsError: status == "error" || status == "cancelled",
			CreatedAt: b.span.add(strVal(c.Get("timestamp"))), Content: geminiResult(c.Get("result"), call.ID, b.skipped)}
		if tm.CreatedAt == "" {
			tm.CreatedAt = ts
		}
		var o jsonObject
		o.raw("status", c.Get("status").Raw)
		o.raw("resultDisplay", c.Get("resultDisplay").Raw)
		if f, ok := o.field("gemini"); ok {
			tm.Extra = append(tm.Extra, f)
		}
		results = append(results, tm)
		return true
	})
	if t := v.Get("tokens"); t.IsObject() {
		keep.raw("tokens", t.Raw)
	}
	if t := v.Get("tokens"); t.IsObject() && !b.counted[v.Get("id").Str] {
		b.counted[v.Get("id").Str] = true
		in, cached := t.Get("input").Uint(), t.Get("cached").Uint()
		cached = min(cached, in)
		u := session.Usage{InputTokens: in - cached + t.Get("tool").Uint(), OutputTokens: t.Get("output").Uint() + t.Get("thoughts").Uint(), CacheReadInputTokens: u64(cached)}
		if !b.usage.Fits(u) {
			b.usageRange = true
		} else {
			b.usage.Add(u)
		}
	}
	if out == nil {
		out = []session.Block{}
	}
	m := session.Message{Role: session.RoleAssistant, CreatedAt: ts, Content: session.BlockContent(out...)}
	if f, ok := keep.field("gemini"); ok {
		m.Extra = append(m.Extra, f)
	}
	b.l.add(m)
	for _, r := range results {
		b.l.add(r)
	}
}

func geminiContent(blocks []session.Block) session.Content {
	if len(blocks) == 1 && blocks[0].Type == session.BlockText && len(blocks[0].Extra) == 0 {
		return session.TextContent(blocks[0].Text)
	}
	if blocks == nil {
		return session.TextContent("")
	}
	return session.BlockContent(blocks...)
}

// geminiResult is a tool result's content: the output of its function
// responses (response.output, or the response's JSON), other parts as
// blocks. When some responses name call id, the others are other calls'
// (Gemini CLI has recorded a batch's responses on each of its calls).
func geminiResult(v gjson.Result, id string, skipped skipCounter) session.Content {
	var texts []string
	var blocks []session.Block
	own := id != "" && slices.ContainsFunc(v.Array(), func(p gjson.Result) bool { return p.Get("functionResponse.id").Str == id })
	eachElem(v, func(p gjson.Result) bool {
		if r := p.Get("functionResponse.response"); r.Exists() {
			if own && p.Get("functionResponse.id").Str != id {
				return true
			}
			switch out := r.Get("output"); {
			case out.Type == gjson.String:
				texts = append(texts, out.Str)
			case r.Get("error").Type == gjson.String:
				texts = append(texts, r.Get("error").Str)
			default:
				texts = append(texts, string(compactJSON(r.Raw)))
			}
			return true
		}
		blocks = append(blocks, geminiParts(p, skipped)...)
		return true
	})
	if v.Type == gjson.String {
		texts = append(texts, v.Str)
	}
	if len(blocks) == 0 {
		return session.TextContent(strings.Join(texts, "\n"))
	}
	for i := len(texts) - 1; i >= 0; i-- {
		blocks = append([]session.Block{{Type: session.BlockText, Text: texts[i]}}, blocks...)
	}
	return session.BlockContent(blocks...)
}

// importGeminiStream reads `gemini --output-format stream-json`: init,
// message (the prompt, and the reply in deltas), tool_use, tool_result,
// error and result lines with their stats.
func importGeminiStream(data []byte) ([]Imported, error) {
	var l linearPath
	skipped := skipCounter{}
	var span timeSpan
	names := toolNames{}
	var id string
	var src jsonObject
	var usage session.Usage
	open := -1 // the assistant message deltas and calls go to
	forEachLine(data, func(line []byte) {
		if !gjson.ValidBytes(line) {
			skipped.add("(not json)")
			return
		}
		v := gjson.ParseBytes(line)
		ts := span.add(strVal(v.Get("timestamp")))
		switch typ := strVal(v.Get("type")); typ {
		case "init":
			id = strVal(v.Get("session_id"))
			src = objectOf(v, "type", "session_id", "timestamp")
		case "message":
			text := strVal(v.Get("content"))
			if strVal(v.Get("role")) == "user" {
				open = -1
				l.add(session.Message{Role: session.RoleUser, CreatedAt: ts, Content: session.TextContent(text)})
				return
			}
			if open < 0 {
				l.add(session.Message{Role: session.RoleAssistant, CreatedAt: ts, Content: session.BlockContent()})
				open = len(l.msgs) - 1
			}
			m := &l.msgs[open]
			if n := len(m.Content.Blocks); v.Get("delta").Bool() && n > 0 && m.Content.Blocks[n-1].Type == session.BlockText {
				m.Content.Blocks[n-1].Text += text
			} else {
				m.Content.Blocks = append(m.Content.Blocks, session.Block{Type: session.BlockText, Text: text})
			}
		case "tool_use":
			if open < 0 {
				l.add(session.Message{Role: session.RoleAssistant, CreatedAt: ts, Content: session.BlockContent()})
				open = len(l.msgs) - 1
			}
			call := session.Block{Type: session.BlockToolUse, ID: strVal(v.Get("tool_id")), Name: strVal(v.Get("tool_name")), Input: []byte("{}")}
			if p := v.Get("parameters"); p.IsObject() {
				call.Input = compactJSON(p.Raw)
			}
			names[call.ID] = call.Name
			l.msgs[open].Content.Blocks = append(l.msgs[open].Content.Blocks, call)
		case "tool_result":
			open = -1
			callID := strVal(v.Get("tool_id"))
			text := strVal(v.Get("output"))
			if e := v.Get("error.message"); e.Type == gjson.String && text == "" {
				text = e.Str
			}
			l.add(session.Message{Role: session.RoleTool, ToolCallID: callID, Name: names[callID], CreatedAt: ts,
				IsError: strVal(v.Get("status")) == "error", Content: session.TextContent(text), Extra: fieldsOf(v, "type", "tool_id", "output", "timestamp", "status")})
		case "result":
			if s := v.Get("stats"); s.IsObject() {
				cached := s.Get("cached").Uint()
				usage = session.Usage{InputTokens: s.Get("input").Uint(), OutputTokens: s.Get("output_tokens").Uint(), CacheReadInputTokens: u64(cached)}
			}
			rest := objectOf(v, "type", "timestamp")
			src.raw("result", string(rest.done()))
		case "error":
			open = -1
			l.add(session.Message{Role: session.RoleUser, Kind: session.KindNote, CreatedAt: ts, Content: session.TextContent(strVal(v.Get("message"))),
				Extra: fieldsOf(v, "type", "message", "timestamp")})
		default:
			skipped.add(typ)
		}
	})
	var sh session.Share
	l.share(&sh)
	if !hasTurns(&sh) {
		return nil, errNoMessages
	}
	sh.Meta.CreatedAt, sh.Meta.UpdatedAt = span.first, span.last
	sh.Meta.Usage = usage
	sh.Meta.Extra = append(sh.Meta.Extra, importedFrom(KindGemini, id, src))
	return []Imported{{Share: sh, Skipped: skipped, SourceID: id}}, nil
}
