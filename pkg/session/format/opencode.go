package format

import (
	"strings"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// opencode exports (reference/formats.md §3).
//
// Each opencode message becomes one message, in array order. Text,
// reasoning, tool and image parts become blocks; a tool part is split into
// a tooluse block and a tool message after the assistant message. The
// bookkeeping parts (step-start, step-finish, patch, snapshot, file
// mentions, agent, subtask, compaction) and the message info are kept under
// the message's "opencode" member. An assistant step that failed before it
// produced anything is counted in Skipped as "message:aborted" (or
// "message:error"). A compaction summary (an assistant message with
// summary: true) becomes a summary carrier that starts a new active path,
// and a pending revert keeps the reverted messages as a branch only.

// ocKeptParts are kept whole under the message's "opencode" member.
var ocKeptParts = map[string]bool{
	"step-start": true, "step-finish": true, "patch": true, "snapshot": true, "file": true,
	"agent": true, "subtask": true, "compaction": true, "retry": true,
}

type ocBuilder struct {
	l       linearPath
	skipped skipCounter
	span    timeSpan
	names   toolNames
	pos     map[string]int // message id -> index in l.msgs when it was added
	usage   session.Usage
	// usageRange is set when the steps' token usage adds up past what a
	// counter holds.
	usageRange bool
}

func importOpencode(data []byte) ([]Imported, error) {
	if !gjson.ValidBytes(data) {
		return nil, badInputf("opencode export is not valid json")
	}
	doc := gjson.ParseBytes(data)
	msgs := doc.Get("messages")
	if !doc.IsObject() || !msgs.IsArray() {
		return nil, badInputf("an opencode export needs info and a messages array")
	}
	info := doc.Get("info")
	b := &ocBuilder{skipped: skipCounter{}, names: toolNames{}, pos: map[string]int{}}
	b.span.add(millisTime(info.Get("time.created")))
	b.span.add(millisTime(info.Get("time.updated")))
	eachElem(msgs, func(m gjson.Result) bool {
		b.message(m)
		return true
	})
	// A pending revert: the messages from revert.messageID on are undone.
	if id := strVal(info.Get("revert.messageID")); id != "" {
		if i, ok := b.pos[id]; ok && i < len(b.l.msgs) {
			b.l.stash()
			b.l.msgs = append([]session.Message(nil), b.l.msgs[:i]...)
		}
	}
	sh, err := b.l.finish(b.usageRange)
	if err != nil {
		return nil, err
	}
	m := &sh.Meta
	if t := strVal(info.Get("title")); t != "" && !strings.HasPrefix(t, "New session") && !strings.HasPrefix(t, "Child session") {
		m.Title, m.TitleSource = session.SanitizeTitle(t), session.TitleManual
		if m.Title == "" {
			m.TitleSource = ""
		}
	}
	m.ProjectPath = strVal(info.Get("directory"))
	m.CreatedAt, m.UpdatedAt = b.span.first, b.span.last
	m.Usage = b.usage
	id := strVal(info.Get("id"))
	m.Extra = append(m.Extra, importedFrom(KindOpencode, id, objectOf(info, "id", "directory", "title", "time")))
	return []Imported{{Share: sh, Skipped: b.skipped, SourceID: id}}, nil
}

func (b *ocBuilder) message(m gjson.Result) {
	info := m.Get("info")
	if !info.IsObject() {
		b.skipped.add("(not a message)")
		return
	}
	role := strVal(info.Get("role"))
	created := b.span.add(millisTime(info.Get("time.created")))
	completed := b.span.add(millisTime(info.Get("time.completed")))
	var blocks []session.Block
	var tools []session.Message
	var kept []string
	compaction := false
	eachElem(m.Get("parts"), func(p gjson.Result) bool {
		if !p.IsObject() {
			b.skipped.add("(invalid block)")
			return true
		}
		t := strVal(p.Get("type"))
		b.span.add(millisTime(p.Get("time.start")))
		b.span.add(millisTime(p.Get("time.end")))
		switch {
		case t == "text" && p.Get("text").Type == gjson.String:
			blocks = append(blocks, session.Block{Type: session.BlockText, Text: p.Get("text").Str, Extra: fieldsOf(p, "type", "text", "sessionID", "messageID")})
		case t == "reasoning" && p.Get("text").Type == gjson.String:
			blk := session.Block{Type: session.BlockThinking, Text: p.Get("text").Str, Extra: fieldsOf(p, "type", "text", "sessionID", "messageID")}
			if sig := p.Get("metadata.anthropic.signature"); sig.Type == gjson.String {
				blk.Signature, blk.HasSignature = sig.Str, true
			}
			blocks = append(blocks, blk)
		case t == "tool":
			blk, result, ok := b.tool(p, completed)
			blocks = append(blocks, blk)
			if ok {
				tools = append(tools, result)
			}
		case t == "file" && strings.HasPrefix(strVal(p.Get("mime")), "image/"):
			if blk, ok := imageFromURL(strVal(p.Get("url"))); ok {
				blk.Extra = fieldsOf(p, "type", "url", "sessionID", "messageID")
				blocks = append(blocks, blk)
				return true
			}
			kept = append(kept, partJSON(p))
		default:
			if t == "compaction" {
				compaction = true
			}
			if !ocKeptParts[t] {
				b.skipped.add("part:" + t)
			}
			kept = append(kept, partJSON(p))
		}
		return true
	})
	var src jsonObject
	for _, f := range fieldsOf(info, "role", "sessionID") {
		src.raw(f.Key, string(f.Value))
	}
	if len(kept) > 0 {
		src.raw("parts", "["+strings.Join(kept, ",")+"]")
	}
	msg := session.Message{CreatedAt: created, Content: session.BlockContent(blocks...)}
	if blocks == nil {
		msg.Content = session.BlockContent()
	}
	if f, ok := src.field("opencode"); ok {
		msg.Extra = append(msg.Extra, f)
	}
	id := strVal(info.Get("id"))
	switch role {
	case "user":
		if len(blocks) == 0 {
			if !compaction {
				b.skipped.add("message:empty")
			}
			return // a compaction request, or nothing the model saw
		}
		msg.Role = session.RoleUser
		b.pos[id] = len(b.l.msgs)
		b.l.add(msg)
	case "assistant":
		b.addUsage(info, m.Get("parts"))
		if len(blocks) == 0 {
			if name := strVal(info.Get("error.name")); name == "MessageAbortedError" {
				b.skipped.add("message:aborted")
			} else if name != "" {
				b.skipped.add("message:error")
			} else {
				b.skipped.add("message:empty")
			}
			return
		}
		msg.Role = session.RoleAssistant
		if info.Get("summary").Type == gjson.True && len(tools) == 0 && !hasCalls(&msg) {
			// The compaction summary: the model's context starts here.
			msg = session.Message{Role: session.RoleUser, Kind: session.KindSummary, CreatedAt: created, Content: session.TextContent(contentText(&msg.Content)), Extra: msg.Extra}
			b.l.stash()
			b.l.msgs = nil
			b.pos = map[string]int{} // a revert cannot reach behind it
		}
		b.pos[id] = len(b.l.msgs)
		b.names.record(&msg)
		b.l.add(msg)
		for _, t := range tools {
			b.l.add(t)
		}
	default:
		b.skipped.add("message:" + role)
	}
}

// tool splits a tool part into its call and, once it finished, its result.
func (b *ocBuilder) tool(p gjson.Result, completed string) (session.Block, session.Message, bool) {
	state := p.Get("state")
	id, name := strVal(p.Get("callID")), strVal(p.Get("tool"))
	input := state.Get("input")
	blk := session.Block{Type: session.BlockToolUse, ID: id, Name: name, Input: []byte("{}"), Extra: fieldsOf(p, "type", "callID", "tool", "state", "sessionID", "messageID")}
	if input.IsObject() || input.IsArray() {
		blk.Input = compactJSON(input.Raw)
	}
	status := strVal(state.Get("status"))
	if status != "completed" && status != "error" {
		return blk, session.Message{}, false // pending or running: unanswered
	}
	m := session.Message{Role: session.RoleTool, ToolCallID: id, Name: name, IsError: status == "error"}
	out := state.Get("output")
	if status == "error" {
		out = state.Get("error")
	}
	switch {
	case out.Type == gjson.String:
		m.Content = session.TextContent(out.Str)
	case out.Exists() && out.Type != gjson.Null:
		m.Content = session.TextContent(out.Raw)
	default:
		m.Content = session.TextContent("")
	}
	m.CreatedAt = b.span.add(millisTime(state.Get("time.end")))
	if m.CreatedAt == "" {
		m.CreatedAt = completed
	}
	var src jsonObject
	if pid := strVal(p.Get("id")); pid != "" {
		src.strVal("part_id", pid)
	}
	for _, f := range fieldsOf(state, "input", "output", "error") {
		src.raw(f.Key, string(f.Value))
	}
	if f, ok := src.field("opencode"); ok {
		m.Extra = append(m.Extra, f)
	}
	return blk, m, true
}

// addUsage adds one step's tokens: the message's, or (when it has none) its
// step-finish parts', which repeat them.
func (b *ocBuilder) addUsage(info, parts gjson.Result) {
	add := func(t gjson.Result) {
		u := session.Usage{InputTokens: t.Get("input").Uint(), OutputTokens: t.Get("output").Uint()}
		if c := t.Get("cache"); c.IsObject() {
			u.CacheReadInputTokens = optU(c.Get("read"))
			u.CacheCreationInputTokens = optU(c.Get("write"))
		}
		if !b.usage.Fits(u) {
			b.usageRange = true
			return
		}
		b.usage.Add(u)
	}
	if t := info.Get("tokens"); t.IsObject() {
		add(t)
		return
	}
	eachElem(parts, func(p gjson.Result) bool {
		if strVal(p.Get("type")) == "step-finish" && p.Get("tokens").IsObject() {
			add(p.Get("tokens"))
		}
		return true
	})
}

// partJSON is a part without the ids the message already gives.
func partJSON(p gjson.Result) string {
	o := objectOf(p, "sessionID", "messageID")
	return string(o.done())
}

func hasCalls(m *session.Message) bool {
	for i := range m.Content.Blocks {
		if m.Content.Blocks[i].Type == session.BlockToolUse {
			return true
		}
	}
	return false
}

// OpencodeMessage is one message of opencode's storage tree (before 1.2:
// storage/message/<ses>/<msg>.json and its parts,
// storage/part/<msg>/<prt>.json), in id order.
type OpencodeMessage struct {
	Info  []byte
	Parts [][]byte
}

// ImportOpencodeTree imports one session of opencode's storage tree: its
// session file (storage/session/<project>/<ses>.json) and its messages.
// The files hold the objects an export gathers, so they are read as the
// export they make.
func ImportOpencodeTree(session []byte, msgs []OpencodeMessage) ([]Imported, error) {
	if !gjson.ValidBytes(session) {
		return nil, badInputf("the session file is not valid json")
	}
	doc := append([]byte(`{"info":`), session...)
	doc = append(doc, `,"messages":[`...)
	bad := 0
	for i, m := range msgs {
		if !gjson.ValidBytes(m.Info) {
			return nil, badInputf("message %d is not valid json", i+1)
		}
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = append(append(append(doc, `{"info":`...), m.Info...), `,"parts":[`...)
		n := 0
		for _, p := range m.Parts {
			if !gjson.ValidBytes(p) {
				bad++ // a part written half: the rest of the message stands
				continue
			}
			if n > 0 {
				doc = append(doc, ',')
			}
			doc = append(doc, p...)
			n++
		}
		doc = append(doc, "]}"...)
	}
	doc = append(doc, "]}"...)
	out, err := Import(KindOpencode, doc, Options{})
	if err == nil && bad > 0 {
		out[0].Skipped["(not json)"] += bad
	}
	return out, err
}
