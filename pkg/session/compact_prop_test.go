package session_test

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/request"
)

// Property tests of compaction over generated sessions with realistic
// shapes: user turns, assistant text, thinking and tool calls, answers as
// tool messages (OpenAI) or as results-only user messages (Anthropic),
// notes, earlier summaries, images, and tool bodies up to 40,000 chars.

const (
	cpPropSessions = 200
	cpPropMaxLen   = 200
	cpPropMaxBody  = 40_000
)

// cpCorpus is the text tool bodies and prose are cut from: code, paths,
// compiler output, edit trailers and some non-ASCII.
var cpCorpus = func() string {
	lines := []string{
		"# pkg/session/compact.go",
		"func Compact(system string, msgs []Message, maxTokens uint64) ([]Message, CompactOutcome) {",
		"\treturn msgs, out // nothing to drop",
		"pkg/session/store/badger.go:42:7: undefined: txn",
		"ok  \tgithub.com/wctoolkit/wc/pkg/session\t0.412s",
		"--- FAIL: TestLogin (0.00s)\n    login_test.go:17: got nil",
		"[+3 -1]",
		"éléphant naïve café — 中文 😀 ñ",
		"see ./cmd/wc-compact/compact.go and \"internal/x/y.go\", (docs/README.md)",
		"   ",
		"",
		"lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod",
		"/home/user/go/pkg/mod/github.com/tidwall/gjson@v1.20.3/gjson.go:1234",
	}
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for b.Len() < 3*cpPropMaxBody {
		b.WriteString(lines[r.IntN(len(lines))])
		b.WriteByte('\n')
	}
	return b.String()
}()

type cpGen struct {
	r       *rand.Rand
	next    int
	maxBody int
	names   map[string]string
}

func newCPGen(seed uint64, maxBody int) *cpGen {
	return &cpGen{r: rand.New(rand.NewPCG(seed, 0x5eed)), maxBody: maxBody, names: map[string]string{}}
}

// cut returns about n bytes of the corpus, on char boundaries.
func (g *cpGen) cut(n int) string {
	n = min(n, len(cpCorpus)/2)
	off := g.r.IntN(len(cpCorpus) - n)
	for off > 0 && !utf8.RuneStart(cpCorpus[off]) {
		off--
	}
	end := off + n
	for end < len(cpCorpus) && !utf8.RuneStart(cpCorpus[end]) {
		end++
	}
	return cpCorpus[off:end]
}

func (g *cpGen) body() string {
	var n int
	switch x := g.r.IntN(100); {
	case x < 40:
		n = g.r.IntN(200)
	case x < 80:
		n = 200 + g.r.IntN(1800)
	case x < 96:
		n = 2000 + g.r.IntN(6000)
	default:
		n = 8000 + g.r.IntN(cpPropMaxBody-8000+1)
	}
	return g.cut(min(n, g.maxBody))
}

func (g *cpGen) id() string {
	g.next++
	return "call-" + strconv.Itoa(g.next)
}

func (g *cpGen) prose() string {
	switch x := g.r.IntN(100); {
	case x < 5:
		return "[bracketed] " + g.cut(40)
	case x < 10:
		return "\n\n  " + g.cut(60)
	case x < 20:
		return g.cut(300) // long lines, several lines
	}
	return "please fix " + g.cut(10+g.r.IntN(80))
}

var cpImage = session.Block{Type: session.BlockImage, Source: json.RawMessage(`{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}`)}

func (g *cpGen) userTurn() session.Message {
	switch x := g.r.IntN(100); {
	case x < 12:
		return blocks(session.RoleUser, cpTextBlock(g.prose()), cpImage)
	case x < 16:
		return blocks(session.RoleUser, cpImage)
	case x < 22:
		return blocks(session.RoleUser, cpTextBlock(g.prose()), cpTextBlock(g.prose()))
	}
	return text(session.RoleUser, g.prose())
}

var cpToolNames = []string{"read", "write", "edit", "bash", "grep", "glob", "apply_patch", "web_fetch", "ls", "todo"}

func (g *cpGen) assistant(calls int) (session.Message, []string) {
	var bs []session.Block
	if g.r.IntN(10) < 3 {
		bs = append(bs, session.Block{Type: session.BlockThinking, Text: g.cut(g.r.IntN(600)), Signature: "sig", HasSignature: true})
	}
	if calls == 0 || g.r.IntN(10) < 7 {
		bs = append(bs, cpTextBlock(g.cut(g.r.IntN(800))))
	}
	var ids []string
	for range calls {
		id := g.id()
		name := cpToolNames[g.r.IntN(len(cpToolNames))]
		g.names[id] = name
		input, _ := json.Marshal(map[string]string{"path": strings.Fields(g.cut(60) + " x/y.go")[0]})
		bs = append(bs, toolUse(id, name, string(input)))
		ids = append(ids, id)
	}
	if len(bs) == 1 && bs[0].Type == session.BlockText && g.r.IntN(2) == 0 {
		return text(session.RoleAssistant, bs[0].Text), ids
	}
	return blocks(session.RoleAssistant, bs...), ids
}

func (g *cpGen) resultBlock(id string) session.Block {
	b := cpResult(id, g.body())
	if g.r.IntN(4) == 0 { // a provider block list: a text part, maybe a bare string, maybe an image
		parts := []any{map[string]any{"type": "text", "text": b.Result, "cache_control": map[string]string{"type": "ephemeral"}}}
		if g.r.IntN(2) == 0 {
			parts = append(parts, g.body())
		}
		if g.r.IntN(3) == 0 {
			parts = append(parts, map[string]any{"type": "image", "source": map[string]string{"type": "base64", "media_type": "image/png", "data": "AAAA"}})
		}
		raw, _ := json.Marshal(parts)
		b.Result, b.ResultRaw = "", raw
	}
	if g.r.IntN(5) == 0 {
		b.IsError = ptr(g.r.IntN(2) == 0)
	}
	return b
}

// results answers the calls in one of the shapes agents write.
func (g *cpGen) results(msgs []session.Message, ids []string, mixed bool) []session.Message {
	switch x := g.r.IntN(100); {
	case x < 58: // one tool message per call
		for _, id := range ids {
			m := cpNamedTool(id, g.names[id], g.body())
			if g.r.IntN(10) == 0 {
				m.Content = session.BlockContent(cpTextBlock(g.body()), cpTextBlock(g.body()))
			}
			m.IsError = g.r.IntN(10) == 0
			msgs = append(msgs, m)
		}
	case x < 88: // Anthropic: one user message of results
		var bs []session.Block
		for _, id := range ids {
			bs = append(bs, g.resultBlock(id))
		}
		msgs = append(msgs, blocks(session.RoleUser, bs...))
	case x < 95 && mixed: // Anthropic, with the user's words after the results
		var bs []session.Block
		for _, id := range ids {
			bs = append(bs, g.resultBlock(id))
		}
		msgs = append(msgs, blocks(session.RoleUser, append(bs, cpTextBlock("also: "+g.prose()))...))
	default: // interrupted: only some calls answered
		for _, id := range ids[:g.r.IntN(len(ids))] {
			msgs = append(msgs, cpNamedTool(id, g.names[id], g.body()))
		}
	}
	return msgs
}

// session returns a path of n messages.
func (g *cpGen) session(n int, mixed bool) []session.Message {
	var msgs []session.Message
	switch x := g.r.IntN(100); {
	case x < 8:
		msgs = append(msgs, cpKind(session.KindNote, session.RoleUser, "note: "+g.prose()))
	case x < 12:
		msgs = append(msgs, cpKind(session.KindSummary, session.RoleUser, session.CompactedMarker+"\nGoals: earlier work"))
	case x < 15:
		msgs = append(msgs, text(session.RoleUser, session.CompactedMarker+"\nGoals: a whycodes stub"))
	case x < 19:
		msgs = append(msgs, text(session.RoleAssistant, "imported from the middle"))
	case x < 22:
		msgs = append(msgs, cpNamedTool("lost-call", "read", g.body())) // its call is not in the path
	case x < 26:
		msgs = append(msgs, blocks(session.RoleUser, cpSummaryBlock("[3 earlier messages trimmed for context management (user=2, assistant=1, tool=0)]"), cpTextBlock(g.prose())))
	}
	for len(msgs) < n {
		msgs = append(msgs, g.userTurn())
		rounds := g.r.IntN(5)
		if g.r.IntN(8) == 0 { // an agentic turn: one prompt, many tool calls
			rounds = 10 + g.r.IntN(30)
		}
		for range rounds {
			a, ids := g.assistant(1 + g.r.IntN(3))
			msgs = append(msgs, a)
			msgs = g.results(msgs, ids, mixed)
			if g.r.IntN(20) == 0 {
				msgs = append(msgs, cpKind(session.KindNote, session.RoleUser, "note: "+g.prose()))
			}
		}
		if g.r.IntN(10) < 9 {
			a, _ := g.assistant(0)
			msgs = append(msgs, a)
		}
	}
	return msgs[:n]
}

func (g *cpGen) system() string {
	switch x := g.r.IntN(10); {
	case x < 3:
		return ""
	case x < 9:
		return "You are a coding agent. " + g.cut(400)
	}
	return g.cut(20_000) // a system prompt that alone is over most budgets
}

// cpForEach runs check over the generated sessions, each with its own
// generator seeded by its number so that a failure names a reproducible
// session.
func cpForEach(t *testing.T, mixed bool, check func(t *testing.T, g *cpGen, sys string, in []session.Message)) {
	t.Parallel()
	sessions := cpPropSessions
	if testing.Short() {
		sessions /= 5
	}
	for seed := range uint64(sessions) {
		g := newCPGen(seed, cpPropMaxBody)
		sys := g.system()
		in := g.session(g.r.IntN(cpPropMaxLen+1), mixed)
		before := cpSnapshot(in)
		check(t, g, sys, in)
		if !cpSame(in, before) {
			t.Errorf("seed %d: the input was changed", seed)
		}
		if t.Failed() {
			t.Fatalf("seed %d (%d messages) failed", seed, len(in))
		}
	}
}

// cpResultRefs lists every tool result of a path by id, with whether a
// tooluse earlier in the path answers it.
func cpResultRefs(msgs []session.Message) map[string]bool {
	calls := map[string]bool{}
	refs := map[string]bool{}
	for _, m := range msgs {
		if m.Role == session.RoleTool && m.ToolCallID != "" {
			refs[m.ToolCallID] = calls[m.ToolCallID]
		}
		for _, b := range m.Content.Blocks {
			switch b.Type {
			case session.BlockToolUse:
				calls[b.ID] = true
			case session.BlockToolResult:
				refs[b.ToolUseID] = calls[b.ToolUseID]
			}
		}
	}
	return refs
}

// cpNoNewOrphans fails when a result that had its call before has lost it.
func cpNoNewOrphans(t *testing.T, what string, before, after []session.Message) {
	t.Helper()
	was := cpResultRefs(before)
	for id, ok := range cpResultRefs(after) {
		if !ok && was[id] {
			t.Errorf("%s: tool result %s lost its call", what, id)
		}
	}
}

// cpSummaryMsg is the summary message a compaction opens the path with.
func cpSummaryMsg(summary string) session.Message {
	m := cpKind(session.KindSummary, session.RoleUser, summary)
	m.CreatedAt = t0Text
	return m
}

// cpRefCut is a direct O(n²) reading of the cut rule, to check CompactCut
// against. Over 3/4 of the budget, from the oldest start on: a start where
// no later tool result answers an earlier call, keeping at least
// min(4, len) messages and dropping more than summaries, whose result
// fits with its summary (at least SummaryTokenSlack) counted. Inside a
// turn the turn's user message is kept first; a cut that drops it too is
// taken only when no other fits. When nothing fits, the largest allowed
// cut keeping the user message, if its summary costs less than what it
// drops.
func cpRefCut(system string, msgs []session.Message, maxTokens uint64) session.Cut {
	prepared := slices.Clone(msgs)
	session.TruncateToolResults(prepared)
	session.PruneToolResults(prepared)
	none := session.Cut{Keep: -1}
	target := max(1, cpThreeQuarters(maxTokens))
	if session.PathTokens(system, prepared) <= target {
		return none
	}
	n := len(prepared)
	minKeep := min(session.MinKeepMessages, n)
	ids := func(m *session.Message, results bool) []string {
		var out []string
		if results && m.Role == session.RoleTool && m.ToolCallID != "" {
			out = append(out, m.ToolCallID)
		}
		for _, b := range m.Content.Blocks {
			if results && b.Type == session.BlockToolResult {
				out = append(out, b.ToolUseID)
			}
			if !results && b.Type == session.BlockToolUse && b.ID != "" {
				out = append(out, b.ID)
			}
		}
		return out
	}
	safe := func(s int) bool {
		for r := s; r < n; r++ {
			for _, id := range ids(&prepared[r], true) {
				for c := r - 1; c >= 0; c-- {
					if slices.Contains(ids(&prepared[c], false), id) {
						if c < s {
							return false
						}
						break
					}
				}
			}
		}
		return true
	}
	turnUser := func(s int) int {
		for q := s - 1; q >= 0; q-- {
			if prepared[q].IsUserTurn() {
				if cpCutPoint(&prepared[q]) {
					return q
				}
				return -1
			}
		}
		return -1
	}
	fits := func(c session.Cut) bool {
		drop := c.Dropped(prepared)
		content := slices.ContainsFunc(drop, func(m session.Message) bool { return !session.IsSummaryMessage(&m) })
		kept := c.Kept(prepared)
		return content && len(kept) >= minKeep &&
			session.PathTokens(system, kept)+max(session.SummaryTokenSlack, session.EstimateTokens(session.SummarizeTrimmed(drop))) <= target
	}
	allowed := func(c session.Cut) bool {
		drop := c.Dropped(prepared)
		return slices.ContainsFunc(drop, func(m session.Message) bool { return !session.IsSummaryMessage(&m) }) &&
			len(c.Kept(prepared)) >= minKeep
	}
	primary := func(s int) session.Cut {
		if p := turnUser(s); p >= 0 && p < s-1 && !prepared[s].IsUserTurn() {
			return session.Cut{Start: s, Keep: p}
		}
		if p := turnUser(s); p == s-1 && !prepared[s].IsUserTurn() {
			return session.Cut{Start: p, Keep: -1} // keeping the message right before: a cut at it
		}
		return session.Cut{Start: s, Keep: -1}
	}
	for s := 1; s < n; s++ {
		if safe(s) && fits(primary(s)) {
			return primary(s)
		}
	}
	for s := 1; s < n; s++ {
		if c := (session.Cut{Start: s, Keep: -1}); safe(s) && turnUser(s) >= 0 && !prepared[s].IsUserTurn() && fits(c) {
			return c
		}
	}
	for s := n - 1; s >= 1; s-- {
		if c := primary(s); safe(s) && allowed(c) {
			drop := c.Dropped(prepared)
			if session.EstimateTokens(session.SummarizeTrimmed(drop)) >= session.PathTokens("", drop) {
				return none
			}
			return c
		}
	}
	return none
}

func TestCompactProperties(t *testing.T) {
	cuts, inTurn, fallbacks := 0, 0, 0
	cpForEach(t, true, func(t *testing.T, g *cpGen, sys string, in []session.Message) {
		tokens := session.PathTokens(sys, in)
		budget := 1 + g.r.Uint64N(2*tokens+1)
		prepared, cut := session.CompactCut(sys, in, budget)
		got, out := session.Compact(sys, in, budget, t0)

		if want := cpRefCut(sys, in, budget); cut != want {
			t.Errorf("budget %d: cut %+v, the rule says %+v", budget, cut, want)
		}
		if out.TokensBefore != tokens || out.MessagesBefore != uint64(len(in)) ||
			out.TokensAfter != session.PathTokens(sys, got) || out.MessagesAfter != uint64(len(got)) {
			t.Errorf("outcome %+v", out)
		}
		if out.TokensAfter > out.TokensBefore || out.MessagesAfter > out.MessagesBefore {
			t.Errorf("compaction grew the path: %+v", out)
		}
		if len(got) < min(session.MinKeepMessages, len(in)) {
			t.Errorf("kept %d of %d messages", len(got), len(in))
		}
		// The summary of what went opens the path, then what the cut keeps
		// of the truncated and pruned input.
		if cut.Start == 0 {
			cpSameMessages(t, "nothing dropped", got, prepared)
			if out.DroppedMessages() {
				t.Error("a dropped transcript without a cut")
			}
		} else {
			cuts++
			if cut.Keep >= 0 {
				inTurn++
			}
			if out.StillOver(budget * 3 / 4) {
				fallbacks++
			}
			drop := cut.Dropped(prepared)
			want := append([]session.Message{cpSummaryMsg(session.SummarizeTrimmed(drop))}, cut.Kept(prepared)...)
			cpSameMessages(t, "kept tail", got, want)
			if out.DroppedTranscript != session.MessagesTranscript(drop, session.DroppedTranscriptMaxChars) {
				t.Error("the dropped transcript is not the one CompactCut prints")
			}
		}
		cpNoNewOrphans(t, "Compact", in, got)
		if len(in) > 0 && in[0].Role == session.RoleUser && got[0].Role != session.RoleUser {
			t.Error("the path no longer opens with a user message")
		}
		// Idempotent: a second identical compaction changes nothing, even
		// when the first left the path over budget.
		again, out2 := session.Compact(sys, got, budget, t0)
		cpSameMessages(t, "compacting again", again, got)
		if out2.DroppedMessages() {
			t.Error("compacting again dropped more")
		}
		// A model's summary of the same cut takes the local one's place.
		if cut.Start > 0 {
			llm := session.PrependSummary(got, "<summary>the model's summary</summary>", t0)
			if len(llm) != len(got) || llm[0].Kind != session.KindSummary || !strings.Contains(llm[0].Content.Text, "the model's summary") {
				t.Errorf("the model summary did not replace the local one: %s", encode(llm[0]))
			}
		}
		// A request body built from the result pairs every call.
		cpRequestPairs(t, sys, in, got)
	})
	t.Logf("%d sessions cut, %d inside a turn, %d still over budget", cuts, inTurn, fallbacks)
	if !testing.Short() && (cuts < cpPropSessions/4 || inTurn == 0 || inTurn == cuts || fallbacks == 0 || fallbacks == cuts) {
		t.Errorf("weak generator: %d cuts, %d inside a turn, %d of them over budget", cuts, inTurn, fallbacks)
	}
}

func cpThreeQuarters(x uint64) uint64 { return x/4*3 + x%4*3/4 }

// cpBodies lists the text fields the cap passes may edit, in order.
func cpBodies(msgs []session.Message) []string {
	var out []string
	for _, m := range msgs {
		if !m.Content.IsBlocks {
			out = append(out, m.Content.Text)
			continue
		}
		for _, b := range m.Content.Blocks {
			switch b.Type {
			case session.BlockText:
				out = append(out, b.Text)
			case session.BlockToolResult:
				if b.ResultRaw != nil {
					texts, _ := cpRawParts(b.ResultRaw)
					out = append(out, texts...)
				} else {
					out = append(out, b.Result)
				}
			}
		}
	}
	return out
}

// cpRawParts splits a toolresult's block list into the texts the cap
// passes edit (string parts, and the text of text parts) and the rest.
func cpRawParts(raw json.RawMessage) (texts []string, shape string) {
	if raw == nil {
		return nil, ""
	}
	v := gjson.ParseBytes(raw)
	if !v.IsArray() {
		return nil, string(raw)
	}
	var b strings.Builder
	v.ForEach(func(_, part gjson.Result) bool {
		switch {
		case part.Type == gjson.String:
			texts = append(texts, part.Str)
			b.WriteString("[string]")
		case part.IsObject() && part.Get("type").Str == session.BlockText && part.Get("text").Type == gjson.String:
			texts = append(texts, part.Get("text").Str)
			part.ForEach(func(k, val gjson.Result) bool {
				if k.Str != "text" {
					b.WriteString(k.Raw + ":" + val.Raw)
				}
				return true
			})
		default:
			b.WriteString(part.Raw)
		}
		b.WriteByte(';')
		return true
	})
	return texts, b.String()
}

// cpShape is a path without its bodies: what no cap pass may change.
func cpShape(msgs []session.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(string(m.Role) + "/" + string(m.Kind) + "/" + m.ToolCallID + "/" + m.Name + "/" + strconv.FormatBool(m.Content.IsBlocks))
		for _, bl := range m.Content.Blocks {
			_, parts := cpRawParts(bl.ResultRaw)
			b.WriteString(" " + bl.Type + ":" + bl.ID + bl.ToolUseID + parts + string(bl.Input))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func TestCapPassProperties(t *testing.T) {
	blobs := map[string]string{}
	put := func(body string) string {
		sum := cpSHA(body)
		blobs[sum] = body
		return sum
	}
	passes := []struct {
		name string
		run  func([]session.Message) int
		cap  int // the most chars an edited body keeps before its notice
	}{
		{"truncate", session.TruncateToolResults, session.ToolResultMaxChars},
		{"prune", session.PruneToolResults, session.ToolResultPruneChars},
		{"shake", session.ShakeToolResults, session.ToolResultShakeChars},
		{"spill", func(m []session.Message) int { return session.SpillToolResults(m, put) }, session.SpillHeadChars},
	}
	changed := map[string]int{}
	cpForEach(t, true, func(t *testing.T, g *cpGen, sys string, in []session.Message) {
		shape, before := cpShape(in), cpBodies(in)
		for _, p := range passes {
			work := slices.Clone(in)
			n := p.run(work)
			changed[p.name] += n
			if cpShape(work) != shape {
				t.Errorf("%s changed the structure", p.name)
			}
			after := cpBodies(work)
			diff := 0
			for i := range before {
				if before[i] == after[i] {
					continue
				}
				diff++
				if c := utf8.RuneCountInString(after[i]); c > p.cap+110 {
					t.Errorf("%s left a body of %d chars", p.name, c)
				}
				if c := utf8.RuneCountInString(after[i]); c >= utf8.RuneCountInString(before[i]) {
					t.Errorf("%s made a body longer", p.name)
				}
				if p.name == "spill" {
					_, ref, _ := strings.Cut(after[i], session.SpillMark+session.BlobRefPrefix)
					if blobs[ref] != before[i] {
						t.Errorf("spill: the blob does not hold the body")
					}
				}
			}
			if diff != n {
				t.Errorf("%s reported %d changes, made %d", p.name, n, diff)
			}
			if p.name == "truncate" {
				for _, b := range cpToolBodies(work) {
					if c := utf8.RuneCountInString(b); c > session.ToolResultMaxChars+80 {
						t.Errorf("truncate left a tool body of %d chars", c)
					}
				}
			}
			snapshot := cpSnapshot(work)
			if n := p.run(work); n != 0 || !cpSame(work, snapshot) {
				t.Errorf("%s again changed %d fields", p.name, n)
			}
			cpNoNewOrphans(t, p.name, in, work)
		}
	})
	t.Logf("fields changed: %v", changed)
	for _, p := range passes {
		if changed[p.name] == 0 && !testing.Short() {
			t.Errorf("weak generator: %s never changed anything", p.name)
		}
	}
}

// cpToolBodies lists the tool bodies truncate caps: the text of tool
// messages and string toolresults anywhere.
func cpToolBodies(msgs []session.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == session.RoleTool && !m.Content.IsBlocks {
			out = append(out, m.Content.Text)
		}
		for _, b := range m.Content.Blocks {
			switch {
			case b.Type == session.BlockToolResult && b.ResultRaw == nil:
				out = append(out, b.Result)
			case b.Type == session.BlockToolResult:
				texts, _ := cpRawParts(b.ResultRaw)
				out = append(out, texts...)
			case b.Type == session.BlockText && m.Role == session.RoleTool:
				out = append(out, b.Text)
			}
		}
	}
	return out
}

// cpLastRealTurn is the last user turn that answers no call and does not
// open with a summary.
func cpLastRealTurn(msgs []session.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if cpCutPoint(&msgs[i]) && !(msgs[i].Content.IsBlocks && len(msgs[i].Content.Blocks) > 0 && cpIsSummaryBlock(msgs[i].Content.Blocks[0])) {
			return i
		}
	}
	return -1
}

func TestSummaryReplaceProperties(t *testing.T) {
	native := session.Block{Type: "compaction", Raw: json.RawMessage(`{"type":"compaction","encrypted_content":"gAAA"}`)}
	cpForEach(t, true, func(t *testing.T, g *cpGen, sys string, in []session.Message) {
		// SummarizePrefix: cut where SummaryCut says, idempotent.
		cut := session.SummaryCut(in)
		got, out := session.SummarizePrefix(sys, in, "<summary>what happened</summary>", t0)
		if cut == 0 {
			cpSameMessages(t, "SummarizePrefix without a cut", got, in)
		} else {
			want := append([]session.Message{cpSummaryMsg(session.CompactedMarker + "\nSummary:\nwhat happened")}, in[cut:]...)
			if cut == 1 && session.LeadsWithSummary(in) { // replaced in place
				want[0] = in[0]
				want[0].Content = session.TextContent(session.CompactedMarker + "\nSummary:\nwhat happened")
			}
			cpSameMessages(t, "SummarizePrefix", got, want)
			if out.DroppedTranscript != session.MessagesTranscript(in[:cut], session.DroppedTranscriptMaxChars) {
				t.Error("SummarizePrefix: the dropped transcript is not the printed one")
			}
		}
		cpNoNewOrphans(t, "SummarizePrefix", in, got)
		again, _ := session.SummarizePrefix(sys, got, "<summary>what happened</summary>", t0)
		cpSameMessages(t, "SummarizePrefix again", again, got)

		// FullReplace, with a model summary or the local one.
		summary := ""
		if g.r.IntN(2) == 0 {
			summary = "<analysis>x</analysis><summary>all of it</summary>"
		}
		got, out = session.FullReplace(sys, in, summary, t0)
		cpNoNewOrphans(t, "FullReplace", in, got)
		if out.MessagesAfter != uint64(len(got)) || out.TokensAfter != session.PathTokens(sys, got) {
			t.Errorf("FullReplace outcome %+v", out)
		}
		if len(in) > 0 {
			last := got[len(got)-1]
			if last.Kind != session.KindSummary || !strings.HasPrefix(last.Content.Text, session.CompactContinuationPreamble) {
				t.Errorf("FullReplace: the carrier is missing: %s", encode(last))
			}
			if l := cpLastRealTurn(in); l >= 0 && got[0].Role != session.RoleUser {
				t.Errorf("FullReplace: the path opens with %s", got[0].Role)
			}
		}

		// NativeCompaction keeps everything from the last real turn, when
		// an assistant reply without a call (or a system message) precedes
		// it, and otherwise refuses and changes nothing.
		got, _, err := session.NativeCompaction(sys, in, native, t0)
		l := cpLastRealTurn(in)
		accept := l > 0 && (in[l-1].Role == session.RoleSystem || in[l-1].Role == session.RoleAssistant &&
			!slices.ContainsFunc(in[l-1].Content.Blocks, func(b session.Block) bool { return b.Type == session.BlockToolUse }))
		if !accept {
			if err == nil {
				t.Errorf("NativeCompaction accepted a path whycodes refuses (last turn %d)", l)
			}
			cpSameMessages(t, "NativeCompaction refused", got, in)
		} else {
			if err != nil {
				t.Fatal(err)
			}
			cpSameMessages(t, "NativeCompaction tail", got[1:], in[l:])
			cpNoNewOrphans(t, "NativeCompaction", in, got)
		}
	})
}

// BenchmarkCompact shows that Compact is linear: the MB/s figure should
// stay about the same from 1k to 50k messages.
func BenchmarkCompact(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 50_000} {
		g := newCPGen(42, 4_000)
		msgs := g.session(n, false)
		size := 0
		for i := range msgs {
			size += len(msgs[i].AppendJSON(nil))
		}
		budget := session.PathTokens("", msgs) / 2
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, out := session.Compact("", msgs, budget, t0); !out.DroppedMessages() {
					b.Fatal("nothing dropped")
				}
			}
		})
	}
}

// cpRequestPairs checks the provider bodies wc-export builds from a
// compacted path: the summary reaches the model as the user's first
// words, Anthropic's roles alternate from a user message, and no call
// needs a stand-in result that it did not need before the compaction:
// every kept call kept its result.
func cpRequestPairs(t *testing.T, sys string, in, got []session.Message) {
	t.Helper()
	opt := request.Options{Model: "m", Trailing: request.TrailingKeep}
	build := func(f func(string, []session.Message, request.Options) ([]byte, error), msgs []session.Message) []byte {
		body, err := f(sys, msgs, opt)
		if err != nil && !errors.As(err, new(*request.NothingToSendError)) {
			t.Fatalf("request body: %v", err)
		}
		return body
	}
	body := build(request.Anthropic, got)
	msgs := gjson.GetBytes(body, "messages").Array()
	for i := 1; i < len(msgs); i++ {
		if r := msgs[i].Get("role").Str; r == msgs[i-1].Get("role").Str {
			t.Fatalf("anthropic messages %d and %d are both %s", i-1, i, r)
		}
	}
	stand := func(b []byte) int { return strings.Count(string(b), request.MissingResult) }
	if n, was := stand(body), stand(build(request.Anthropic, in)); n > was {
		t.Errorf("anthropic: %d stand-in results, %d before", n, was)
	}
	if n, was := stand(build(request.OpenAI, got)), stand(build(request.OpenAI, in)); n > was {
		t.Errorf("openai: %d stand-in results, %d before", n, was)
	}
	if len(got) > 0 && got[0].Kind == session.KindSummary {
		if first := msgs[0].Get("content.0.text").Str; first != got[0].Content.Text {
			t.Errorf("anthropic: the request opens with %.80q, not the summary", first)
		}
	}
}
