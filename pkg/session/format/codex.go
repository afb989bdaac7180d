package format

import (
	"regexp"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// Codex rollouts (reference/formats.md §2).
//
// Messages come from response_item lines; event_msg lines repeat their
// text and are used to tell the typed prompt from injected context, to find
// turn boundaries and for usage. A user_message event that no user item
// repeats (Codex Desktop, filtered rollouts) is the prompt itself and
// becomes a user message where it stands; a rollout with no assistant item
// (a multi-agent subagent's) takes its replies from agent_message events
// too. An image prompt's item wraps each image in "<image name=[Image #N]>"
// and "</image>" texts, which the event leaves out; they are ignored when
// the two are compared. The items of one model step (reasoning,
// assistant text, calls) become one assistant message; a turn_context line
// or any input item ends the step. Developer messages become system-role
// messages where they stand, and base_instructions the system prompt.
// thread_rolled_back and compacted keep the old path as a branch.

type cxBuilder struct {
	l         linearPath
	open      int // index of the assistant message items are added to; -1: none
	lastAsst  int // index of the latest assistant message; -1: none
	names     toolNames
	skipped   skipCounter
	span      timeSpan
	prompts   map[string]int // typed prompts from user_message events, by key
	hasEvents bool
	// eventPrompts holds the lines (by index) of user_message events that
	// no user item repeats: they are the prompts.
	eventPrompts map[int]bool
	// eventReplies: no assistant item at all, so agent_message and
	// agent_reasoning events carry the replies.
	eventReplies bool
	lineIdx      int
	turnStarts   []int
	pending      bool // a task started; the next message opens the turn
	model        string
	turnID       string
	prevTotal    string
	total        gjson.Result
	sessionID    string
	cwd          string
	system       string
	src          jsonObject
}

func importCodex(data []byte) ([]Imported, error) {
	b := &cxBuilder{open: -1, lastAsst: -1, names: toolNames{}, skipped: skipCounter{}, prompts: map[string]int{}, eventPrompts: map[int]bool{}}
	var lines []gjson.Result
	itemPrompts := map[string]int{} // user items, by key
	var events []int                // user_message lines
	assistantItems := false
	eachRecord(data, b.skipped, func(v gjson.Result) {
		lines = append(lines, v)
		p := v.Get("payload")
		switch v.Get("type").Str {
		case "event_msg":
			if p.Get("type").Str == "user_message" {
				events = append(events, len(lines)-1)
			}
		case "response_item":
			if p.Get("type").Str == "message" {
				switch p.Get("role").Str {
				case "user":
					c := codexContent(p.Get("content"), skipCounter{})
					itemPrompts[itemPromptKey(&c)]++
				case "assistant":
					assistantItems = true
				}
			}
		}
	})
	for _, i := range events {
		b.hasEvents = true
		key := promptKey(lines[i].Get("payload.message").Str)
		if itemPrompts[key] > 0 {
			itemPrompts[key]--
			b.prompts[key]++
		} else {
			b.eventPrompts[i] = true
		}
	}
	b.eventReplies = !assistantItems
	for i, v := range lines {
		b.lineIdx = i
		b.line(v)
	}
	sh, err := b.l.finish(false)
	if err != nil {
		return nil, err
	}
	m := &sh.Meta
	m.ProjectPath = b.cwd
	m.SystemPrompt = b.system
	m.CreatedAt, m.UpdatedAt = b.span.first, b.span.last
	if t := b.total; t.IsObject() {
		// OpenAI counts cached input inside input; wc counts it apart.
		in, cached := t.Get("input_tokens").Uint(), t.Get("cached_input_tokens").Uint()
		cached = min(cached, in)
		m.Usage = session.Usage{InputTokens: in - cached, OutputTokens: t.Get("output_tokens").Uint(), CacheReadInputTokens: u64(cached)}
	}
	m.Extra = append(m.Extra, importedFrom(KindCodex, b.sessionID, b.src))
	return []Imported{{Share: sh, Skipped: b.skipped, SourceID: b.sessionID}}, nil
}

// redactedMarker is compiled on first use: compiled when the package
// loads, it would cost every command's start, not only Codex imports.
var redactedMarker = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\[REDACTED_[A-Z_]+ (len=\d+ sha=[0-9a-f]+)\]$`)
})

// imageTag matches the texts that wrap an image in a prompt's item:
// "<image name=[Image #1]>" or, for an image without a label, "<image>",
// then "</image>" (codex-rs wraps each image so).
var imageTag = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`<image(?: name=[^>]*)?>|</image>`)
})

// itemPromptKey is promptKey of a user item's text, less the texts that
// wrap its images: codex-rs writes each image as an opening text, the
// image and "</image>", which a redacted rollout turns into markers.
func itemPromptKey(c *session.Content) string {
	if !c.IsBlocks {
		return promptKey(c.Text)
	}
	tag := func(i int) bool {
		if i < 0 || i >= len(c.Blocks) || c.Blocks[i].Type != session.BlockText {
			return false
		}
		t := strings.TrimSpace(c.Blocks[i].Text)
		return imageTag().ReplaceAllString(t, "") == "" || redactedMarker().MatchString(t)
	}
	isImage := func(i int) bool { return i >= 0 && i < len(c.Blocks) && c.Blocks[i].Type == session.BlockImage }
	var parts []string
	for i := range c.Blocks {
		wraps := isImage(i+1) && tag(i) && tag(i+2) || isImage(i-1) && tag(i) && tag(i-2)
		if c.Blocks[i].Type == session.BlockText && !wraps {
			parts = append(parts, c.Blocks[i].Text)
		}
	}
	return promptKey(strings.Join(parts, "\n"))
}

// promptKey compares a user item with a user_message event: equal text
// once image tags are dropped, or the same redaction marker whatever its
// kind (TEXT in the item, MESSAGE in the event).
func promptKey(s string) string {
	if strings.Contains(s, "image") {
		s = imageTag().ReplaceAllString(s, "")
	}
	s = strings.TrimSpace(s)
	if m := redactedMarker().FindStringSubmatch(s); m != nil {
		return "\x00" + m[1]
	}
	return s
}

var codexContextPrefixes = []string{
	"<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<permissions instructions>",
	"<collaboration_mode>", "<turn_aborted>", "<INSTRUCTIONS>",
}

func (b *cxBuilder) isPrompt(c *session.Content) bool {
	if b.hasEvents {
		k := itemPromptKey(c)
		if b.prompts[k] > 0 {
			b.prompts[k]--
			return true
		}
		return false
	}
	t := strings.TrimLeft(contentText(c), " \t\r\n")
	for _, p := range codexContextPrefixes {
		if strings.HasPrefix(t, p) {
			return false
		}
	}
	return true
}

func (b *cxBuilder) line(v gjson.Result) {
	ts := b.span.add(strVal(v.Get("timestamp")))
	p := v.Get("payload")
	switch typ := v.Get("type").Str; typ {
	case "session_meta":
		b.sessionMeta(p)
	case "turn_context":
		b.open = -1
		if s := strVal(p.Get("model")); s != "" {
			b.model = s
		}
		b.turnID = strVal(p.Get("turn_id"))
		if c := strVal(p.Get("cwd")); c != "" && b.cwd == "" {
			b.cwd = c
		}
	case "response_item":
		b.item(p, ts)
	case "event_msg":
		b.event(p, ts)
	case "compacted":
		b.compacted(p, ts)
	default:
		b.skipped.add(typ)
	}
}

func (b *cxBuilder) sessionMeta(p gjson.Result) {
	// The first session_meta is this session's; later ones (a resumed or
	// forked history) only fill what is missing.
	first := b.sessionID == ""
	if first {
		b.sessionID = strVal(p.Get("id"))
		if b.sessionID == "" {
			b.sessionID = strVal(p.Get("session_id"))
		}
		b.src = objectOf(p, "id", "session_id", "timestamp", "cwd", "instructions", "base_instructions")
	}
	b.span.add(strVal(p.Get("timestamp")))
	if c := strVal(p.Get("cwd")); c != "" && b.cwd == "" {
		b.cwd = c
	}
	if b.system == "" {
		b.system = strVal(p.Get("base_instructions.text"))
		if b.system == "" {
			b.system = strVal(p.Get("instructions"))
		}
	}
}

// add appends a message; a pending turn starts at it.
func (b *cxBuilder) add(m session.Message) {
	if b.pending {
		b.turnStarts = append(b.turnStarts, len(b.l.msgs))
		b.pending = false
	}
	b.l.add(m)
}

// block adds a block to the open assistant message, opening one if needed.
func (b *cxBuilder) block(blk session.Block, ts string) {
	if b.open < 0 {
		m := session.Message{Role: session.RoleAssistant, Content: session.BlockContent(), CreatedAt: ts}
		var o jsonObject
		if b.model != "" {
			o.strVal("model", b.model)
		}
		if b.turnID != "" {
			o.strVal("turn_id", b.turnID)
		}
		if f, ok := o.field("codex"); ok {
			m.Extra = append(m.Extra, f)
		}
		b.add(m)
		b.open = len(b.l.msgs) - 1
		b.lastAsst = b.open
	}
	m := &b.l.msgs[b.open]
	m.Content.Blocks = append(m.Content.Blocks, blk)
	if blk.Type == session.BlockToolUse && blk.ID != "" {
		b.names[blk.ID] = blk.Name
	}
}

func (b *cxBuilder) item(p gjson.Result, ts string) {
	switch typ := strVal(p.Get("type")); typ {
	case "message":
		switch role := strVal(p.Get("role")); role {
		case "assistant":
			blocks := codexParts(p.Get("content"), b.skipped)
			extra := fieldsOf(p, "type", "role", "content")
			if len(blocks) > 0 {
				blocks[0].Extra = append(blocks[0].Extra, extra...)
			}
			for _, blk := range blocks {
				b.block(blk, ts)
			}
		case "user", "developer", "system":
			b.open = -1
			m := session.Message{Role: session.RoleUser, CreatedAt: ts, Content: codexContent(p.Get("content"), b.skipped)}
			m.Extra = fieldsOf(p, "type", "role", "content")
			if role == "user" {
				if !b.isPrompt(&m.Content) {
					m.Kind = session.KindNote
				}
			} else {
				m.Role = session.RoleSystem
			}
			b.add(m)
		default:
			b.skipped.add("response_item:message:" + role)
		}
	case "reasoning":
		var summary []string
		eachElem(p.Get("summary"), func(s gjson.Result) bool {
			if t := s.Get("text"); t.Type == gjson.String {
				summary = append(summary, t.Str)
			}
			return true
		})
		except := []string{"type", "summary"}
		if p.Get("content").Type == gjson.Null {
			except = append(except, "content")
		}
		b.block(session.Block{Type: session.BlockThinking, Text: strings.Join(summary, "\n\n"), Extra: fieldsOf(p, except...)}, ts)
	case "function_call", "custom_tool_call", "local_shell_call":
		blk := session.Block{Type: session.BlockToolUse, ID: strVal(p.Get("call_id")), Name: strVal(p.Get("name"))}
		switch typ {
		case "function_call":
			blk.Input = toolInput(p.Get("arguments"))
			blk.Extra = fieldsOf(p, "type", "call_id", "name", "arguments")
		case "custom_tool_call":
			blk.Input = toolInput(p.Get("input"))
			blk.Extra = append(fieldsOf(p, "type", "call_id", "name", "input"), session.Field{Key: "item_type", Value: jsonString(typ)})
		default:
			if blk.Name == "" {
				blk.Name = "local_shell"
			}
			blk.Input = toolInput(p.Get("action"))
			blk.Extra = append(fieldsOf(p, "type", "call_id", "name", "action"), session.Field{Key: "item_type", Value: jsonString(typ)})
		}
		if blk.ID == "" {
			blk.ID = strVal(p.Get("id"))
		}
		b.block(blk, ts)
	case "function_call_output", "custom_tool_call_output":
		b.open = -1
		id := strVal(p.Get("call_id"))
		m := session.Message{Role: session.RoleTool, ToolCallID: id, Name: b.names[id], CreatedAt: ts}
		out := p.Get("output")
		switch {
		case out.Type == gjson.String:
			m.Content = session.TextContent(out.Str)
		case out.IsArray():
			m.Content = codexContent(out, b.skipped)
		case out.IsObject() && out.Get("content").Type == gjson.String:
			m.Content = session.TextContent(out.Get("content").Str)
			m.IsError = out.Get("success").Type == gjson.False
		case out.Exists():
			m.Content = session.TextContent(out.Raw)
		}
		m.Extra = fieldsOf(p, "type", "call_id", "output")
		if typ != "function_call_output" {
			m.Extra = append(m.Extra, session.Field{Key: "item_type", Value: jsonString(typ)})
		}
		b.add(m)
	default:
		if strings.HasSuffix(typ, "_call") { // server-side tools: kept whole
			b.block(session.Block{Type: typ, Raw: compactJSON(p.Raw)}, ts)
			return
		}
		b.skipped.add("response_item:" + typ)
	}
}

// toolInput is a call's input: parsed JSON, {} for nothing, or the text as
// a JSON string when it does not parse (as in the redacted fixtures).
func toolInput(v gjson.Result) []byte {
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return []byte("{}")
	case v.Type == gjson.String && strings.TrimSpace(v.Str) == "":
		return []byte("{}")
	case v.Type == gjson.String && gjson.Valid(v.Str):
		return compactJSON(v.Str)
	case v.Type == gjson.String:
		return jsonString(v.Str)
	}
	return compactJSON(v.Raw)
}

// codexParts maps Responses API content parts to blocks.
func codexParts(list gjson.Result, skipped skipCounter) []session.Block {
	var out []session.Block
	if list.Type == gjson.String {
		return []session.Block{{Type: session.BlockText, Text: list.Str}}
	}
	eachElem(list, func(part gjson.Result) bool {
		t := strVal(part.Get("type"))
		switch {
		case part.Type == gjson.String:
			out = append(out, session.Block{Type: session.BlockText, Text: part.Str})
		case (t == "input_text" || t == "output_text" || t == "text") && part.Get("text").Type == gjson.String:
			// input_text or output_text: the role says which
			out = append(out, session.Block{Type: session.BlockText, Text: part.Get("text").Str, Extra: fieldsOf(part, "type", "text")})
		case t == "input_image":
			if blk, ok := imageFromURL(strVal(part.Get("image_url"))); ok {
				blk.Extra = fieldsOf(part, "type", "image_url")
				out = append(out, blk)
				return true
			}
			fallthrough
		default: // other part types (refusal, input_file, …): kept whole
			out = append(out, decodeBlocks(gjson.Parse("["+part.Raw+"]"), skipped)...)
		}
		return true
	})
	return out
}

// codexContent is the content of an input message: plain text when it is
// one text part, blocks otherwise.
func codexContent(list gjson.Result, skipped skipCounter) session.Content {
	blocks := codexParts(list, skipped)
	if len(blocks) == 1 && blocks[0].Type == session.BlockText && len(blocks[0].Extra) == 0 {
		return session.TextContent(blocks[0].Text)
	}
	if blocks == nil {
		blocks = []session.Block{}
	}
	return session.BlockContent(blocks...)
}

// imageFromURL makes an image block from a data: or http(s) URL.
func imageFromURL(url string) (session.Block, bool) {
	if url == "" {
		return session.Block{}, false
	}
	var src jsonObject
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		head, data, ok := strings.Cut(rest, ",")
		media, isB64 := strings.CutSuffix(head, ";base64")
		if !ok || !isB64 {
			return session.Block{}, false
		}
		src.strVal("type", "base64")
		src.strVal("media_type", media)
		src.strVal("data", data)
	} else {
		src.strVal("type", "url")
		src.strVal("url", url)
	}
	return session.Block{Type: session.BlockImage, Source: src.done()}, true
}

func (b *cxBuilder) event(p gjson.Result, ts string) {
	switch typ := strVal(p.Get("type")); typ {
	case "token_count":
		total := p.Get("info.total_token_usage")
		if !total.IsObject() {
			return // the first snapshot carries rate limits only
		}
		raw := string(compactJSON(total.Raw))
		if raw == b.prevTotal {
			return // the same cumulative snapshot, written again
		}
		b.prevTotal, b.total = raw, total
		if last := p.Get("info.last_token_usage"); last.IsObject() && b.lastAsst >= 0 && b.lastAsst < len(b.l.msgs) {
			m := &b.l.msgs[b.lastAsst]
			m.Extra = addMember(m.Extra, "codex", "usage", last.Raw)
		}
	case "user_message":
		if b.eventPrompts[b.lineIdx] {
			b.eventPrompt(p, ts)
		}
	case "agent_message", "agent_reasoning":
		blockType, member := session.BlockText, "message"
		if typ == "agent_reasoning" {
			blockType, member = session.BlockThinking, "text"
		}
		if !b.eventReplies {
			b.skipped.add("event_msg:" + typ)
			return
		}
		if t := p.Get(member); t.Type == gjson.String {
			b.block(session.Block{Type: blockType, Text: t.Str, Extra: fieldsOf(p, "type", member)}, ts)
		}
	case "task_started":
		b.open = -1
		b.pending = true
	case "thread_rolled_back":
		b.rollback(int(p.Get("num_turns").Int()))
	default:
		b.skipped.add("event_msg:" + typ)
	}
}

// eventPrompt adds the prompt of a user_message event that no item
// repeats: its text and its images (data URLs), the rest kept under
// "codex".
func (b *cxBuilder) eventPrompt(p gjson.Result, ts string) {
	b.open = -1
	var blocks []session.Block
	if t := p.Get("message"); t.Type == gjson.String && t.Str != "" {
		blocks = append(blocks, session.Block{Type: session.BlockText, Text: t.Str})
	}
	eachElem(p.Get("images"), func(img gjson.Result) bool {
		if blk, ok := imageFromURL(strVal(img)); ok {
			blocks = append(blocks, blk)
		} else {
			b.skipped.add("(invalid block)")
		}
		return true
	})
	m := session.Message{Role: session.RoleUser, CreatedAt: ts, Content: session.BlockContent(blocks...)}
	if len(blocks) == 1 && blocks[0].Type == session.BlockText {
		m.Content = session.TextContent(blocks[0].Text)
	} else if blocks == nil {
		m.Content = session.TextContent("")
	}
	var o jsonObject
	o.strVal("item_type", "user_message")
	for _, f := range fieldsOf(p, "type", "message", "images") {
		o.raw(f.Key, string(f.Value))
	}
	f, _ := o.field("codex")
	m.Extra = append(m.Extra, f)
	b.add(m)
}

// rollback takes the last n turns off the active path and keeps the path
// before it as a branch.
func (b *cxBuilder) rollback(n int) {
	b.open = -1
	if n <= 0 || len(b.turnStarts) == 0 {
		return
	}
	n = min(n, len(b.turnStarts))
	cut := b.turnStarts[len(b.turnStarts)-n]
	b.l.stash()
	b.l.msgs = append([]session.Message(nil), b.l.msgs[:cut]...)
	b.turnStarts = b.turnStarts[:len(b.turnStarts)-n]
	if b.lastAsst >= cut {
		b.lastAsst = -1
	}
}

// compacted replaces the active path: with replacement_history when the
// line has it, otherwise with what Codex rebuilds (the context before the
// first turn, the typed prompts, and the summary). The old path stays as a
// branch.
func (b *cxBuilder) compacted(p gjson.Result, ts string) {
	b.open = -1
	old := b.l.msgs
	b.l.stash()
	b.l.msgs = nil
	b.lastAsst = -1
	summary := strVal(p.Get("message"))
	if hist := p.Get("replacement_history"); hist.IsArray() {
		eachElem(hist, func(item gjson.Result) bool {
			b.item(item, ts)
			return true
		})
		b.open = -1
		marked := summary == ""
		for i := range b.l.msgs {
			m := &b.l.msgs[i]
			if !marked && m.Role == session.RoleUser && strings.Contains(contentText(&m.Content), summary) {
				m.Kind, marked = session.KindSummary, true
			}
		}
		if !marked {
			b.l.add(session.Message{Role: session.RoleUser, Kind: session.KindSummary, Content: session.TextContent(summary), CreatedAt: ts})
		}
	} else {
		first := len(old)
		if len(b.turnStarts) > 0 {
			first = b.turnStarts[0]
		}
		b.l.msgs = append(b.l.msgs, old[:first]...)
		for _, m := range old[first:] {
			if m.Role == session.RoleUser && m.Kind == session.KindNone {
				b.l.msgs = append(b.l.msgs, m)
			}
		}
		b.l.add(session.Message{Role: session.RoleUser, Kind: session.KindSummary, Content: session.TextContent(summary), CreatedAt: ts})
	}
	b.turnStarts = nil
	b.pending = false
}

// addMember sets key in the object member name of extra (creating it).
// An existing key becomes an array of its values. key is a plain name,
// which sjson takes as its path.
func addMember(extra []session.Field, name, key, raw string) []session.Field {
	value := []byte(compactJSON(raw))
	for i := range extra {
		f := &extra[i]
		if f.Key != name {
			continue
		}
		path := key
		switch old := gjson.GetBytes(f.Value, key); {
		case old.IsArray():
			path = key + ".-1" // append
		case old.Exists():
			value = append(append(append(append([]byte{'['}, old.Raw...), ','), value...), ']')
		}
		if v, err := sjson.SetRawBytes(f.Value, path, value); err == nil {
			f.Value = v
		}
		return extra
	}
	var o jsonObject
	o.raw(key, raw)
	f, _ := o.field(name)
	return append(extra, f)
}

// isCodexExec reports the event stream of `codex exec --json`: its first
// record is a thread, turn or item event.
func isCodexExec(data []byte) bool {
	v, ok := firstRecord(data)
	t := v.Get("type").Str
	return ok && (strings.HasPrefix(t, "thread.") || strings.HasPrefix(t, "turn.") || strings.HasPrefix(t, "item."))
}

// importCodexExec reads `codex exec --json` (codex-rs exec_events.rs):
// thread.started names the thread; each completed item adds to the turn's
// reply: agent_message text, reasoning thinking, and command_execution,
// file_change and mcp_tool_call a tooluse block and a tool message with
// its output; turn.completed carries the turn's usage (OpenAI's: cached
// input counted inside input). The prompt is not in the stream. An item
// that started and never completed is an unanswered call; web searches,
// to-do lists and plans are kept whole; errors are notes.
func importCodexExec(data []byte) ([]Imported, error) {
	var l linearPath
	skipped := skipCounter{}
	names := toolNames{}
	var id string
	var usage session.Usage
	open := -1
	reply := func() *session.Message {
		if open < 0 {
			l.add(session.Message{Role: session.RoleAssistant, Content: session.BlockContent()})
			open = len(l.msgs) - 1
		}
		return &l.msgs[open]
	}
	started := map[string]gjson.Result{}
	var startOrder []string
	done := map[string]bool{}
	note := func(text string, v gjson.Result) {
		open = -1
		l.add(session.Message{Role: session.RoleUser, Kind: session.KindNote, Content: session.TextContent(text), Extra: fieldsOf(v, "message")})
	}
	call := func(item gjson.Result, finished bool) {
		itemID := strVal(item.Get("id"))
		blk := session.Block{Type: session.BlockToolUse, ID: itemID, Name: strVal(item.Get("type"))}
		var out session.Content
		isErr := false
		var input jsonObject
		status := strVal(item.Get("status"))
		switch blk.Name {
		case "command_execution":
			input.raw("command", item.Get("command").Raw)
			out = session.TextContent(strVal(item.Get("aggregated_output")))
			code := item.Get("exit_code")
			isErr = status == "failed" || status == "declined" || (code.Type == gjson.Number && code.Int() != 0)
		case "file_change":
			input.raw("changes", item.Get("changes").Raw)
			out = session.TextContent(status)
			isErr = status == "failed"
		case "mcp_tool_call":
			blk.Name = strVal(item.Get("tool"))
			if a := item.Get("arguments"); a.IsObject() {
				blk.Input = compactJSON(a.Raw)
			}
			blk.Extra = []session.Field{{Key: "server", Value: jsonString(strVal(item.Get("server")))}}
			if e := item.Get("error.message"); e.Type == gjson.String {
				out, isErr = session.TextContent(e.Str), true
			} else {
				c := session.BlockContent(decodeBlocks(item.Get("result.content"), skipped)...)
				if t := contentText(&c); len(c.Blocks) > 0 && allText(c.Blocks) {
					c = session.TextContent(t)
				}
				out = c
			}
			isErr = isErr || status == "failed"
		}
		if blk.Input == nil {
			blk.Input = input.done()
		}
		m := reply()
		m.Content.Blocks = append(m.Content.Blocks, blk)
		names[blk.ID] = blk.Name
		if !finished {
			return
		}
		open = -1
		tm := session.Message{Role: session.RoleTool, ToolCallID: blk.ID, Name: blk.Name, IsError: isErr, Content: out}
		var o jsonObject
		o.strVal("status", status)
		if code := item.Get("exit_code"); code.Exists() {
			o.raw("exit_code", code.Raw)
		}
		if f, ok := o.field("codex"); ok {
			tm.Extra = append(tm.Extra, f)
		}
		l.add(tm)
	}
	forEachLine(data, func(line []byte) {
		if !gjson.ValidBytes(line) {
			skipped.add("(not json)")
			return
		}
		v := gjson.ParseBytes(line)
		switch typ := strVal(v.Get("type")); typ {
		case "thread.started":
			id = strVal(v.Get("thread_id"))
		case "turn.started":
			open = -1
		case "turn.completed":
			if u := v.Get("usage"); u.IsObject() {
				in, cached := u.Get("input_tokens").Uint(), u.Get("cached_input_tokens").Uint()
				cached = min(cached, in)
				usage.Add(session.Usage{InputTokens: in - cached, OutputTokens: u.Get("output_tokens").Uint(), CacheReadInputTokens: u64(cached)})
			}
		case "turn.failed":
			note(strVal(v.Get("error.message")), v.Get("error"))
		case "error":
			note(strVal(v.Get("message")), v)
		case "item.started", "item.updated":
			item := v.Get("item")
			itemID := strVal(item.Get("id"))
			if _, ok := started[itemID]; !ok {
				startOrder = append(startOrder, itemID)
			}
			started[itemID] = item
		case "item.completed":
			item := v.Get("item")
			done[strVal(item.Get("id"))] = true
			switch it := strVal(item.Get("type")); it {
			case "agent_message":
				m := reply()
				m.Content.Blocks = append(m.Content.Blocks, session.Block{Type: session.BlockText, Text: strVal(item.Get("text"))})
			case "reasoning":
				m := reply()
				m.Content.Blocks = append(m.Content.Blocks, session.Block{Type: session.BlockThinking, Text: strVal(item.Get("text"))})
			case "command_execution", "file_change", "mcp_tool_call":
				call(item, true)
			case "error":
				note(strVal(item.Get("message")), item)
			default: // web_search, todo_list, plan, collab_tool_call, …: kept whole
				m := reply()
				m.Content.Blocks = append(m.Content.Blocks, session.Block{Type: "codex_" + it, Raw: compactJSON(`{"type":` + string(jsonString("codex_"+it)) + `,"item":` + item.Raw + `}`)})
			}
		default:
			skipped.add(typ)
		}
	})
	for _, itemID := range startOrder {
		if item := started[itemID]; !done[itemID] {
			switch strVal(item.Get("type")) {
			case "command_execution", "file_change", "mcp_tool_call":
				call(item, false)
			}
		}
	}
	var sh session.Share
	l.share(&sh)
	if !hasTurns(&sh) {
		return nil, errNoMessages
	}
	sh.Meta.Usage = usage
	sh.Meta.Extra = append(sh.Meta.Extra, importedFrom(KindCodex, id, jsonObject{}))
	return []Imported{{Share: sh, Skipped: skipped, SourceID: id}}, nil
}

func allText(blocks []session.Block) bool {
	for i := range blocks {
		if blocks[i].Type != session.BlockText {
			return false
		}
	}
	return true
}
