package session

import (
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Compaction constants (reference §2.1).
const (
	PruneKeepRecentTools       = 4
	MinKeepMessages            = 4
	SummaryTokenSlack          = 256
	DroppedTranscriptMaxChars  = 12_000
	FullTranscriptMaxChars     = 48_000
	SpillHeadChars             = 400
	SpillMark                  = "full output saved: "
	BlobRefPrefix              = "wc-blob:"
	summaryGoalMaxChars        = 120
	summaryListMax             = 8
	summaryGoalsMax            = 3
	transcriptMinPartialChars  = 32
	pathMinBytes, pathMaxBytes = 3, 200
)

// CompactOutcome is whycodes' CompactOutcome.
type CompactOutcome struct {
	TokensBefore      uint64 `json:"tokens_before"`
	TokensAfter       uint64 `json:"tokens_after"`
	MessagesBefore    uint64 `json:"messages_before"`
	MessagesAfter     uint64 `json:"messages_after"`
	DroppedTranscript string `json:"dropped_transcript,omitempty"`
}

// Reduced reports whether tokens or messages went down.
func (o CompactOutcome) Reduced() bool {
	return o.TokensAfter < o.TokensBefore || o.MessagesAfter < o.MessagesBefore
}

// StillOver reports a result still above a positive threshold.
func (o CompactOutcome) StillOver(t uint64) bool { return t > 0 && o.TokensAfter > t }

// Failed is still over without any reduction: compaction cannot help.
func (o CompactOutcome) Failed(t uint64) bool { return o.StillOver(t) && !o.Reduced() }

// DroppedMessages reports whether a prefix was dropped.
func (o CompactOutcome) DroppedMessages() bool { return o.DroppedTranscript != "" }

// PathTokens is the estimate of a system prompt and messages.
func PathTokens(system string, msgs []Message) uint64 {
	t := EstimateTokens(system)
	for i := range msgs {
		t += MessageTokens(&msgs[i])
	}
	return t
}

// capBody caps one text field to max chars and reports whether it changed.
// A cut whose notice has as many chars as it removes, or more, is not made:
// a cap pass never grows a path (whycodes makes it, and counts it only when
// the byte length changed).
func capBody(s *string, max int) int {
	out, cut, shorter := capToolText(*s, max)
	if !cut || !shorter {
		return 0
	}
	*s = out
	return 1
}

// ownBlocks gives m a block slice of its own before it is edited, so that
// callers' messages are never changed behind their back.
func ownBlocks(m *Message) {
	if m.Content.IsBlocks {
		m.Content.Blocks = append([]Block(nil), m.Content.Blocks...)
	}
}

// TruncateToolResults caps every tool body at ToolResultMaxChars: the text
// of tool messages and toolresult blocks anywhere. It returns the number of
// fields changed.
func TruncateToolResults(msgs []Message) int {
	changed := 0
	for i := range msgs {
		changed += capToolBodies(&msgs[i], ToolResultMaxChars)
	}
	return changed
}

// capToolBodies caps a message's tool output: the text of a tool message
// and its text blocks, and toolresult blocks in any message (a string, or
// the text parts of a block list).
func capToolBodies(m *Message, max int) int {
	if !m.Content.IsBlocks {
		if m.Role == RoleTool {
			return capBody(&m.Content.Text, max)
		}
		return 0
	}
	ownBlocks(m)
	changed := 0
	for j := range m.Content.Blocks {
		b := &m.Content.Blocks[j]
		switch {
		case b.Type == BlockToolResult && b.ResultRaw == nil:
			changed += capBody(&b.Result, max)
		case b.Type == BlockToolResult:
			changed += editResultParts(&b.ResultRaw, func(text *string) int { return capBody(text, max) })
		case b.Type == BlockText && m.Role == RoleTool:
			changed += capBody(&b.Text, max)
		}
	}
	return changed
}

// oldToolMessages returns the positions of tool messages other than the
// newest PruneKeepRecentTools.
func oldToolMessages(msgs []Message) []int {
	var pos []int
	for i := range msgs {
		if msgs[i].Role == RoleTool {
			pos = append(pos, i)
		}
	}
	if len(pos) <= PruneKeepRecentTools {
		return nil
	}
	return pos[:len(pos)-PruneKeepRecentTools]
}

func capOldToolBodies(msgs []Message, max int) int {
	changed := 0
	for _, i := range oldToolMessages(msgs) {
		changed += capToolBodies(&msgs[i], max)
	}
	return changed
}

// PruneToolResults caps all but the newest 4 tool messages at 2,048 chars.
func PruneToolResults(msgs []Message) int { return capOldToolBodies(msgs, ToolResultPruneChars) }

// ShakeToolResults caps all but the newest 4 tool messages at 512 chars.
func ShakeToolResults(msgs []Message) int { return capOldToolBodies(msgs, ToolResultShakeChars) }

// SpillToolResults moves the bodies of old tool messages out of the
// transcript: put stores a body and returns its sha256 in hex; the message
// keeps its first 400 chars and a pointer line. As whycodes, only bodies
// longer than ToolResultPruneChars are spilled; one already spilled stays.
func SpillToolResults(msgs []Message, put func(body string) string) int {
	spill := func(s *string) int {
		if strings.Contains(*s, SpillMark) || len(*s) <= ToolResultPruneChars || utf8.RuneCountInString(*s) <= ToolResultPruneChars {
			return 0
		}
		head := *s
		if i := runeOffset(head, SpillHeadChars); i < len(head) {
			head = head[:i]
		}
		*s = head + "\n…\n" + SpillMark + BlobRefPrefix + put(*s)
		return 1
	}
	changed := 0
	for _, i := range oldToolMessages(msgs) {
		m := &msgs[i]
		if !m.Content.IsBlocks {
			changed += spill(&m.Content.Text)
			continue
		}
		ownBlocks(m)
		for j := range m.Content.Blocks {
			b := &m.Content.Blocks[j]
			switch {
			case b.Type == BlockText:
				changed += spill(&b.Text)
			case b.Type == BlockToolResult && b.ResultRaw == nil:
				changed += spill(&b.Result)
			case b.Type == BlockToolResult:
				changed += editResultParts(&b.ResultRaw, spill)
			}
		}
	}
	return changed
}

// runeOffset is the byte offset of the n-th rune of s (len(s) if fewer).
func runeOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// MessagesTranscript renders messages for a summariser: "Role: body" blocks
// cut at max bytes, ending in "\n…" when cut.
func MessagesTranscript(msgs []Message, max int) string {
	var b strings.Builder
	for i := range msgs {
		piece := msgs[i].Role.Label() + ": " + transcriptBody(&msgs[i]) + "\n\n"
		if b.Len()+len(piece) > max {
			if remaining := max - b.Len(); remaining > transcriptMinPartialChars {
				b.WriteString(piece[:runeOffset(piece, remaining)])
				b.WriteString("\n…")
			}
			break
		}
		b.WriteString(piece)
	}
	return b.String()
}

func transcriptBody(m *Message) string {
	if !m.Content.IsBlocks {
		return m.Content.Text
	}
	var parts []string
	for i := range m.Content.Blocks {
		b := &m.Content.Blocks[i]
		switch b.Type {
		case BlockText:
			parts = append(parts, b.Text)
		case BlockToolResult:
			parts = append(parts, b.ResultText())
		case BlockToolUse:
			parts = append(parts, b.Name)
		}
	}
	return strings.Join(parts, "\n")
}

// SummarizeTrimmed is the local summary of a dropped prefix: counts by role,
// the user's goals, the files touched and the tools used.
func SummarizeTrimmed(prefix []Message) string {
	var b summaryBuilder
	for i := range prefix {
		b.add(&prefix[i])
	}
	return b.text()
}

// summaryBuilder gathers SummarizeTrimmed's counts and lists one message at
// a time, so that a compaction can weigh the summary of every prefix it
// considers without writing each one: tokens is what the text would cost.
// Once a list is full, the messages after it are not scanned for it.
type summaryBuilder struct {
	n            int
	counts       [4]int // user, assistant, tool, system
	goals        goalList
	files, tools []string
	listRunes    int // of the Files and Tools lines, labels and separators included
}

// goalList is a summary's Goals line.
type goalList struct {
	items []string
	runes int // of the line, its label and separators included
}

func (g *goalList) add(m *Message) {
	if len(g.items) >= summaryGoalsMax || !m.IsUserTurn() {
		return
	}
	if text, ok := turnText(m); ok {
		if goal := goalLine(text); goal != "" {
			addListItem(&g.items, &g.runes, goal, summaryGoalsMax, "\nGoals: ", " | ")
		}
	}
}

// clone copies the items, which add appends to.
func (g goalList) clone() goalList { return goalList{slices.Clone(g.items), g.runes} }

func addListItem(list *[]string, runes *int, v string, max int, label, sep string) {
	if len(*list) >= max || slices.Contains(*list, v) {
		return
	}
	if len(*list) == 0 {
		*runes += len(label)
	} else {
		*runes += len(sep)
	}
	*runes += utf8.RuneCountInString(v)
	*list = append(*list, v)
}

func (b *summaryBuilder) add(m *Message) {
	b.n++
	switch m.Role {
	case RoleUser:
		b.counts[0]++
		b.goals.add(m)
	case RoleAssistant, RoleTool:
		if m.Role == RoleAssistant {
			b.counts[1]++
		} else {
			b.counts[2]++
		}
		if len(b.files) < summaryListMax {
			for _, p := range mentionedPaths(m) {
				addListItem(&b.files, &b.listRunes, p, summaryListMax, "\nFiles: ", ", ")
			}
		}
		if m.Role == RoleTool && m.Name != "" {
			addListItem(&b.tools, &b.listRunes, m.Name, summaryListMax, "\nTools used: ", ", ")
		}
	case RoleSystem:
		b.counts[3]++
	}
}

// header is the first line of the summary of n messages with these counts.
func header(n int, counts [4]int) string {
	h := "[" + strconv.Itoa(n) + " earlier messages trimmed for context management (user=" +
		strconv.Itoa(counts[0]) + ", assistant=" + strconv.Itoa(counts[1]) + ", tool=" + strconv.Itoa(counts[2])
	if counts[3] > 0 {
		h += ", other=" + strconv.Itoa(counts[3])
	}
	return h + ")]"
}

// headerLen is len(header(n, counts)), without writing it.
func headerLen(n int, counts [4]int) int {
	digits := func(x int) int {
		d := 1
		for ; x >= 10; x /= 10 {
			d++
		}
		return d
	}
	l := len("[ earlier messages trimmed for context management (user=, assistant=, tool=)]") +
		digits(n) + digits(counts[0]) + digits(counts[1]) + digits(counts[2])
	if counts[3] > 0 {
		l += len(", other=") + digits(counts[3])
	}
	return l
}

// tokens is EstimateTokens(b.text()).
func (b *summaryBuilder) tokens() uint64 {
	return uint64(headerLen(b.n, b.counts)+b.goals.runes+b.listRunes+3) / 4
}

// tokensWithout is what the summary would cost without one user turn
// whose goals are left out of the prefix's: goals is the Goals line of the
// messages other than it.
func (b *summaryBuilder) tokensWithout(goals goalList) uint64 {
	counts := b.counts
	counts[0]--
	return uint64(headerLen(b.n-1, counts)+goals.runes+b.listRunes+3) / 4
}

func (b *summaryBuilder) text() string {
	var sb strings.Builder
	sb.WriteString(header(b.n, b.counts))
	if len(b.goals.items) > 0 {
		sb.WriteString("\nGoals: " + strings.Join(b.goals.items, " | "))
	}
	if len(b.files) > 0 {
		sb.WriteString("\nFiles: " + strings.Join(b.files, ", "))
	}
	if len(b.tools) > 0 {
		sb.WriteString("\nTools used: " + strings.Join(b.tools, ", "))
	}
	return sb.String()
}

// turnText is the user's own text in a turn: AsText, past the summary an
// earlier wc put at its start.
func turnText(m *Message) (string, bool) {
	if hasLeadingSummary(m) {
		rest := Message{Content: BlockContent(m.Content.Blocks[1:]...)}
		return rest.AsText()
	}
	return m.AsText()
}

func goalLine(text string) string {
	for l := range strings.Lines(text) {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "[") {
			return ""
		}
		if utf8.RuneCountInString(l) > summaryGoalMaxChars {
			l = l[:runeOffset(l, summaryGoalMaxChars-1)] + "…"
		}
		return l
	}
	return ""
}

func mentionedPaths(m *Message) []string {
	var out []string
	scan := func(text string) {
		n := 0
		for l := range strings.Lines(text) {
			if n++; n > 40 {
				break
			}
			// The header's first word: "# src/a.rs (lines 1-20)" names src/a.rs.
			if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "# "); ok {
				if p := firstWord(rest); looksLikePath(p) {
					out = append(out, p)
				}
			}
		}
		i := 0
		for tok := range strings.FieldsSeq(text) { // lazily: a body may be 32k chars
			if i++; i > 200 {
				break
			}
			tok = trimPathPunct(tok)
			if looksLikePath(tok) {
				out = append(out, tok)
			}
		}
	}
	if !m.Content.IsBlocks {
		scan(m.Content.Text)
		return out
	}
	for i := range m.Content.Blocks {
		b := &m.Content.Blocks[i]
		switch b.Type {
		case BlockText:
			scan(b.Text)
		case BlockToolResult:
			scan(b.ResultText())
		case BlockToolUse:
			var in struct {
				Path string `json:"path"`
			}
			// As whycodes, a tool's path is taken as it is: "Makefile" too.
			if json.Unmarshal(b.Input, &in) == nil && in.Path != "" {
				out = append(out, in.Path)
			}
		}
	}
	return out
}

func firstWord(s string) string {
	for w := range strings.FieldsSeq(s) {
		return w
	}
	return ""
}

func looksLikePath(s string) bool {
	return len(s) >= pathMinBytes && len(s) <= pathMaxBytes && !strings.Contains(s, "://") &&
		(strings.IndexByte(s, '/') >= 0 || strings.IndexByte(s, '\\') >= 0) && strings.IndexByte(s, '.') >= 0
}

// trimPathPunct is strings.Trim(tok, ",;)(\"'`[]") without building the
// set at each of a body's first 200 words: the set is ASCII, which no byte
// of a multi-byte character matches.
func trimPathPunct(tok string) string {
	punct := func(c byte) bool {
		switch c {
		case ',', ';', ')', '(', '"', '\'', '`', '[', ']':
			return true
		}
		return false
	}
	for len(tok) > 0 && punct(tok[0]) {
		tok = tok[1:]
	}
	for len(tok) > 0 && punct(tok[len(tok)-1]) {
		tok = tok[:len(tok)-1]
	}
	return tok
}

// FormatCompactSummary cleans a model's summary: an opening <analysis>
// block goes, <summary>X</summary> becomes "Summary:\nX", blank-line runs
// shrink to one.
func FormatCompactSummary(raw string) string {
	t := strings.TrimSpace(raw)
	if strings.HasPrefix(t, "<analysis>") {
		switch {
		case strings.Contains(t, "</analysis>"):
			t = t[strings.Index(t, "</analysis>")+len("</analysis>"):]
		case strings.Contains(t, "<summary>"):
			t = t[strings.Index(t, "<summary>"):]
		default:
			t = ""
		}
	}
	if i := strings.Index(t, "<summary>"); i >= 0 {
		rest := t[i+len("<summary>"):]
		if j := strings.Index(rest, "</summary>"); j >= 0 {
			t = t[:i] + "Summary:\n" + strings.TrimSpace(rest[:j]) + rest[j+len("</summary>"):]
		} else {
			t = t[:i] + "Summary:\n" + rest
		}
	}
	lines := strings.Split(t, "\n")
	var out []string
	blank := false
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			if !blank && len(out) > 0 {
				out = append(out, "")
			}
			blank = true
			continue
		}
		blank = false
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// FormatCompactSummaryContent is the carrier text of a full replace.
func FormatCompactSummaryContent(raw string) string {
	clean := FormatCompactSummary(raw)
	switch {
	case clean == "":
		return ""
	case strings.HasPrefix(clean, "This session is being continued"):
		return clean
	}
	return CompactContinuationPreamble + "\n\n" + clean
}

// CompactSummaryDisplayText is how a summary is shown to a person.
func CompactSummaryDisplayText(t string) string {
	rest := strings.TrimSpace(t)
	for _, p := range []string{CompactContinuationPreamble, CompactedMarker} {
		rest = strings.TrimSpace(strings.TrimPrefix(rest, p))
	}
	switch {
	case rest == "":
		return "Conversation compacted"
	case strings.HasPrefix(rest, "Conversation compacted"):
		return rest
	}
	return "Conversation compacted\n" + rest
}

// summaryBody is what a prepended summary says.
func summaryBody(text string) string {
	if strings.HasPrefix(text, "[") {
		return text
	}
	return CompactedMarker + "\n" + text
}

// summaryMark tags the text block that carried a summary inside a user
// turn, as paths compacted by an earlier wc are shaped.
var summaryMark = Field{Key: "kind", Value: json.RawMessage(`"summary"`)}

func isSummaryBlock(b *Block) bool {
	if b.Type != BlockText {
		return false
	}
	for _, f := range b.Extra {
		if f.Key == summaryMark.Key && string(f.Value) == string(summaryMark.Value) {
			return true
		}
	}
	return false
}

// IsSummaryMessage reports a compaction summary: wc's (marked
// "kind":"summary") or whycodes' (a user text that is_compact_summary_text
// recognises).
func IsSummaryMessage(m *Message) bool {
	if m.Kind == KindSummary {
		return true
	}
	return m.Role == RoleUser && m.Kind == KindNone && !m.Content.IsBlocks && IsCompactSummaryText(m.Content.Text)
}

// LeadsWithSummary reports a path that opens with a summary a model's
// summary replaces in place: a user text, wc's or whycodes'.
func LeadsWithSummary(msgs []Message) bool {
	return len(msgs) > 0 && IsSummaryMessage(&msgs[0]) && msgs[0].Role == RoleUser && !msgs[0].Content.IsBlocks
}

// withSummary is whycodes' prepend_compact_summary: the summary replaces the
// path's leading summary, or, when there is none, opens the path as a user
// message of its own, as whycodes' compact puts its stub. A provider
// request joins it to a user message that follows. A path compacted by an
// earlier wc carries its summary in its first turn: that block is replaced.
func withSummary(msgs []Message, summary string, stamp string) []Message {
	if len(msgs) > 0 {
		first := msgs[0]
		switch {
		case LeadsWithSummary(msgs):
			first.Content = TextContent(summary)
			return append([]Message{first}, msgs[1:]...)
		case hasLeadingSummary(&first):
			ownBlocks(&first)
			first.Content.Blocks[0] = Block{Type: BlockText, Text: summary, Extra: []Field{summaryMark}}
			return append([]Message{first}, msgs[1:]...)
		}
	}
	carrier := Message{Role: RoleUser, Kind: KindSummary, Content: TextContent(summary), CreatedAt: stamp}
	return append([]Message{carrier}, msgs...)
}

// turnStarts lists the positions where a user turn begins.
func turnStarts(msgs []Message) []int {
	var out []int
	for i := range msgs {
		if cutPoint(&msgs[i]) {
			out = append(out, i)
		}
	}
	return out
}

// cutPoint reports whether m starts a user turn that answers no tool call.
// Anthropic lets the user's words follow tool results in one message; such
// a turn belongs with the calls before it.
func cutPoint(m *Message) bool {
	if !m.IsUserTurn() {
		return false
	}
	for i := range m.Content.Blocks {
		if m.Content.Blocks[i].Type == BlockToolResult {
			return false
		}
	}
	return true
}

// pairSafeStarts reports, for each position s, whether a path may start
// there without a tool result losing its call: no result at or after s
// answers a call before s.
func pairSafeStarts(msgs []Message) []bool {
	calls := map[string]int{} // a call id and the position of its newest call
	span := make([]int, len(msgs)+1)
	answer := func(id string, at int) {
		if c, ok := calls[id]; ok && c < at {
			span[c+1]++ // starts c+1..at would separate them
			span[at+1]--
		}
	}
	for i := range msgs {
		m := &msgs[i]
		if m.Role == RoleTool && m.ToolCallID != "" {
			answer(m.ToolCallID, i)
		}
		for j := range m.Content.Blocks {
			if b := &m.Content.Blocks[j]; b.Type == BlockToolResult {
				answer(b.ToolUseID, i)
			}
		}
		for j := range m.Content.Blocks {
			if b := &m.Content.Blocks[j]; b.Type == BlockToolUse && b.ID != "" {
				calls[b.ID] = i
			}
		}
	}
	safe := make([]bool, len(msgs))
	open := 0
	for s := range msgs {
		open += span[s]
		safe[s] = open == 0
	}
	return safe
}

// Cut is what a compaction keeps of a path: the messages from Start on,
// and, when Keep is not -1, the user message at Keep that opened the turn
// Start is in. Start 0 keeps everything.
type Cut struct {
	Start, Keep int
}

// Dropped is what the cut replaces with a summary.
func (c Cut) Dropped(msgs []Message) []Message {
	if c.Keep < 0 {
		return msgs[:c.Start]
	}
	return append(slices.Clone(msgs[:c.Keep]), msgs[c.Keep+1:c.Start]...)
}

// Kept is what stays after the summary.
func (c Cut) Kept(msgs []Message) []Message {
	if c.Keep < 0 {
		return msgs[c.Start:]
	}
	return append([]Message{msgs[c.Keep]}, msgs[c.Start:]...)
}

// Compact is whycodes' compact(max_tokens): tool bodies are truncated and
// pruned; if the path is still over 3/4 of maxTokens, its oldest messages
// are replaced by a local summary, a user message of its own that opens
// the path, as whycodes puts it. Unlike whycodes it never cuts where a tool
// result would lose its call, and when it cuts inside a turn it keeps the
// turn's user message (unless only dropping it too reaches the target); it
// runs in O(n).
func Compact(system string, msgs []Message, maxTokens uint64, now time.Time) ([]Message, CompactOutcome) {
	c := compactCut(system, msgs, maxTokens)
	out := CompactOutcome{TokensBefore: c.tokensBefore, MessagesBefore: uint64(len(msgs))}
	next := c.msgs
	out.TokensAfter = c.sys + c.suffix[0]
	if c.cut.Start > 0 {
		out.DroppedTranscript = MessagesTranscript(c.cut.Dropped(next), DroppedTranscriptMaxChars)
		next = withSummary(c.cut.Kept(next), c.summary, FormatTime(now))
		out.TokensAfter = c.sys + MessageTokens(&next[0]) + c.suffix[c.cut.Start]
		if c.cut.Keep >= 0 {
			out.TokensAfter += c.tokens[c.cut.Keep]
		}
	}
	out.MessagesAfter = uint64(len(next))
	return next, out
}

// CompactCut is the first half of Compact: a copy of msgs with tool bodies
// truncated and pruned, and where it is cut (Start 0 when nothing is
// dropped). Printing the transcript for a model and applying its summary
// both use it, so they agree on what is replaced.
func CompactCut(system string, msgs []Message, maxTokens uint64) ([]Message, Cut) {
	c := compactCut(system, msgs, maxTokens)
	return c.msgs, c.cut
}

// compaction is what compactCut found. Each message's estimate is counted
// once and summed from the end, so that every total Compact reports is a
// sum of these.
type compaction struct {
	msgs         []Message // the prepared copy
	tokens       []uint64  // each prepared message's estimate
	cut          Cut
	summary      string   // of what the cut drops
	sys          uint64   // the system prompt's estimate
	suffix       []uint64 // suffix[i] is the estimate of msgs[i:]
	tokensBefore uint64   // the system prompt and the messages as given
}

// compactCut is CompactCut, with the summary of what is dropped and the
// estimates. It takes the first cut, from the oldest, whose result fits
// the target with the summary (or SummaryTokenSlack, when larger) counted:
// whycodes' "smallest start", restricted to starts that separate no tool
// result from its call. Inside a turn it first tries keeping the turn's user
// message; a cut that also drops it is taken only when none keeping it
// fits. When nothing fits, the cut that drops the most is taken, as
// whycodes does, keeping the user message.
func compactCut(system string, msgs []Message, maxTokens uint64) compaction {
	c := compaction{sys: EstimateTokens(system), suffix: make([]uint64, len(msgs)+1), cut: Cut{Keep: -1}}
	c.tokens = make([]uint64, len(msgs))
	c.tokensBefore = c.sys
	for i := range msgs {
		c.tokens[i] = MessageTokens(&msgs[i])
		c.tokensBefore += c.tokens[i]
	}
	msgs = append([]Message(nil), msgs...)
	c.msgs = msgs
	// TruncateToolResults then PruneToolResults, re-counting only the
	// messages they change.
	for i := range msgs {
		if capToolBodies(&msgs[i], ToolResultMaxChars) > 0 {
			c.tokens[i] = MessageTokens(&msgs[i])
		}
	}
	for _, i := range oldToolMessages(msgs) {
		if capToolBodies(&msgs[i], ToolResultPruneChars) > 0 {
			c.tokens[i] = MessageTokens(&msgs[i])
		}
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		c.suffix[i] = c.suffix[i+1] + c.tokens[i]
	}
	target := max(1, maxTokens/4*3+(maxTokens%4)*3/4) // 3/4, without overflow
	if c.sys+c.suffix[0] <= target {
		return c
	}
	n := len(msgs)
	minKeep := min(MinKeepMessages, n)
	safe := pairSafeStarts(msgs)
	fits := func(summary, kept uint64) bool {
		return c.sys+max(SummaryTokenSlack, summary)+kept <= target
	}
	// all summarises msgs[:s]; turnGoals is the Goals line of msgs[:s]
	// without the user message at p that opened the turn s is in (its
	// other lines are all's: a user message adds none). A cut must drop
	// something besides summaries, or compacting a compacted path would
	// only summarise its summary.
	var all summaryBuilder
	var turnGoals goalList
	p, content := -1, 0 // content: the messages of msgs[:s] that are not summaries
	fallback, dropUser := Cut{Keep: -1}, Cut{Keep: -1}
	for s := 1; s < n && c.cut.Start == 0; s++ {
		m := &msgs[s-1]
		switch {
		case cutPoint(m):
			turnGoals, p = all.goals.clone(), s-1
		case m.IsUserTurn():
			p = -1 // a turn that answers calls stays with them
		case p >= 0 && m.Role == RoleUser:
			turnGoals.add(m)
		}
		all.add(m)
		if !IsSummaryMessage(m) {
			content++
		}
		if !safe[s] {
			continue
		}
		if p >= 0 && !msgs[s].IsUserTurn() {
			if 1+n-s >= minKeep && content > 1 {
				if fits(all.tokensWithout(turnGoals), c.tokens[p]+c.suffix[s]) {
					c.cut = Cut{Start: s, Keep: p}
					continue
				}
				fallback = Cut{Start: s, Keep: p}
			}
			if dropUser.Start == 0 && n-s >= minKeep && fits(all.tokens(), c.suffix[s]) {
				dropUser = Cut{Start: s, Keep: -1}
			}
			continue
		}
		if n-s >= minKeep && content > 0 {
			if fits(all.tokens(), c.suffix[s]) {
				c.cut = Cut{Start: s, Keep: -1}
				continue
			}
			fallback = Cut{Start: s, Keep: -1}
		}
	}
	if c.cut.Start == 0 {
		c.cut = dropUser
	}
	if c.cut.Start == 0 {
		c.cut = fallback
		// Over budget anyway: a summary that costs as much as what it
		// replaces saves nothing (a small prefix).
		if c.cut.Start > 0 && EstimateTokens(SummarizeTrimmed(c.cut.Dropped(msgs))) >= c.suffix[0]-c.keptTokens() {
			c.cut = Cut{Keep: -1}
		}
	}
	if c.cut.Keep >= 0 && c.cut.Keep == c.cut.Start-1 {
		c.cut = Cut{Start: c.cut.Keep, Keep: -1} // keeping the user message right before the cut: a cut at it
	}
	if c.cut.Start > 0 {
		c.summary = SummarizeTrimmed(c.cut.Dropped(msgs))
	}
	return c
}

// keptTokens is the estimate of what the cut keeps.
func (c *compaction) keptTokens() uint64 {
	t := c.suffix[c.cut.Start]
	if c.cut.Keep >= 0 {
		t += c.tokens[c.cut.Keep]
	}
	return t
}

// SummaryCut is where a model's summary given without a token budget
// starts the kept path: the last user turn that leaves at least
// MinKeepMessages after it. Without one, a path that opens with a summary
// has that summary replaced (whycodes' prepend_compact_summary replaces a
// leading summary): 1. Otherwise 0, nothing to replace.
func SummaryCut(msgs []Message) int {
	limit := len(msgs) - min(MinKeepMessages, len(msgs))
	cut := 0
	for _, s := range turnStarts(msgs) {
		if s > 0 && s <= limit {
			cut = s
		}
	}
	if cut == 0 && LeadsWithSummary(msgs) {
		return 1
	}
	return cut
}

// SummarizePrefix replaces the messages before SummaryCut with a model's
// summary.
func SummarizePrefix(system string, msgs []Message, raw string, now time.Time) ([]Message, CompactOutcome) {
	out := CompactOutcome{TokensBefore: PathTokens(system, msgs), MessagesBefore: uint64(len(msgs))}
	if cut := SummaryCut(msgs); cut > 0 && FormatCompactSummary(raw) != "" {
		out.DroppedTranscript = MessagesTranscript(msgs[:cut], DroppedTranscriptMaxChars)
		if cut == 1 && LeadsWithSummary(msgs) {
			msgs = PrependSummary(msgs, raw, now) // replaced in place, as whycodes does
		} else {
			msgs = PrependSummary(msgs[cut:], raw, now)
		}
	}
	out.MessagesAfter, out.TokensAfter = uint64(len(msgs)), PathTokens(system, msgs)
	return msgs, out
}

// PrependSummary puts a model's summary of the dropped prefix in front, in
// place of the local one if there is one. An empty summary does nothing.
func PrependSummary(msgs []Message, raw string, now time.Time) []Message {
	clean := FormatCompactSummary(raw)
	if clean == "" {
		return msgs
	}
	return withSummary(msgs, summaryBody(clean), FormatTime(now))
}

// lastRealUserTurn is the position of the last real user turn, or -1.
func lastRealUserTurn(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if IsRealUserTurn(&msgs[i]) {
			return i
		}
	}
	return -1
}

// IsRealUserTurn reports a user turn a full replace or a native compaction
// keeps from: one that answers no tool call and carries no summary.
func IsRealUserTurn(m *Message) bool { return cutPoint(m) && !hasLeadingSummary(m) }

func hasLeadingSummary(m *Message) bool {
	return m.Content.IsBlocks && len(m.Content.Blocks) > 0 && isSummaryBlock(&m.Content.Blocks[0])
}

// LocalFullReplaceSummary summarises the messages before the last real user
// turn (all of them when there is none, or it is the first).
func LocalFullReplaceSummary(msgs []Message) string {
	l := lastRealUserTurn(msgs)
	if l <= 0 {
		return SummarizeTrimmed(msgs)
	}
	return SummarizeTrimmed(msgs[:l])
}

// FullReplace is whycodes' apply_full_replace: the last real user turn
// (restated), what followed it, and a carrier with the summary (the local
// one when summary is empty).
func FullReplace(system string, msgs []Message, summary string, now time.Time) ([]Message, CompactOutcome) {
	out := CompactOutcome{TokensBefore: PathTokens(system, msgs), MessagesBefore: uint64(len(msgs))}
	if len(msgs) == 0 {
		out.TokensAfter = out.TokensBefore
		return msgs, out
	}
	stamp := FormatTime(now)
	l := lastRealUserTurn(msgs)
	if l == 0 && msgs[len(msgs)-1].Kind == KindSummary {
		// Nothing precedes the last user turn and a carrier closes the
		// path: it is replaced already, and doing it again would stack.
		out.MessagesAfter, out.TokensAfter = out.MessagesBefore, out.TokensBefore
		return msgs, out
	}
	var next []Message
	if l < 0 {
		out.DroppedTranscript = MessagesTranscript(msgs, DroppedTranscriptMaxChars)
		next = append(next, msgs...)
	} else {
		out.DroppedTranscript = MessagesTranscript(msgs[:l], DroppedTranscriptMaxChars)
		// The whole turn is restated: whycodes kept only its first text,
		// losing images, and the whole turn when it had no text.
		next = append(next, Message{Role: RoleUser, Content: msgs[l].Content, CreatedAt: stamp})
		next = append(next, msgs[l+1:]...)
	}
	body := FormatCompactSummaryContent(summary)
	if body == "" {
		body = FormatCompactSummaryContent(LocalFullReplaceSummary(msgs))
	}
	next = append(next, Message{Role: RoleUser, Kind: KindSummary, Content: TextContent(body), CreatedAt: stamp})
	out.MessagesAfter, out.TokensAfter = uint64(len(next)), PathTokens(system, next)
	return next, out
}

// NativeRefusal says why a path cannot take a native compaction, where
// whycodes' native_compaction_prefix returns None. Commands exit 1 and
// change nothing.
type NativeRefusal struct{ Reason string }

func (e *NativeRefusal) Error() string { return "no native compaction: " + e.Reason }

// NativeCompactionPrefix is where a native compaction ends its replaced
// prefix: the last real user turn. As whycodes' native_compaction_prefix it
// refuses a path with nothing before that turn, or one where the message
// before it is a tool result, a user message, or an assistant message with
// a tool call (which nothing could answer in between).
func NativeCompactionPrefix(msgs []Message) (int, error) {
	l := lastRealUserTurn(msgs)
	if l < 0 {
		return 0, &NativeRefusal{"the session has no user turn to keep"}
	}
	if l == 0 {
		return 0, &NativeRefusal{"nothing precedes the last user turn"}
	}
	prev := &msgs[l-1]
	switch {
	case prev.Role == RoleTool:
		return 0, &NativeRefusal{"the message before the last user turn is a tool result"}
	case prev.Role == RoleUser:
		return 0, &NativeRefusal{"the message before the last user turn is a user message"}
	case prev.Role == RoleAssistant && slices.ContainsFunc(prev.Content.Blocks, func(b Block) bool { return b.Type == BlockToolUse }):
		return 0, &NativeRefusal{"the message before the last user turn has an open tool call"}
	}
	return l, nil
}

// NativeCompaction replaces everything before the last real user turn with
// one assistant message holding a provider's compaction block verbatim.
func NativeCompaction(system string, msgs []Message, block Block, now time.Time) ([]Message, CompactOutcome, error) {
	out := CompactOutcome{TokensBefore: PathTokens(system, msgs), MessagesBefore: uint64(len(msgs))}
	l, err := NativeCompactionPrefix(msgs)
	if err != nil {
		return msgs, out, err
	}
	out.DroppedTranscript = MessagesTranscript(msgs[:l], DroppedTranscriptMaxChars)
	carrier := Message{Role: RoleAssistant, Kind: KindSummary, Content: BlockContent(block), CreatedAt: FormatTime(now)}
	next := append([]Message{carrier}, msgs[l:]...)
	out.MessagesAfter, out.TokensAfter = uint64(len(next)), PathTokens(system, next)
	return next, out, nil
}

// CompactionPrefixEnd is where the prefix a full replace or a native
// compaction summarises ends: the last real user turn, or the path's end
// when there is none (as apply_full_replace's prefix_end).
func CompactionPrefixEnd(msgs []Message) int {
	if l := lastRealUserTurn(msgs); l >= 0 {
		return l
	}
	return len(msgs)
}

// PrefixTranscriptForSummary is the transcript of that prefix, for a model
// to summarise; max 0 means 48,000.
func PrefixTranscriptForSummary(msgs []Message, max int) string {
	return TranscriptForFullSummary(msgs[:CompactionPrefixEnd(msgs)], max)
}

// TranscriptForCompactSummary is the text to summarise for a compaction:
// everything but the last min(4, len) messages.
func TranscriptForCompactSummary(msgs []Message, max int) string {
	return MessagesTranscript(msgs[:len(msgs)-min(MinKeepMessages, len(msgs))], max)
}

// TranscriptForFullSummary is the whole transcript; max 0 means 48,000.
func TranscriptForFullSummary(msgs []Message, max int) string {
	if max == 0 {
		max = FullTranscriptMaxChars
	}
	return MessagesTranscript(msgs, max)
}

// BlobRefs lists the spilled bodies the nodes point at, each once.
func BlobRefs(nodes []Node) [][32]byte {
	var out [][32]byte
	seen := map[[32]byte]bool{}
	for i := range nodes {
		raw := string(nodes[i].Msg.AppendJSON(nil))
		for {
			j := strings.Index(raw, BlobRefPrefix)
			if j < 0 {
				break
			}
			raw = raw[j+len(BlobRefPrefix):]
			if len(raw) < 64 {
				break
			}
			var sum [32]byte
			if _, err := hex.Decode(sum[:], []byte(raw[:64])); err == nil && !seen[sum] {
				seen[sum] = true
				out = append(out, sum)
			}
		}
	}
	return out
}
