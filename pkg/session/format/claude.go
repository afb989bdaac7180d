package format

import (
	"bytes"
	"slices"
	"sort"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// Claude Code transcripts (reference/formats.md §1).
//
// Records are linked by uuid/parentUuid. Each user prompt, note and API
// response becomes one unit of the tree: the assistant lines that share a
// message.id and hang off each other are merged into one assistant message,
// and every tool_result record is attached to the unit of its call, wherever
// it sits, so parallel results and progress siblings are not forks. Records
// that map to no message (progress, unknown types, the compact boundary) are
// transparent: whatever points at them attaches to their own parent. A
// record whose parent is null or not in the file continues the conversation
// at the previous record, since hand-written files leave every parent null;
// a compact_boundary alone starts a new root, so the compaction summary
// begins the active path and the history before it stays as branches.

type ccRec struct {
	idx       int
	v         gjson.Result
	typ       string
	uuid      string
	parent    string
	sessionID string
	agentID   string
	ts        string
	sidechain bool
}

func strVal(v gjson.Result) string {
	if v.Type == gjson.String {
		return v.Str
	}
	return ""
}

// forEachLine calls fn with every non-blank line of data.
func forEachLine(data []byte, fn func(line []byte)) {
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		line = bytes.TrimSpace(line)
		if len(line) > 0 {
			fn(line)
		}
	}
}

type ccGroup struct {
	recs []*ccRec
	side bool
	up   *ccGroup // union-find parent; nil at a root
}

func (g *ccGroup) find() *ccGroup {
	for g.up != nil {
		g = g.up
	}
	return g
}

// webLoglines turns the session of Claude Code on the web,
// {"loglines":[record, …]}, into the transcript's lines.
func webLoglines(data []byte) []byte {
	doc := gjson.ParseBytes(data)
	if !doc.IsObject() || !doc.Get("loglines").IsArray() || !gjson.ValidBytes(data) {
		return data
	}
	var out []byte
	eachElem(doc.Get("loglines"), func(r gjson.Result) bool {
		out = append(append(out, compactJSON(r.Raw)...), '\n')
		return true
	})
	return out
}

func importClaude(data []byte, opt Options) ([]Imported, error) {
	data = webLoglines(data)
	var recs []*ccRec
	fileSkipped := skipCounter{}
	forEachLine(data, func(line []byte) {
		if !gjson.ValidBytes(line) {
			fileSkipped.add("(not json)")
			return
		}
		v := gjson.ParseBytes(line)
		if !v.IsObject() || v.Get("type").Type != gjson.String || v.Get("type").Str == "" {
			fileSkipped.add("(not a record)")
			return
		}
		recs = append(recs, &ccRec{
			idx: len(recs), v: v, typ: v.Get("type").Str,
			uuid: strVal(v.Get("uuid")), parent: strVal(v.Get("parentUuid")),
			sessionID: strVal(v.Get("sessionId")), agentID: strVal(v.Get("agentId")),
			ts: strVal(v.Get("timestamp")), sidechain: v.Get("isSidechain").Bool(),
		})
	})

	// A subagent's own file holds nothing but sidechain records: import it
	// as an ordinary session.
	allSide := true
	for _, r := range recs {
		if r.uuid != "" && !r.sidechain {
			allSide = false
			break
		}
	}
	isSide := func(r *ccRec) bool { return r.sidechain && !allSide }

	var groups []*ccGroup
	newGroup := func(side bool) *ccGroup {
		g := &ccGroup{side: side}
		groups = append(groups, g)
		return g
	}
	groupOf := map[*ccRec]*ccGroup{}
	byUUID := map[string]*ccRec{}
	mainBySession := map[string]*ccGroup{}
	sideByAgent := map[string]*ccGroup{}
	var lastMain, lastSide *ccGroup
	for _, r := range recs {
		if r.uuid == "" {
			continue
		}
		p := byUUID[r.parent]
		var g *ccGroup
		if isSide(r) {
			switch {
			case p != nil && groupOf[p].find().side:
				g = groupOf[p].find()
			case r.agentID != "" && sideByAgent[r.agentID] != nil:
				g = sideByAgent[r.agentID]
			case r.agentID == "" && r.parent != "" && lastSide != nil:
				g = lastSide // parent not in the file
			default:
				g = newGroup(true)
			}
			if r.agentID != "" && sideByAgent[r.agentID] == nil {
				sideByAgent[r.agentID] = g
			}
			lastSide = g
		} else {
			switch {
			case r.sessionID != "" && mainBySession[r.sessionID] != nil:
				g = mainBySession[r.sessionID].find()
			case r.sessionID == "" && p != nil && !groupOf[p].find().side:
				g = groupOf[p].find()
			case r.sessionID == "" && lastMain != nil:
				g = lastMain
			default:
				g = newGroup(false)
			}
			if r.sessionID != "" && mainBySession[r.sessionID] == nil {
				mainBySession[r.sessionID] = g
			}
			// A parent in another session id (a resumed session copies
			// its history) joins the two into one conversation.
			if p != nil {
				if pg := groupOf[p].find(); !pg.side && pg != g {
					g.up = pg
					g = pg
				}
			}
			lastMain = g
		}
		groupOf[r] = g
		byUUID[r.uuid] = r
	}
	var firstMain *ccGroup
	for _, g := range groups {
		if !g.side && g.up == nil {
			firstMain = g
			break
		}
	}
	// Records without a uuid (titles, snapshots, queue operations) go to
	// their session, or to the first one.
	for _, r := range recs {
		if r.uuid != "" {
			continue
		}
		var g *ccGroup
		if r.typ == "summary" {
			if leaf := byUUID[strVal(r.v.Get("leafUuid"))]; leaf != nil {
				g = groupOf[leaf].find()
			}
		}
		if g == nil && r.sessionID != "" && mainBySession[r.sessionID] != nil {
			g = mainBySession[r.sessionID].find()
		}
		if g == nil {
			g = firstMain
		}
		if g == nil {
			if len(groups) == 0 {
				newGroup(false)
			}
			g = groups[0].find()
		}
		groupOf[r] = g
	}
	for _, r := range recs {
		g := groupOf[r].find()
		g.recs = append(g.recs, r)
	}

	var mains, sides []Imported
	dropped := skipCounter{}
	sideRecords := 0
	for _, g := range groups {
		if g.up != nil {
			continue
		}
		sort.Slice(g.recs, func(i, j int) bool { return g.recs[i].idx < g.recs[j].idx })
		if g.side && !opt.Sidechains {
			sideRecords += len(g.recs)
			continue
		}
		imp, ok, err := buildClaude(g.recs)
		if err != nil {
			return nil, err
		}
		if !ok {
			for _, r := range g.recs {
				dropped.add(r.typ)
			}
			continue
		}
		// A subagent is named by its agent id (its records carry the
		// parent's session id), or by its first record.
		agent, root := "", ""
		for _, r := range g.recs {
			if agent == "" {
				agent = r.agentID
			}
			if root == "" {
				root = r.uuid
			}
		}
		if g.side || (allSide && agent != "") {
			imp.Parent = imp.SourceID
			imp.SourceID = agent
			if agent == "" {
				imp.SourceID = root
			}
			// A share of the subagent's session stands for the subagent,
			// not its parent.
			setImportedFromID(&imp.Share, imp.SourceID)
		}
		if g.side {
			sides = append(sides, imp)
		} else {
			mains = append(mains, imp)
		}
	}
	out := append(mains, sides...)
	if len(out) == 0 {
		return nil, errNoMessages
	}
	first := skipCounter(out[0].Skipped)
	first.merge(fileSkipped)
	first.merge(dropped)
	if sideRecords > 0 {
		first["sidechain"] += sideRecords
	}
	return out, nil
}

type ccUnit struct {
	parent   *ccUnit
	children []*ccUnit
	first    int // file index of the record that made it
	last     int // file index of the latest record mapped into it
	msg      session.Message
	calls    []string
	results  map[string][]session.Message
	msgID    string
	rec      *ccRec       // the record that made it
	lastMsg  gjson.Result // assistant: the message object of its latest line
	usage    string       // assistant: raw usage of its latest line that had one
	boundary *ccRec       // summary: the compact boundary it follows
	// user: the record's tool results became tool messages, which
	// carry its toolUseResult
	hadResults bool
	// after holds the queued prompts the model was given at this unit,
	// after its tool results (see ccBuilder.queue)
	after []session.Message
}

type ccUsage struct {
	in, out, cc, cr uint64
	hasCC, hasCR    bool
}

// responseUsage is the usage of a run's API responses, each counted once
// by its message id.
type responseUsage struct {
	byKey map[string]*ccUsage
	keys  []string
}

// add records a line of response key. One response repeats its usage on
// every line, and early lines carry a streaming snapshot: it takes the
// field-wise maximum, once.
func (r *responseUsage) add(key string, usage gjson.Result) {
	if r.byKey == nil {
		r.byKey = map[string]*ccUsage{}
	}
	acc := r.byKey[key]
	if acc == nil {
		acc = &ccUsage{}
		r.byKey[key] = acc
		r.keys = append(r.keys, key)
	}
	acc.in = max(acc.in, usage.Get("input_tokens").Uint())
	acc.out = max(acc.out, usage.Get("output_tokens").Uint())
	if v := usage.Get("cache_creation_input_tokens"); v.Type == gjson.Number {
		acc.cc, acc.hasCC = max(acc.cc, v.Uint()), true
	}
	if v := usage.Get("cache_read_input_tokens"); v.Type == gjson.Number {
		acc.cr, acc.hasCR = max(acc.cr, v.Uint()), true
	}
}

// total sums the responses; ok is false when it would not fit.
func (r *responseUsage) total() (session.Usage, bool) {
	var sum session.Usage
	for _, k := range r.keys {
		acc := r.byKey[k]
		u := session.Usage{InputTokens: acc.in, OutputTokens: acc.out}
		if acc.hasCC {
			u.CacheCreationInputTokens = u64(acc.cc)
		}
		if acc.hasCR {
			u.CacheReadInputTokens = u64(acc.cr)
		}
		if !sum.Fits(u) {
			return sum, false
		}
		sum.Add(u)
	}
	return sum, true
}

type ccBuilder struct {
	units     []*ccUnit
	unitOf    map[string]*ccUnit // uuid -> unit; nil (present) for the root
	last      *ccUnit
	lastUUID  string
	byMsgID   map[string]*ccUnit
	callUnit  map[string]*ccUnit
	names     toolNames
	responses responseUsage
	skipped   skipCounter
	span      timeSpan
	seen      map[string]*ccRec // uuid -> its first record, to drop copies of it

	summaryChild map[string]bool // compact boundary uuid -> a summary follows it
	boundaries   map[string]*ccRec

	// queued holds the prompts enqueued and not yet taken; sentAt, the
	// file indexes of the user records and queued_command attachments
	// that carry each text.
	queued []*ccRec
	sentAt map[string][]int

	cwd, sessionID, gitBranch, version, slug string
	customTitle, aiTitle, agentName, summary string
	// usageRange is set when the responses' token usage adds up past what
	// a counter holds.
	usageRange bool
}

func buildClaude(recs []*ccRec) (Imported, bool, error) {
	b := &ccBuilder{
		unitOf: map[string]*ccUnit{}, byMsgID: map[string]*ccUnit{}, callUnit: map[string]*ccUnit{},
		names: toolNames{}, skipped: skipCounter{}, seen: map[string]*ccRec{},
		summaryChild: map[string]bool{}, boundaries: map[string]*ccRec{}, sentAt: map[string][]int{},
	}
	for _, r := range recs {
		var text string
		switch r.typ {
		case "user":
			text = firstText(r.v.Get("message.content"))
		case "attachment":
			text = strVal(r.v.Get("attachment.prompt"))
		}
		if t := strings.TrimSpace(text); t != "" {
			b.sentAt[t] = append(b.sentAt[t], r.idx)
		}
	}
	for _, r := range recs {
		if r.typ == "user" && r.parent != "" && (r.v.Get("isCompactSummary").Bool() || session.IsCompactSummaryText(firstText(r.v.Get("message.content")))) {
			b.summaryChild[r.parent] = true
		}
	}
	for _, r := range recs {
		b.record(r)
	}
	b.dropQueued(len(b.queued))
	if len(b.units) == 0 {
		return Imported{Skipped: b.skipped}, false, nil
	}
	imp := b.finish()
	if b.usageRange {
		return Imported{}, false, badInputf("%s", errUsageRange)
	}
	return imp, hasTurns(&imp.Share), nil
}

func firstText(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.Str
	}
	var t string
	eachElem(c, func(b gjson.Result) bool {
		if b.Get("type").Str == "text" {
			t = b.Get("text").Str
			return false
		}
		return true
	})
	return t
}

func (b *ccBuilder) record(r *ccRec) {
	ts := b.span.add(r.ts)
	if r.ts != "" && ts == "" {
		r.ts = "" // not a time: keep it off created_at
	}
	if r.uuid != "" {
		if prev, ok := b.seen[r.uuid]; ok && sameRecord(prev, r) {
			b.skipped.add("(duplicate record)")
			return
		}
		if _, ok := b.seen[r.uuid]; !ok {
			b.seen[r.uuid] = r
		}
		b.lastUUID = r.uuid
	}
	if r.sessionID != "" {
		b.sessionID = r.sessionID
	}
	if b.cwd == "" {
		b.cwd = strVal(r.v.Get("cwd"))
	}
	if b.gitBranch == "" {
		b.gitBranch = strVal(r.v.Get("gitBranch"))
	}
	if v := strVal(r.v.Get("version")); v != "" {
		b.version = v
	}
	if s := strVal(r.v.Get("slug")); s != "" {
		b.slug = s
	}
	switch r.typ {
	case "user":
		b.sent(firstText(r.v.Get("message.content")))
		b.user(r)
	case "assistant":
		b.assistant(r)
	case "system":
		b.system(r)
	case "attachment":
		b.sent(strVal(r.v.Get("attachment.prompt")))
		b.attachment(r)
	case "queue-operation":
		b.queue(r)
	case "summary":
		if s := strVal(r.v.Get("summary")); s != "" {
			b.summary = s
		}
	case "custom-title":
		if s := strVal(r.v.Get("customTitle")); s != "" {
			b.customTitle = s
		}
	case "ai-title":
		if s := strVal(r.v.Get("aiTitle")); s != "" {
			b.aiTitle = s
		}
	case "agent-name":
		if s := strVal(r.v.Get("agentName")); s != "" {
			b.agentName = s
		} else if s := strVal(r.v.Get("name")); s != "" {
			b.agentName = s
		}
	default:
		b.skip(r, r.typ)
	}
}

// sameRecord reports a record written again: the same line, or the same
// type and message under another session id and time, as a resumed
// session copies the record it continues from. A uuid with another
// message is a record of its own.
func sameRecord(a, b *ccRec) bool {
	if a.v.Raw == b.v.Raw {
		return true
	}
	ma, mb := a.v.Get("message"), b.v.Get("message")
	return a.typ == b.typ && ma.IsObject() && mb.IsObject() && bytes.Equal(compactJSON(ma.Raw), compactJSON(mb.Raw))
}

// skip counts r and makes it a transparent link.
func (b *ccBuilder) skip(r *ccRec, key string) {
	b.skipped.add(key)
	if r.uuid != "" {
		b.unitOf[r.uuid] = b.parentUnit(r)
	}
}

func (b *ccBuilder) parentUnit(r *ccRec) *ccUnit {
	if r.parent != "" {
		if u, ok := b.unitOf[r.parent]; ok {
			return u
		}
	}
	return b.last
}

func (b *ccBuilder) newUnit(parent *ccUnit, r *ccRec, msg session.Message) *ccUnit {
	msg.CreatedAt = r.ts
	u := &ccUnit{parent: parent, first: r.idx, last: r.idx, msg: msg, rec: r}
	if parent != nil {
		parent.children = append(parent.children, u)
	}
	b.units = append(b.units, u)
	return u
}

// place records that r lives in u.
func (b *ccBuilder) place(r *ccRec, u *ccUnit) {
	if r.uuid != "" {
		b.unitOf[r.uuid] = u
	}
	u.last = max(u.last, r.idx)
	b.last = u
}

// notePrefixes are Claude Code's own markup beyond what every importer
// knows (session.IsGeneratedPromptText).
var notePrefixes = []string{"<bash-input>", "<bash-stdout>", "<bash-stderr>", "<user-memory-input>"}

// isNoteText recognises the markup Claude Code writes as user text that the
// user did not type as a prompt.
func isNoteText(t string) bool {
	if session.IsGeneratedPromptText(t) {
		return true
	}
	t = strings.TrimLeft(t, " \t\r\n")
	for _, p := range notePrefixes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// isGeneratedOrigin reads the origin newer versions put on a user record:
// anything but a person (a task notification, an automatic continuation,
// another session) did not type it.
func isGeneratedOrigin(r *ccRec) bool {
	k := r.v.Get("origin.kind")
	return k.Type == gjson.String && k.Str != "human"
}

// ccEnvelopeKnown are record members that are mapped, repeated on every
// line, or run metadata; every other member is kept on the message.
var ccEnvelopeKnown = []string{
	"type", "message", "uuid", "parentUuid", "timestamp", "sessionId", "cwd", "gitBranch",
	"version", "userType", "isSidechain", "agentId", "slug", "isMeta", "isCompactSummary",
	"requestId", "promptId", "entrypoint", "permissionMode", "thinkingMetadata", "todos",
	"sourceToolAssistantUUID", "toolUseID", "parentToolUseID", "content", "toolUseResult",
	"attachment",
}

func (b *ccBuilder) user(r *ccRec) {
	msgV := r.v.Get("message")
	content := msgV.Get("content")
	if !msgV.IsObject() || !(content.Type == gjson.String || content.IsArray()) {
		b.skip(r, "user:malformed")
		return
	}
	parent := b.parentUnit(r)
	c, _ := decodeContent(content, b.skipped)
	var rest []session.Block
	hasRest, results := !c.IsBlocks, 0
	for i := range c.Blocks {
		if c.Blocks[i].Type == session.BlockToolResult {
			results++
		} else {
			rest = append(rest, c.Blocks[i])
			hasRest = true
		}
	}
	var holder *ccUnit
	first := true
	for i := range c.Blocks {
		blk := &c.Blocks[i]
		if blk.Type != session.BlockToolResult {
			continue
		}
		tm := toolMessage(blk, b.names[blk.ToolUseID], r.ts, b.skipped)
		var src jsonObject
		src.strVal("uuid", r.uuid)
		if first {
			// toolUseResult describes the result; the other members of
			// the record go with it unless a user message takes them.
			src.raw("toolUseResult", r.v.Get("toolUseResult").Raw)
			if !hasRest {
				for _, f := range fieldsOf(r.v, ccEnvelopeKnown...) {
					src.raw(f.Key, string(f.Value))
				}
			}
			first = false
		}
		if f, ok := src.field("claude"); ok {
			tm.Extra = append(tm.Extra, f)
		}
		u := b.callUnit[blk.ToolUseID]
		if u != nil {
			u.results[blk.ToolUseID] = append(u.results[blk.ToolUseID], tm)
			u.last = max(u.last, r.idx)
		} else { // its call is not in the file
			u = b.newUnit(parent, r, tm)
			parent = u
		}
		if holder == nil {
			holder = u
		}
	}
	if hasRest {
		msg := session.Message{Role: session.RoleUser, Content: c}
		if c.IsBlocks {
			msg.Content = session.BlockContent(rest...)
		}
		text, _ := msg.AsText()
		switch {
		case r.v.Get("isCompactSummary").Bool() || session.IsCompactSummaryText(text):
			msg.Kind = session.KindSummary
		case r.v.Get("isMeta").Bool() || isNoteText(text) || isGeneratedOrigin(r):
			msg.Kind = session.KindNote
		}
		u := b.newUnit(parent, r, msg)
		u.hadResults = results > 0
		if pb := b.boundaries[r.parent]; pb != nil && msg.Kind == session.KindSummary {
			u.boundary = pb
		}
		holder = u
	}
	if holder == nil {
		b.skip(r, "user:empty")
		return
	}
	b.place(r, holder)
}

// queue follows Claude Code's prompt queue: what the user types while a
// turn runs is enqueued, then sent as a prompt of its own (a user record
// or a queued_command attachment carries it; dequeue), or removed when the
// model is given it during the turn. Versions that write no
// queued_command attachment (2.1.39,
// testdata/fixtures/claude-code/queued-prompts.jsonl) keep such a prompt
// nowhere else, so a removed prompt that no record carries becomes a user
// message after the unit the turn is at, its tool results first. A slash
// command is run, not sent, and is left out.
func (b *ccBuilder) queue(r *ccRec) {
	op := strVal(r.v.Get("operation"))
	if op == "enqueue" && strings.TrimSpace(strVal(r.v.Get("content"))) != "" {
		b.queued = append(b.queued, r) // counted when it is taken
		return
	}
	b.skipped.add("queue-operation")
	switch op {
	case "dequeue":
		b.dropQueued(1)
	case "popAll":
		b.dropQueued(len(b.queued))
	case "remove":
		// The operation does not say which prompt it takes: a task
		// notification stays queued until a user record sends it, so the
		// first prompt that no later record carries is the one.
		i := slices.IndexFunc(b.queued, func(q *ccRec) bool { return !b.carried(q) })
		if i < 0 || b.last == nil {
			b.dropQueued(1)
			return
		}
		q := b.queued[i]
		b.queued = slices.Delete(b.queued, i, i+1)
		text := strings.TrimSpace(strVal(q.v.Get("content")))
		if strings.HasPrefix(text, "/") {
			b.skipped.add("queue-operation")
			return
		}
		msg := session.Message{Role: session.RoleUser, CreatedAt: q.ts, Content: session.TextContent(strVal(q.v.Get("content")))}
		if isNoteText(text) {
			msg.Kind = session.KindNote
		}
		var o jsonObject
		for _, f := range fieldsOf(q.v, "type", "content", "timestamp", "sessionId") {
			o.raw(f.Key, string(f.Value))
		}
		o.strVal("removed", r.ts)
		if f, ok := o.field("claude"); ok {
			msg.Extra = append(msg.Extra, f)
		}
		b.last.after = append(b.last.after, msg)
	}
}

// carried reports a queued prompt that a later user record or attachment
// sends.
func (b *ccBuilder) carried(q *ccRec) bool {
	for _, at := range b.sentAt[strings.TrimSpace(strVal(q.v.Get("content")))] {
		if at > q.idx {
			return true
		}
	}
	return false
}

// dropQueued takes the first n queued prompts off the queue, counted as
// skipped: a record of their own carries them, or nothing does.
func (b *ccBuilder) dropQueued(n int) {
	n = min(n, len(b.queued))
	b.queued = b.queued[n:]
	if n > 0 {
		b.skipped["queue-operation"] += n
	}
}

// sent takes the queued prompts of text off the queue: a user record or
// an attachment sent them.
func (b *ccBuilder) sent(text string) {
	text = strings.TrimSpace(text)
	for i := 0; i < len(b.queued); i++ {
		if strings.TrimSpace(strVal(b.queued[i].v.Get("content"))) == text {
			b.queued = append(b.queued[:i:i], b.queued[i+1:]...)
			b.skipped.add("queue-operation")
			return
		}
	}
}

// attachmentText maps the attachment types that carry what the user sent
// or what the model saw to the member holding its text; the other types
// (hook responses, reminders, listings) are counted as skipped.
var attachmentText = map[string]string{
	"queued_command": "prompt", "file": "content", "directory": "content",
	"selected_lines_in_ide": "content", "edited_text_file": "snippet",
}

// attachment imports an attachment record at its place in the tree: a
// queued_command (a prompt typed while the agent was busy) as a user
// message, a task notification queued the same way as a note, and the
// content of an @-mentioned file, a directory, an editor selection or an
// edited file as a note. The attachment's other members stay under
// "claude".
func (b *ccBuilder) attachment(r *ccRec) {
	a := r.v.Get("attachment")
	typ := strVal(a.Get("type"))
	member, ok := attachmentText[typ]
	if !a.IsObject() || !ok {
		b.skip(r, "attachment:"+typ)
		return
	}
	v := a.Get(member)
	if typ == "file" && v.IsObject() {
		v = v.Get("file.content") // {type:"text", file:{filePath, content, …}}, as Read's result
	}
	c, ok := decodeContent(v, b.skipped)
	if !ok {
		b.skip(r, "attachment:"+typ)
		return
	}
	msg := session.Message{Role: session.RoleUser, Content: c}
	text, _ := msg.AsText()
	origin := a.Get("origin.kind")
	mode := strVal(a.Get("commandMode"))
	if typ != "queued_command" || (mode != "" && mode != "prompt") || (origin.Exists() && origin.Str != "human") || isNoteText(text) {
		msg.Kind = session.KindNote
	}
	b.place(r, b.newUnit(b.parentUnit(r), r, msg))
}

func (b *ccBuilder) assistant(r *ccRec) {
	msgV := r.v.Get("message")
	if !msgV.IsObject() {
		b.skip(r, "assistant:malformed")
		return
	}
	blocks := replyBlocks(msgV.Get("content"), b.skipped)
	msgID := strVal(msgV.Get("id"))
	parent := b.parentUnit(r)
	var u *ccUnit
	if g := b.byMsgID[msgID]; msgID != "" && g != nil && g == parent {
		u = g // the next line of a split response
	} else {
		u = b.newUnit(parent, r, session.Message{Role: session.RoleAssistant, Content: session.BlockContent()})
		u.msgID = msgID
		u.results = map[string][]session.Message{}
		if msgID != "" {
			b.byMsgID[msgID] = u
		}
	}
	u.msg.Content.Blocks = append(u.msg.Content.Blocks, blocks...)
	for i := range blocks {
		if blocks[i].Type == session.BlockToolUse && blocks[i].ID != "" {
			b.callUnit[blocks[i].ID] = u
			b.names[blocks[i].ID] = blocks[i].Name
			u.calls = append(u.calls, blocks[i].ID)
		}
	}
	u.lastMsg = msgV
	if usage := msgV.Get("usage"); usage.IsObject() {
		u.usage = usage.Raw
		key := msgID
		if key == "" {
			key = "\x00" + r.uuid
		}
		b.responses.add(key, usage)
	}
	b.place(r, u)
}

// replyBlocks is the content of an Anthropic-shaped reply as blocks: a
// string is one text block.
func replyBlocks(content gjson.Result, skipped skipCounter) []session.Block {
	switch {
	case content.Type == gjson.String:
		return []session.Block{{Type: session.BlockText, Text: content.Str}}
	case content.IsArray():
		return decodeBlocks(content, skipped)
	}
	return nil
}

func (b *ccBuilder) system(r *ccRec) {
	sub := strVal(r.v.Get("subtype"))
	switch sub {
	case "compact_boundary":
		b.boundaries[r.uuid] = r
		if b.summaryChild[r.uuid] {
			// The summary record that follows carries the compaction; the
			// boundary itself starts the new root.
			if r.uuid != "" {
				b.unitOf[r.uuid] = nil
			}
			return
		}
		msg := session.Message{Role: session.RoleUser, Kind: session.KindSummary, Content: session.TextContent(session.CompactedMarker)}
		b.place(r, b.newUnit(nil, r, msg))
		return
	case "local_command":
		if c := r.v.Get("content"); c.Type == gjson.String {
			msg := session.Message{Role: session.RoleUser, Kind: session.KindNote, Content: session.TextContent(c.Str)}
			b.place(r, b.newUnit(b.parentUnit(r), r, msg))
			return
		}
	}
	key := "system"
	if sub != "" {
		key += ":" + sub
	}
	b.skip(r, key)
}

// messages flattens a unit: its message, then the results of its calls in
// call order.
func (u *ccUnit) messages() []session.Message {
	out := []session.Message{u.msg}
	for _, id := range u.calls {
		out = append(out, u.results[id]...)
		delete(u.results, id) // a repeated call id gets its results once
	}
	return append(out, u.after...)
}

func (b *ccBuilder) finish() Imported {
	for _, u := range b.units {
		b.decorate(u)
	}
	// Flatten once: messages() consumes the results.
	flat := map[*ccUnit][]session.Message{}
	for _, u := range b.units {
		flat[u] = u.messages()
	}
	// The active leaf: the last record's unit, then down the most recent
	// child to a leaf.
	subLast := map[*ccUnit]int{}
	var latest func(u *ccUnit) int
	latest = func(u *ccUnit) int {
		if v, ok := subLast[u]; ok {
			return v
		}
		m := u.last
		for _, c := range u.children {
			m = max(m, latest(c))
		}
		subLast[u] = m
		return m
	}
	leaf := b.unitOf[b.lastUUID]
	if leaf == nil {
		for _, u := range b.units {
			if leaf == nil || u.last > leaf.last {
				leaf = u
			}
		}
	}
	for len(leaf.children) > 0 {
		next := leaf.children[0]
		for _, c := range leaf.children[1:] {
			if latest(c) > latest(next) {
				next = c
			}
		}
		leaf = next
	}
	path := func(u *ccUnit) []session.Message {
		var chain []*ccUnit
		for ; u != nil; u = u.parent {
			chain = append(chain, u)
		}
		var out []session.Message
		for i := len(chain) - 1; i >= 0; i-- {
			out = append(out, flat[chain[i]]...)
		}
		return out
	}
	var sh session.Share
	sh.Messages = path(leaf)
	for _, u := range b.units { // units are in file order
		if len(u.children) == 0 && u != leaf {
			sh.Branches = append(sh.Branches, session.SharedBranch{Messages: path(u)})
		}
	}

	m := &sh.Meta
	switch {
	case b.customTitle != "":
		m.Title, m.TitleSource = session.SanitizeTitle(b.customTitle), session.TitleManual
	case b.aiTitle != "":
		m.Title, m.TitleSource = session.SanitizeTitle(b.aiTitle), session.TitleManual
	case b.agentName != "":
		m.Title, m.TitleSource = session.SanitizeTitle(b.agentName), session.TitleManual
	case b.summary != "":
		m.Title, m.TitleSource = session.SanitizeTitle(b.summary), session.TitleManual
	}
	if m.Title == "" {
		m.TitleSource = ""
	}
	m.ProjectPath = b.cwd
	m.CreatedAt, m.UpdatedAt = b.span.first, b.span.last
	var fits bool
	if m.Usage, fits = b.responses.total(); !fits {
		b.usageRange = true
	}
	var src jsonObject
	if b.version != "" {
		src.strVal("version", b.version)
	}
	if b.gitBranch != "" {
		src.strVal("git_branch", b.gitBranch)
	}
	if b.slug != "" {
		src.strVal("slug", b.slug)
	}
	m.Extra = append(m.Extra, importedFrom(KindClaude, b.sessionID, src))
	return Imported{Share: sh, Skipped: b.skipped, SourceID: b.sessionID}
}

// decorate keeps the source data of u's record on its message.
func (b *ccBuilder) decorate(u *ccUnit) {
	r := u.rec
	var o jsonObject
	if u.msg.Role == session.RoleTool {
		return // made with its record's data already
	}
	o.strVal("uuid", r.uuid)
	if u.msg.Role == session.RoleAssistant && u.lastMsg.Exists() {
		u.lastMsg.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "type", "role", "content":
			case "id":
				o.raw("message_id", v.Raw)
			case "usage":
				o.raw("usage", u.usage)
			case "stop_reason", "stop_sequence":
				if v.Type != gjson.Null {
					o.raw(k.Str, v.Raw)
				}
			default:
				o.raw(k.Str, v.Raw)
			}
			return true
		})
		if id := strVal(r.v.Get("requestId")); id != "" {
			o.strVal("request_id", id)
		}
	}
	for _, f := range fieldsOf(r.v, ccEnvelopeKnown...) {
		o.raw(f.Key, string(f.Value))
	}
	if r.typ == "user" && !u.hadResults {
		o.raw("toolUseResult", r.v.Get("toolUseResult").Raw)
	}
	if a := r.v.Get("attachment"); r.typ == "attachment" {
		rest := objectOf(a, attachmentText[strVal(a.Get("type"))])
		o.raw("attachment", string(rest.done()))
	}
	if br := u.boundary; br != nil {
		var bo jsonObject
		if br.uuid != "" {
			bo.strVal("uuid", br.uuid)
		}
		if br.ts != "" {
			bo.strVal("timestamp", br.ts)
		}
		for _, f := range fieldsOf(br.v, ccEnvelopeKnown...) {
			bo.raw(f.Key, string(f.Value))
		}
		o.key("compact_boundary")
		o.b = append(o.b, bo.done()...)
	}
	if f, ok := o.field("claude"); ok {
		u.msg.Extra = append(u.msg.Extra, f)
	}
}
