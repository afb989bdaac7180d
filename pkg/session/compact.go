package session

import (
	"encoding/hex"
	"encoding/json"
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
// keeps its first 400 chars and a pointer line. A body already spilled, or
// too short for a spill to save anything, stays.
func SpillToolResults(msgs []Message, put func(body string) string) int {
	spill := func(s *string) int {
		if strings.Contains(*s, SpillMark) || utf8.RuneCountInString(*s) <= SpillHeadChars+len(SpillMark)+len(BlobRefPrefix)+64+8 {
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
		piece := RoleLabel(msgs[i].Role) + ": " + transcriptBody(&msgs[i]) + "\n\n"
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
	return summarizeTrimmed(prefix).text(len(prefix))
}

// trimmedSummary gathers SummarizeTrimmed's lists over a path once, so
// that the summary of any prefix of it can be written without a second
// scan: each entry remembers the message that added it, and the lists only
// grow. Once a list is full, the messages after it are not scanned for it.
type trimmedSummary struct {
	msgs                []Message
	goals, files, tools []summaryEntry
}

type summaryEntry struct {
	v  string
	at int // the position of the message that added it
}

func addUnique(list *[]summaryEntry, v string, max, at int) {
	if len(*list) >= max {
		return
	}
	for _, x := range *list {
		if x.v == v {
			return
		}
	}
	*list = append(*list, summaryEntry{v, at})
}

// summarizeTrimmed scans msgs, which must not change while the summary
// is in use.
func summarizeTrimmed(msgs []Message) *trimmedSummary {
	t := &trimmedSummary{msgs: msgs}
	for at := range msgs {
		m := &msgs[at]
		switch m.Role {
		case RoleUser:
			if len(t.goals) >= summaryGoalsMax || !m.IsUserTurn() {
				break
			}
			if text, ok := turnText(m); ok {
				if goal := goalLine(text); goal != "" {
					addUnique(&t.goals, goal, summaryGoalsMax, at)
				}
			}
		case RoleAssistant, RoleTool:
			if len(t.files) < summaryListMax {
				for _, p := range mentionedPaths(m) {
					addUnique(&t.files, p, summaryListMax, at)
				}
			}
			if m.Role == RoleTool && m.Name != "" {
				addUnique(&t.tools, m.Name, summaryListMax, at)
			}
		}
	}
	return t
}

// text is SummarizeTrimmed of the first n messages.
func (t *trimmedSummary) text(n int) string {
	prefix := t.msgs[:n]
	var counts [4]int // user, assistant, tool, system
	for i := range prefix {
		switch prefix[i].Role {
		case RoleUser:
			counts[0]++
		case RoleAssistant:
			counts[1]++
		case RoleTool:
			counts[2]++
		case RoleSystem:
			counts[3]++
		}
	}
	joined := func(list []summaryEntry, sep string) string {
		var b strings.Builder
		for i, e := range list {
			if e.at >= n {
				break
			}
			if i > 0 {
				b.WriteString(sep)
			}
			b.WriteString(e.v)
		}
		return b.String()
	}
	var b strings.Builder
	b.WriteString("[" + strconv.Itoa(len(prefix)) + " earlier messages trimmed for context management (user=" +
		strconv.Itoa(counts[0]) + ", assistant=" + strconv.Itoa(counts[1]) +
		", tool=" + strconv.Itoa(counts[2]))
	if counts[3] > 0 {
		b.WriteString(", other=" + strconv.Itoa(counts[3]))
	}
	b.WriteString(")]")
	if goals := joined(t.goals, " | "); goals != "" {
		b.WriteString("\nGoals: " + goals)
	}
	if files := joined(t.files, ", "); files != "" {
		b.WriteString("\nFiles: " + files)
	}
	if tools := joined(t.tools, ", "); tools != "" {
		b.WriteString("\nTools used: " + tools)
	}
	return b.String()
}

// turnText is the user's own text in a turn: AsText, past a summary that
// rides on the turn.
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
			if p, ok := strings.CutPrefix(strings.TrimSpace(l), "# "); ok && looksLikePath(strings.TrimSpace(p)) {
				out = append(out, strings.TrimSpace(p))
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
			if json.Unmarshal(b.Input, &in) == nil && looksLikePath(in.Path) {
				out = append(out, in.Path)
			}
		}
	}
	return out
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

// summaryMark tags the text block that carries a summary inside a user turn.
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

// withSummary puts a summary in front of msgs. A leading user turn takes it
// as a marked first block, so that no two user messages stand in a row (a
// summary it already carries is replaced); otherwise a user-role summary
// message of its own opens the path.
func withSummary(msgs []Message, summary string, stamp string) []Message {
	block := Block{Type: BlockText, Text: summary, Extra: []Field{summaryMark}}
	if len(msgs) > 0 && msgs[0].Role == RoleUser {
		first := msgs[0]
		switch {
		case first.Kind == KindSummary:
			first.Content = TextContent(summary)
		case first.Content.IsBlocks && len(first.Content.Blocks) > 0 && isSummaryBlock(&first.Content.Blocks[0]):
			ownBlocks(&first)
			first.Content.Blocks[0] = block
		case first.Content.IsBlocks:
			first.Content = BlockContent(append([]Block{block}, first.Content.Blocks...)...)
		default:
			first.Content = BlockContent(block, Block{Type: BlockText, Text: first.Content.Text})
		}
		return append([]Message{first}, msgs[1:]...)
	}
	carrier := Message{Role: RoleUser, Kind: KindSummary, Content: TextContent(summary), CreatedAt: stamp}
	return append([]Message{carrier}, msgs...)
}

// turnStarts lists the positions where a user turn begins: the only places
// compaction cuts, so that a tool result never loses its call.
func turnStarts(msgs []Message) []int {
	var out []int
	for i := range msgs {
		if cutPoint(&msgs[i]) {
			out = append(out, i)
		}
	}
	return out
}

// cutPoint reports whether a path may start at m: a user turn that answers
// no tool call. Anthropic lets the user's words follow tool results in one
// message; such a turn belongs with the calls before it.
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

// Compact is whycodes' compact(max_tokens), done better: tool bodies are
// truncated and pruned; if the path is still over 3/4 of maxTokens, the
// oldest whole turns are replaced by a local summary carried by the first
// kept user turn. Unlike whycodes it cuts only at a turn boundary, never
// leaves two user messages in a row, and runs in O(n).
func Compact(system string, msgs []Message, maxTokens uint64, now time.Time) ([]Message, CompactOutcome) {
	c := compactCut(system, msgs, maxTokens)
	out := CompactOutcome{TokensBefore: c.tokensBefore, MessagesBefore: uint64(len(msgs))}
	next := c.msgs
	out.TokensAfter = c.sys + c.suffix[0]
	if c.start > 0 {
		out.DroppedTranscript = MessagesTranscript(next[:c.start], DroppedTranscriptMaxChars)
		next = withSummary(next[c.start:], c.summary, FormatTime(now))
		// Only the first message is new: the rest is the prepared path's tail.
		out.TokensAfter = c.sys + MessageTokens(&next[0]) + c.suffix[len(c.msgs)-len(next)+1]
	}
	out.MessagesAfter = uint64(len(next))
	return next, out
}

// CompactCut is the first half of Compact: a copy of msgs with tool bodies
// truncated and pruned, and the position of the first message to keep (0
// when nothing is dropped). Printing the transcript for a model and
// applying its summary both use it, so they agree on what is replaced.
func CompactCut(system string, msgs []Message, maxTokens uint64) ([]Message, int) {
	c := compactCut(system, msgs, maxTokens)
	return c.msgs, c.start
}

// cut is what compactCut found. Each message's estimate is counted once
// and summed from the end, so that every total Compact reports is a sum
// of these.
type cut struct {
	msgs         []Message // the prepared copy
	start        int       // the first message kept, 0 when none is dropped
	summary      string    // of msgs[:start]
	sys          uint64    // the system prompt's estimate
	suffix       []uint64  // suffix[i] is the estimate of msgs[i:]
	tokensBefore uint64    // the system prompt and the messages as given
}

// compactCut is CompactCut, with the summary of the dropped prefix and the
// estimates.
func compactCut(system string, msgs []Message, maxTokens uint64) cut {
	c := cut{sys: EstimateTokens(system), suffix: make([]uint64, len(msgs)+1)}
	tokens := make([]uint64, len(msgs))
	c.tokensBefore = c.sys
	for i := range msgs {
		tokens[i] = MessageTokens(&msgs[i])
		c.tokensBefore += tokens[i]
	}
	msgs = append([]Message(nil), msgs...)
	c.msgs = msgs
	// TruncateToolResults then PruneToolResults, re-counting only the
	// messages they change.
	for i := range msgs {
		if capToolBodies(&msgs[i], ToolResultMaxChars) > 0 {
			tokens[i] = MessageTokens(&msgs[i])
		}
	}
	for _, i := range oldToolMessages(msgs) {
		if capToolBodies(&msgs[i], ToolResultPruneChars) > 0 {
			tokens[i] = MessageTokens(&msgs[i])
		}
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		c.suffix[i] = c.suffix[i+1] + tokens[i]
	}
	target := max(1, maxTokens/4*3+(maxTokens%4)*3/4) // 3/4, without overflow
	if c.sys+c.suffix[0] <= target {
		return c
	}
	limit := len(msgs) - min(MinKeepMessages, len(msgs))
	// The summary's lists are capped and only grow with the prefix, so the
	// summary of the longest prefix bounds every candidate's. Reserving it
	// (whycodes reserved a fixed 256 tokens, which long paths can exceed)
	// keeps a cut within budget, so compacting again changes nothing.
	trimmed := summarizeTrimmed(msgs[:limit])
	slack := uint64(SummaryTokenSlack)
	if limit > 0 {
		slack = max(slack, EstimateTokens(trimmed.text(limit)))
	}
	start := 0
	for _, s := range turnStarts(msgs) {
		if s == 0 || s > limit {
			continue
		}
		start = s
		if c.sys+c.suffix[s]+slack <= target {
			break
		}
	}
	if start == 0 {
		return c
	}
	// A summary that costs as much as what it replaces saves nothing: this
	// happens when the cut is over budget anyway and the prefix is small.
	summary := trimmed.text(start)
	if EstimateTokens(summary) >= c.suffix[0]-c.suffix[start] {
		return c
	}
	c.start, c.summary = start, summary
	return c
}

// SummaryCut is where a model's summary given without a token budget
// starts the kept path: the last user turn that leaves at least
// MinKeepMessages after it (0: none).
func SummaryCut(msgs []Message) int {
	limit := len(msgs) - min(MinKeepMessages, len(msgs))
	cut := 0
	for _, s := range turnStarts(msgs) {
		if s > 0 && s <= limit {
			cut = s
		}
	}
	return cut
}

// SummarizePrefix replaces the messages before SummaryCut with a model's
// summary.
func SummarizePrefix(system string, msgs []Message, raw string, now time.Time) ([]Message, CompactOutcome) {
	out := CompactOutcome{TokensBefore: PathTokens(system, msgs), MessagesBefore: uint64(len(msgs))}
	if cut := SummaryCut(msgs); cut > 0 && FormatCompactSummary(raw) != "" {
		out.DroppedTranscript = MessagesTranscript(msgs[:cut], DroppedTranscriptMaxChars)
		msgs = PrependSummary(msgs[cut:], raw, now)
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

// lastRealUserTurn is the position of the last user turn a path may start
// at that carries no summary, or -1.
func lastRealUserTurn(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if cutPoint(&msgs[i]) && !hasLeadingSummary(&msgs[i]) {
			return i
		}
	}
	return -1
}

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

// NativeCompaction replaces everything before the last real user turn with
// one assistant message holding a provider's compaction block verbatim.
func NativeCompaction(system string, msgs []Message, block Block, now time.Time) ([]Message, CompactOutcome, error) {
	out := CompactOutcome{TokensBefore: PathTokens(system, msgs), MessagesBefore: uint64(len(msgs))}
	l := lastRealUserTurn(msgs)
	if l < 0 {
		return msgs, out, invalidf("the session has no user turn to keep after a native compaction")
	}
	out.DroppedTranscript = MessagesTranscript(msgs[:l], DroppedTranscriptMaxChars)
	carrier := Message{Role: RoleAssistant, Kind: KindSummary, Content: BlockContent(block), CreatedAt: FormatTime(now)}
	next := append([]Message{carrier}, msgs[l:]...)
	out.MessagesAfter, out.TokensAfter = uint64(len(next)), PathTokens(system, next)
	return next, out, nil
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
