package format

import (
	"cmp"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// The stream-json output of `claude -p --output-format stream-json
// --verbose` and of `cursor-agent --print --output-format stream-json`.
//
// Both print a system/init line (session_id, cwd, model), user and
// assistant lines whose message is an Anthropic-shaped message, and a
// result line (Claude Code: the run's usage and total_cost_usd). Claude
// Code's stream carries no prompt unless it was run with
// --replay-user-messages, and no times; cursor-agent echoes the prompt,
// streams thinking (thinking delta/completed lines) and tool calls
// (tool_call started/completed lines, the tool named by the key of its
// tool_call object), and stamps most lines with timestamp_ms. Lines are in
// the order things happened: each assistant line of one message id (Claude
// Code writes a response a block a line) adds to one message; a user
// line's tool results become tool messages.

// isStreamJSON reports whether a JSONL input is such a stream: its first
// record is an init or a message line spelt session_id, where transcripts
// write sessionId.
func isStreamJSON(data []byte) bool {
	v, ok := firstRecord(data)
	typ := v.Get("type").Str
	return ok && v.Get("session_id").Type == gjson.String && !v.Get("sessionId").Exists() &&
		(typ == "system" && v.Get("subtype").Str == "init" || typ == "user" || typ == "assistant" || typ == "result")
}

type streamBuilder struct {
	err       error // the first line whose usage wc cannot count
	l         linearPath
	skipped   skipCounter
	span      timeSpan
	names     toolNames
	open      int    // index of the assistant message lines add to; -1: none
	openID    string // its message id
	thinking  []byte // cursor-agent's thinking so far, for the next reply
	thinkAt   string
	calls     map[string]int // tool call id -> index of its assistant message
	responses responseUsage
	result    session.Usage
	cost      *float64
	hasTotal  bool
	agent     Kind
	id, cwd   string
	src       jsonObject
}

func importStreamJSON(data []byte, agent Kind) ([]Imported, error) {
	b := &streamBuilder{skipped: skipCounter{}, names: toolNames{}, open: -1, calls: map[string]int{}, agent: agent}
	eachRecord(data, b.skipped, b.line)
	if b.err != nil {
		return nil, badInputf("%v", b.err)
	}
	sh, err := b.l.finish(false)
	if err != nil {
		return nil, err
	}
	m := &sh.Meta
	m.ProjectPath = b.cwd
	m.CreatedAt, m.UpdatedAt = b.span.first, b.span.last
	if b.hasTotal {
		m.Usage = b.result // the run's own total: the lines carry streaming snapshots
	} else {
		var fits bool
		if m.Usage, fits = b.responses.total(); !fits {
			return nil, badInputf("%s", errUsageRange)
		}
	}
	if b.cost != nil {
		m.Cost.Add(b.cost)
	}
	m.Extra = append(m.Extra, importedFrom(b.agent, b.id, b.src))
	return []Imported{{Share: sh, Skipped: b.skipped, SourceID: b.id}}, nil
}

// lineTime is a line's time: cursor-agent's timestamp_ms, or an RFC 3339
// timestamp.
func (b *streamBuilder) lineTime(v gjson.Result) string {
	if t := millisTime(v.Get("timestamp_ms")); t != "" {
		return b.span.add(t)
	}
	return b.span.add(strVal(v.Get("timestamp")))
}

func (b *streamBuilder) line(v gjson.Result) {
	ts := b.lineTime(v)
	if b.id == "" {
		b.id = strVal(v.Get("session_id"))
	}
	typ, sub := v.Get("type").Str, strVal(v.Get("subtype"))
	if typ == "thinking" || typ == "tool_call" || v.Get("timestamp_ms").Exists() {
		b.agent = KindCursor
	}
	switch typ {
	case "system":
		if sub != "init" {
			b.skipped.add("system:" + sub)
			return
		}
		b.cwd = strVal(v.Get("cwd"))
		b.src.raw("init", objectJSON(v, "type", "subtype", "session_id", "cwd"))
	case "user":
		b.user(v, ts)
	case "assistant":
		b.assistant(v, ts)
	case "thinking":
		if t := v.Get("text"); t.Type == gjson.String {
			if b.thinking == nil {
				b.thinkAt = ts
			}
			b.thinking = append(b.thinking, t.Str...)
		}
	case "tool_call":
		b.toolCall(v, sub, ts)
	case "result":
		if u := v.Get("usage"); u.IsObject() {
			total, err := anthropicUsage(u)
			if err != nil {
				b.err = cmp.Or(b.err, err)
				return
			}
			b.result, b.hasTotal = *total, true
		}
		if c := v.Get("total_cost_usd"); c.Type == gjson.Number {
			usd := c.Num
			b.cost = &usd
		}
		b.src.raw("result", objectJSON(v, "type", "session_id", "usage", "total_cost_usd", "uuid"))
	default:
		b.skipped.add(typ)
	}
}

// reply is the assistant message lines of message id add to (a new one
// when id is another's or empty), with the thinking streamed before it.
func (b *streamBuilder) reply(id, ts string) *session.Message {
	if b.open < 0 || id == "" || id != b.openID {
		b.l.add(session.Message{Role: session.RoleAssistant, CreatedAt: ts, Content: session.BlockContent()})
		b.open, b.openID = len(b.l.msgs)-1, id
	}
	m := &b.l.msgs[b.open]
	if b.thinking != nil {
		m.Content.Blocks = append(m.Content.Blocks, session.Block{Type: session.BlockThinking, Text: string(b.thinking)})
		if m.CreatedAt == "" {
			m.CreatedAt = b.thinkAt
		}
		b.thinking = nil
	}
	return m
}

func (b *streamBuilder) user(v gjson.Result, ts string) {
	c, ok := decodeContent(v.Get("message.content"), b.skipped)
	if !ok {
		b.skipped.add("user:malformed")
		return
	}
	b.open = -1
	var rest []session.Block
	for i := range c.Blocks {
		blk := &c.Blocks[i]
		if blk.Type != session.BlockToolResult {
			rest = append(rest, *blk)
			continue
		}
		tm := toolMessage(blk, b.names[blk.ToolUseID], ts, b.skipped)
		if r := v.Get("tool_use_result"); r.Exists() {
			tm.Extra = append(tm.Extra, session.Field{Key: string(b.agent), Value: compactJSON(`{"tool_use_result":` + r.Raw + `}`)})
		}
		b.l.add(tm)
	}
	if c.IsBlocks && len(rest) == 0 {
		return
	}
	msg := session.Message{Role: session.RoleUser, CreatedAt: ts, Content: c}
	if c.IsBlocks {
		msg.Content = session.BlockContent(rest...)
	}
	if text, _ := msg.AsText(); isNoteText(text) {
		msg.Kind = session.KindNote
	}
	b.l.add(msg)
}

func (b *streamBuilder) assistant(v gjson.Result, ts string) {
	msgV := v.Get("message")
	blocks := replyBlocks(msgV.Get("content"), b.skipped)
	id := strVal(msgV.Get("id"))
	if id == "" {
		id = strVal(v.Get("model_call_id"))
	}
	m := b.reply(id, ts)
	m.Content.Blocks = append(m.Content.Blocks, blocks...)
	b.names.record(m)
	var o jsonObject
	msgV.ForEach(func(k, val gjson.Result) bool {
		switch k.Str {
		case "type", "role", "content", "usage":
		default:
			o.raw(k.Str, val.Raw)
		}
		return true
	})
	for _, f := range fieldsOf(v, "type", "message", "session_id", "timestamp_ms") {
		o.raw(f.Key, string(f.Value))
	}
	if f, ok := o.field(string(b.agent)); ok {
		m.Extra = append(dropField(m.Extra, f.Key), f)
	}
	if usage := msgV.Get("usage"); usage.IsObject() {
		key := id
		if key == "" {
			key = "\x00" + ts + string(rune(len(b.responses.keys)))
		}
		b.responses.add(key, usage)
	}
}

// toolCall maps cursor-agent's tool_call lines: started is the call, in
// the reply of its model call, completed its result.
func (b *streamBuilder) toolCall(v gjson.Result, sub, ts string) {
	id := strVal(v.Get("call_id"))
	var name string
	var body gjson.Result
	v.Get("tool_call").ForEach(func(k, val gjson.Result) bool {
		name, body = k.Str, val
		return false
	})
	switch sub {
	case "started":
		m := b.reply(strVal(v.Get("model_call_id")), ts)
		call := session.Block{Type: session.BlockToolUse, ID: id, Name: name, Input: []byte("{}")}
		if a := body.Get("args"); a.IsObject() {
			call.Input = compactJSON(a.Raw)
		}
		m.Content.Blocks = append(m.Content.Blocks, call)
		b.names[id] = name
		b.calls[id] = b.open
	case "completed":
		b.open = -1
		res := body.Get("result")
		tm := session.Message{Role: session.RoleTool, ToolCallID: id, Name: b.names[id], CreatedAt: ts, Content: session.TextContent(string(compactJSON(res.Raw)))}
		if res.Get("success").Exists() && len(res.Get("success").Raw) > 0 {
			if out := res.Get("success.stdout"); out.Type == gjson.String {
				tm.Content = session.TextContent(out.Str)
			}
		}
		if !res.Exists() {
			tm.Content = session.TextContent("")
		}
		var o jsonObject
		o.raw("result", res.Raw)
		if f, ok := o.field(string(KindCursor)); ok {
			tm.Extra = append(tm.Extra, f)
		}
		b.addResult(tm)
	default:
		b.skipped.add("tool_call:" + sub)
	}
}

// addResult puts a tool message among the results that follow its call's
// message, in call order: cursor-agent reports parallel calls as they
// complete.
func (b *streamBuilder) addResult(tm session.Message) {
	at, ok := b.calls[tm.ToolCallID]
	if !ok || at >= len(b.l.msgs) {
		b.l.add(tm)
		return
	}
	order := map[string]int{}
	for i, blk := range b.l.msgs[at].Content.Blocks {
		if blk.Type == session.BlockToolUse {
			order[blk.ID] = i
		}
	}
	i := at + 1
	for i < len(b.l.msgs) && b.l.msgs[i].Role == session.RoleTool && order[b.l.msgs[i].ToolCallID] < order[tm.ToolCallID] {
		i++
	}
	b.l.msgs = append(b.l.msgs, session.Message{})
	copy(b.l.msgs[i+1:], b.l.msgs[i:])
	b.l.msgs[i] = tm
}
