package session_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wctoolkit/wc/pkg/session"
)

// Tests of the compaction code (reference §2.3), following the upstream
// checklist of §4. Where wc deliberately differs from whycodes the test
// says so in a comment starting "Ours:".

// --- helpers (prefixed cp, so as not to collide with other test files) ---

// cpSummaryBlock is the marked text block that carries a summary inside a
// user turn.
func cpSummaryBlock(s string) session.Block {
	return session.Block{Type: session.BlockText, Text: s, Extra: []session.Field{{Key: "kind", Value: json.RawMessage(`"summary"`)}}}
}

func cpKind(k session.Kind, role session.Role, s string) session.Message {
	m := text(role, s)
	m.Kind = k
	return m
}

func cpNamedTool(callID, name, body string) session.Message {
	m := toolMsg(callID, body)
	m.Name = name
	return m
}

func cpResult(id, body string) session.Block {
	return session.Block{Type: session.BlockToolResult, ToolUseID: id, Result: body}
}

func cpTextBlock(s string) session.Block { return session.Block{Type: session.BlockText, Text: s} }

func cpEncodeAll(msgs []session.Message) []string {
	out := make([]string, len(msgs))
	for i := range msgs {
		out[i] = encode(msgs[i])
	}
	return out
}

// cpSame reports whether two paths encode to the same bytes. Equal
// structs encode alike, so only messages that differ are encoded.
func cpSame(a, b []session.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !cpEqual(&a[i], &b[i]) && encode(a[i]) != encode(b[i]) {
			return false
		}
	}
	return true
}

// cpEqual compares every field a message is encoded from.
func cpEqual(a, b *session.Message) bool {
	if a.Role != b.Role || a.Kind != b.Kind || a.ToolCallID != b.ToolCallID || a.Name != b.Name ||
		a.CreatedAt != b.CreatedAt || a.IsError != b.IsError || a.Content.IsBlocks != b.Content.IsBlocks ||
		a.Content.Text != b.Content.Text || len(a.Content.Blocks) != len(b.Content.Blocks) || !cpFieldsEqual(a.Extra, b.Extra) {
		return false
	}
	for i := range a.Content.Blocks {
		x, y := &a.Content.Blocks[i], &b.Content.Blocks[i]
		if x.Type != y.Type || x.Text != y.Text || x.Signature != y.Signature || x.HasSignature != y.HasSignature ||
			x.Data != y.Data || x.ID != y.ID || x.Name != y.Name || string(x.Input) != string(y.Input) ||
			string(x.Source) != string(y.Source) || x.ToolUseID != y.ToolUseID || x.Result != y.Result ||
			string(x.ResultRaw) != string(y.ResultRaw) || string(x.Raw) != string(y.Raw) ||
			(x.IsError == nil) != (y.IsError == nil) || (x.IsError != nil && *x.IsError != *y.IsError) ||
			!cpFieldsEqual(x.Extra, y.Extra) {
			return false
		}
	}
	return true
}

func cpFieldsEqual(a, b []session.Field) bool {
	return slices.EqualFunc(a, b, func(x, y session.Field) bool { return x.Key == y.Key && string(x.Value) == string(y.Value) })
}

// cpSnapshot copies a path deeply enough to see any edit a compaction
// could make: messages and block lists (strings cannot change).
func cpSnapshot(msgs []session.Message) []session.Message {
	out := slices.Clone(msgs)
	for i := range out {
		out[i].Content.Blocks = slices.Clone(out[i].Content.Blocks)
		out[i].Extra = slices.Clone(out[i].Extra)
	}
	return out
}

func cpSameMessages(t testing.TB, what string, got, want []session.Message) {
	t.Helper()
	if cpSame(got, want) {
		return
	}
	g, w := cpEncodeAll(got), cpEncodeAll(want)
	if len(g) != len(w) {
		t.Errorf("%s: %d messages, want %d", what, len(g), len(w))
	}
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			t.Errorf("%s: message %d differs:\n got %.300s\nwant %.300s", what, i, g[i], w[i])
			return
		}
	}
}

// cpIsSummaryBlock reports whether b is a summary-marked text block.
func cpIsSummaryBlock(b session.Block) bool {
	if b.Type != session.BlockText {
		return false
	}
	for _, f := range b.Extra {
		if f.Key == "kind" && string(f.Value) == `"summary"` {
			return true
		}
	}
	return false
}

// cpTurns builds n alternating user/assistant messages of about size chars.
func cpTurns(n, size int) []session.Message {
	var msgs []session.Message
	for i := range n {
		role := session.RoleUser
		if i%2 == 1 {
			role = session.RoleAssistant
		}
		head := "message " + strconv.Itoa(i) + " "
		msgs = append(msgs, text(role, head+strings.Repeat("x", size-len(head))))
	}
	return msgs
}

func cpSHA(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

// cpNeutral is the number of chars whose cut adds a notice of as many
// chars: cutting that many or fewer does not shorten a body.
func cpNeutral() int {
	for k := 1; ; k++ {
		if len(notice(k)) == k {
			return k
		}
	}
}

// --- constants and the outcome ---

func TestCompactConstants(t *testing.T) {
	cases := []struct {
		name      string
		got, want int
	}{
		{"PruneKeepRecentTools", session.PruneKeepRecentTools, 4},
		{"MinKeepMessages", session.MinKeepMessages, 4},
		{"SummaryTokenSlack", session.SummaryTokenSlack, 256},
		{"DroppedTranscriptMaxChars", session.DroppedTranscriptMaxChars, 12_000},
		{"FullTranscriptMaxChars", session.FullTranscriptMaxChars, 48_000},
		{"SpillHeadChars", session.SpillHeadChars, 400},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d (reference §2.1)", c.name, c.got, c.want)
		}
	}
	if session.SpillMark != "full output saved: " || session.CompactedMarker != "[Compacted earlier conversation]" {
		t.Error("markers differ from reference §2.1")
	}
	// The spill head is below the shake cap, so neither prune nor shake can
	// cut the pointer off.
	if session.SpillHeadChars+80 > session.ToolResultShakeChars {
		t.Error("a spilled body does not fit under the shake cap")
	}
}

// compact_outcome_predicates_cover_all_states.
func TestCompactOutcomePredicates(t *testing.T) {
	type want struct{ reduced, over0, over100, failed0, failed100, dropped bool }
	cases := []struct {
		name string
		o    session.CompactOutcome
		want want
	}{
		{"nothing changed, under", session.CompactOutcome{TokensBefore: 50, TokensAfter: 50, MessagesBefore: 3, MessagesAfter: 3},
			want{}},
		{"nothing changed, over", session.CompactOutcome{TokensBefore: 500, TokensAfter: 500, MessagesBefore: 3, MessagesAfter: 3},
			want{over100: true, failed100: true}},
		{"tokens reduced, still over", session.CompactOutcome{TokensBefore: 500, TokensAfter: 200, MessagesBefore: 3, MessagesAfter: 3},
			want{reduced: true, over100: true}},
		{"messages reduced only", session.CompactOutcome{TokensBefore: 500, TokensAfter: 500, MessagesBefore: 9, MessagesAfter: 5, DroppedTranscript: "User: x\n\n"},
			want{reduced: true, over100: true, dropped: true}},
		{"reduced under", session.CompactOutcome{TokensBefore: 500, TokensAfter: 90, MessagesBefore: 9, MessagesAfter: 5, DroppedTranscript: "x"},
			want{reduced: true, dropped: true}},
		{"exactly at the threshold is not over", session.CompactOutcome{TokensBefore: 100, TokensAfter: 100},
			want{}},
		{"grew", session.CompactOutcome{TokensBefore: 100, TokensAfter: 101, MessagesBefore: 1, MessagesAfter: 2},
			want{over100: true, failed100: true}},
		{"zero", session.CompactOutcome{}, want{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := want{c.o.Reduced(), c.o.StillOver(0), c.o.StillOver(100), c.o.Failed(0), c.o.Failed(100), c.o.DroppedMessages()}
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
	b, _ := json.Marshal(session.CompactOutcome{TokensBefore: 1, TokensAfter: 2, MessagesBefore: 3, MessagesAfter: 4})
	if string(b) != `{"tokens_before":1,"tokens_after":2,"messages_before":3,"messages_after":4}` {
		t.Errorf("outcome JSON %s", b)
	}
}

// --- Compact ---

// test_compact_under_budget_is_noop.
func TestCompactUnderBudgetIsNoop(t *testing.T) {
	msgs := []session.Message{
		text(session.RoleUser, "hello"),
		blocks(session.RoleAssistant, cpTextBlock("hi"), toolUse("t1", "read", `{"path":"a.go"}`)),
		cpNamedTool("t1", "read", "package a"),
		text(session.RoleAssistant, "done"),
		text(session.RoleUser, "thanks"),
	}
	before := cpEncodeAll(msgs)
	for _, budget := range []uint64{100_000, math.MaxUint64} {
		got, out := session.Compact("be terse", msgs, budget, t0)
		cpSameMessages(t, "under budget", got, msgs)
		tokens := session.PathTokens("be terse", msgs)
		if out != (session.CompactOutcome{TokensBefore: tokens, TokensAfter: tokens, MessagesBefore: 5, MessagesAfter: 5}) {
			t.Errorf("outcome %+v", out)
		}
		if out.Reduced() || out.DroppedMessages() || out.StillOver(budget) {
			t.Error("predicates")
		}
	}
	if !slices.Equal(cpEncodeAll(msgs), before) {
		t.Error("Compact changed its input")
	}
}

// test_compact_few_messages: at most MinKeepMessages messages are never
// dropped, whatever the budget.
func TestCompactFewMessages(t *testing.T) {
	for n := 0; n <= session.MinKeepMessages; n++ {
		msgs := cpTurns(n, 4000)
		got, out := session.Compact("", msgs, 1, t0)
		cpSameMessages(t, "few messages", got, msgs)
		if out.DroppedMessages() || out.MessagesAfter != uint64(n) {
			t.Errorf("n=%d: %+v", n, out)
		}
		if n > 0 && !out.Failed(1) {
			t.Errorf("n=%d: an undroppable path over budget should fail", n)
		}
	}
}

// test_compact_drops_to_token_budget: ten alternating messages of 200
// chars (50 tokens each).
func TestCompactDropsToTokenBudget(t *testing.T) {
	msgs := cpTurns(10, 200)
	last := encode(msgs[9])
	t.Run("budget too small: the largest cut allowed", func(t *testing.T) {
		// As whycodes: when no start fits, the oldest messages are dropped
		// until MinKeepMessages remain, and the summary opens the path.
		got, out := session.Compact("", msgs, 200, t0)
		if !out.DroppedMessages() || !strings.Contains(out.DroppedTranscript, "User:") {
			t.Fatalf("nothing dropped: %+v", out)
		}
		if len(got) < 5 || len(got) >= 11 || out.MessagesAfter != uint64(len(got)) {
			t.Fatalf("%d messages", len(got))
		}
		if encode(got[len(got)-1]) != last {
			t.Error("the last message was not kept")
		}
		sum := got[0].Content.Text
		if got[0].Kind != session.KindSummary || got[0].Role != session.RoleUser {
			t.Errorf("first message %s", encode(got[0]))
		}
		goal := func(i int) string { return "message " + strconv.Itoa(i) + " " + strings.Repeat("x", 109) + "…" } // 119 chars + …
		want := "[6 earlier messages trimmed for context management (user=3, assistant=3, tool=0)]\nGoals: " +
			goal(0) + " | " + goal(2) + " | " + goal(4)
		if sum != want {
			t.Errorf("summary\n got %q\nwant %q", sum, want)
		}
		cpSameMessages(t, "tail", got[1:], msgs[6:])
		if !out.Reduced() || out.TokensAfter >= out.TokensBefore {
			t.Errorf("not reduced: %+v", out)
		}
	})
	t.Run("budget that fits: the smallest cut", func(t *testing.T) {
		// Messages of 100 tokens, target 900: a tail of 8 (800) + 256 is
		// over, a tail of 6 (600) + 256 fits.
		msgs := cpTurns(10, 400)
		got, out := session.Compact("", msgs, 1200, t0)
		if len(got) != 7 || out.MessagesAfter != 7 {
			t.Fatalf("%d messages, want 7", len(got))
		}
		cpSameMessages(t, "tail", got[1:], msgs[4:])
		if out.DroppedTranscript != session.MessagesTranscript(msgs[:4], session.DroppedTranscriptMaxChars) {
			t.Errorf("dropped %q", out.DroppedTranscript)
		}
		if out.StillOver(1200) || out.TokensAfter > 900 {
			t.Errorf("still over: %+v", out)
		}
	})
}

// compact_breaks_when_tail_reaches_target_before_minimum: one 2,000-char
// message and five small ones; compact(500) keeps the summary and the
// five, instead of running on to MinKeepMessages.
func TestCompactBreaksWhenTailReachesTargetBeforeMinimum(t *testing.T) {
	msgs := []session.Message{text(session.RoleUser, strings.Repeat("x", 2000))}
	for i := range 5 {
		msgs = append(msgs, text(session.RoleUser, "small "+strconv.Itoa(i)))
	}
	got, out := session.Compact("", msgs, 500, t0)
	if !out.DroppedMessages() || out.MessagesAfter != 6 {
		t.Fatalf("%d messages, want 6 (summary plus five retained small messages)", len(got))
	}
	cpSameMessages(t, "tail", got[1:], msgs[1:])
}

// compact_handles_zero_budget_and_undroppable_tail.
func TestCompactZeroBudgetAndUndroppableTail(t *testing.T) {
	huge := strings.Repeat("system ", 10_000)
	t.Run("zero budget, short path", func(t *testing.T) {
		msgs := cpTurns(4, 100)
		got, out := session.Compact(huge, msgs, 0, t0)
		cpSameMessages(t, "zero budget", got, msgs)
		if out.DroppedMessages() || out.Reduced() || out.TokensAfter <= 1 {
			t.Errorf("%+v", out)
		}
	})
	t.Run("zero budget, long path", func(t *testing.T) {
		// As whycodes: nothing fits, so the oldest go down to the minimum.
		msgs := cpTurns(10, 400)
		got, out := session.Compact(huge, msgs, 0, t0)
		if len(got) != 5 || !out.DroppedMessages() || !out.Reduced() || !out.StillOver(1) || out.Failed(1) {
			t.Errorf("%d messages, %+v", len(got), out)
		}
	})
}

// Ours: one turn of a prompt and a long tool loop (an agentic session)
// is cut inside, where no result loses its call, keeping the prompt.
// whycodes drops the oldest messages wherever the budget is met,
// orphaning tool results, prompt first.
func TestDepartureCompactCutsAtAnyMessage(t *testing.T) {
	body := strings.Repeat("r", 1000) // 250 tokens
	msgs := []session.Message{text(session.RoleUser, "refactor the store")}
	for i := range 20 {
		id := "c" + strconv.Itoa(i)
		msgs = append(msgs, blocks(session.RoleAssistant, cpTextBlock("step "+strconv.Itoa(i)), toolUse(id, "read", `{"path":"pkg/a.go"}`)))
		if i%2 == 0 {
			msgs = append(msgs, cpNamedTool(id, "read", body))
		} else {
			msgs = append(msgs, blocks(session.RoleUser, cpResult(id, body))) // Anthropic's form
		}
	}
	msgs = append(msgs, text(session.RoleAssistant, "done"))
	tokens := session.PathTokens("", msgs)
	for _, budget := range []uint64{4000, 2000, 1000, 100} {
		prepared, cut := session.CompactCut("", msgs, budget)
		got, out := session.Compact("", msgs, budget, t0)
		if cut.Start == 0 || cut.Keep != 0 || !out.DroppedMessages() {
			t.Fatalf("budget %d: cut %+v", budget, cut)
		}
		if prepared[cut.Start].Role != session.RoleAssistant {
			t.Errorf("budget %d: the kept part starts with %s", budget, prepared[cut.Start].Role)
		}
		if id := cpOrphaned(got); id != "" {
			t.Errorf("budget %d: result %s lost its call", budget, id)
		}
		if got[0].Kind != session.KindSummary || encode(got[1]) != encode(msgs[0]) {
			t.Errorf("budget %d: opens with %s, %s", budget, encode(got[0]), encode(got[1]))
		}
		if target := budget * 3 / 4; budget >= 1000 && out.TokensAfter > target {
			t.Errorf("budget %d: %d tokens after, target %d (from %d)", budget, out.TokensAfter, target, tokens)
		}
		if budget == 100 && (!out.StillOver(budget) || len(got) != 5) {
			t.Errorf("budget 100: %d messages, %+v", len(got), out)
		}
		if !strings.Contains(got[0].Content.Text, "Tools used: read") || strings.Contains(got[0].Content.Text, "Goals:") {
			t.Errorf("budget %d: summary %q", budget, got[0].Content.Text)
		}
	}
	// A prompt too big to keep within the budget goes too, and only then.
	big := slices.Clone(msgs)
	big[0] = text(session.RoleUser, strings.Repeat("p", 12_000))
	_, cut := session.CompactCut("", big, 4000)
	if cut.Start == 0 || cut.Keep != -1 || big[cut.Start].Role != session.RoleAssistant {
		t.Errorf("big prompt: cut %+v", cut)
	}
	got, out := session.Compact("", big, 4000, t0)
	if out.StillOver(3000) || cpOrphaned(got) != "" || !strings.Contains(got[0].Content.Text, "Goals: pppp") {
		t.Errorf("big prompt: %+v", out)
	}
}

// Ours: the fixed SUMMARY_TOKEN_SLACK of 256 is a floor; a summary that
// costs more is counted at its cost, so a result said to fit does and
// compacting it again changes nothing. whycodes reserves 256 whatever the
// summary costs.
func TestDepartureCompactReservesFixedSummarySlack(t *testing.T) {
	var msgs []session.Message
	for i := range 20 {
		// Long paths in the first assistant messages make a summary of
		// about 450 tokens.
		p := "src/" + strings.Repeat(strconv.Itoa(i%10), 190) + ".go"
		msgs = append(msgs, text(session.RoleUser, "task "+strconv.Itoa(i)), text(session.RoleAssistant, "edited "+p+" "+strings.Repeat("w", 300)))
	}
	budget := uint64(2035) // target 1526: about ten turns and 256
	prepared, cut := session.CompactCut("", msgs, budget)
	drop := cut.Dropped(prepared)
	sum := session.EstimateTokens(session.SummarizeTrimmed(drop))
	if sum <= session.SummaryTokenSlack {
		t.Fatalf("summary of %d tokens: the test needs one over the slack", sum)
	}
	got, out := session.Compact("", msgs, budget, t0)
	if out.StillOver(1526) {
		t.Errorf("%d tokens after, over the target", out.TokensAfter)
	}
	// whycodes' rule, with 256 reserved, starts earlier and ends over.
	whycodes := 0
	for s := 1; s < len(msgs); s++ {
		if session.PathTokens("", prepared[s:])+session.SummaryTokenSlack <= 1526 {
			whycodes = s
			break
		}
	}
	if whycodes >= cut.Start || session.PathTokens("", prepared[whycodes:])+session.EstimateTokens(session.SummarizeTrimmed(prepared[:whycodes])) <= 1526 {
		t.Errorf("whycodes' start %d, ours %d: the case does not tell them apart", whycodes, cut.Start)
	}
	again, out2 := session.Compact("", got, budget, t0)
	if out2.DroppedMessages() {
		t.Error("compacting again dropped more")
	}
	cpSameMessages(t, "again", again, got)
}

// The summary is whycodes' shape: a user text message of its own that
// opens the path ("kind":"summary" added), not folded into the user's
// words; what follows is kept as it was.
func TestCompactSummaryIsItsOwnUserMessage(t *testing.T) {
	big := strings.Repeat("x", 2000)
	for _, first := range []session.Message{
		text(session.RoleUser, "go on"),
		blocks(session.RoleUser, session.Block{Type: session.BlockImage, Source: json.RawMessage(`{"type":"url","url":"u"}`)}, cpTextBlock("see")),
	} {
		msgs := []session.Message{text(session.RoleUser, "old task"), text(session.RoleAssistant, big),
			first, text(session.RoleAssistant, "a"), text(session.RoleUser, "b"), text(session.RoleAssistant, "c")}
		before := cpEncodeAll(msgs)
		got, _ := session.Compact("", msgs, 400, t0)
		if len(got) != 5 {
			t.Fatalf("%d messages", len(got))
		}
		sum := session.SummarizeTrimmed(msgs[:2])
		want := `{"role":"user","content":` + strconv.Quote(sum) + `,"created_at":"2026-08-21T12:00:00Z","kind":"summary"}`
		if encode(got[0]) != want {
			t.Errorf("\n got %s\nwant %s", encode(got[0]), want)
		}
		cpSameMessages(t, "kept", got[1:], msgs[2:])
		if !slices.Equal(cpEncodeAll(msgs), before) {
			t.Error("input changed")
		}
	}
}

// The dropped prefix may itself open with the summary of an earlier
// compaction; compacting again replaces it with one summary, and a
// compacted path under budget is left as it is.
func TestCompactTwice(t *testing.T) {
	big := strings.Repeat("y", 2000)
	msgs := []session.Message{
		text(session.RoleUser, "task one"), text(session.RoleAssistant, big),
		text(session.RoleUser, "task two"), text(session.RoleAssistant, big),
		text(session.RoleUser, "task three"), text(session.RoleAssistant, big),
		text(session.RoleUser, "task four"), text(session.RoleAssistant, "ok"),
		text(session.RoleUser, "task five"), text(session.RoleAssistant, "ok"),
	}
	once, _ := session.Compact("", msgs, 1400, t0) // keeps from "task three"
	if n := len(once); n != 7 {
		t.Fatalf("first compaction kept %d messages", n)
	}
	if again, out := session.Compact("", once, 1400, t0); out.DroppedMessages() || !cpSame(again, once) {
		t.Error("compacting a compacted path changed it")
	}
	grown := append(slices.Clone(once), text(session.RoleUser, "task six"), text(session.RoleAssistant, "ok"))
	twice, out := session.Compact("", grown, 200, t0)
	if !out.DroppedMessages() {
		t.Fatal("nothing dropped")
	}
	if twice[0].Kind != session.KindSummary || strings.Count(cpEncodeAll(twice)[0]+strings.Join(cpEncodeAll(twice[1:]), ""), "earlier messages trimmed") != 1 {
		t.Errorf("summaries stacked: %s", encode(twice[0]))
	}
	if !strings.Contains(twice[0].Content.Text, "task three") {
		t.Errorf("the goal of a dropped turn is lost: %q", twice[0].Content.Text)
	}
}

// The cut is the smallest start whose tail fits 3/4 of the budget with
// SummaryTokenSlack to spare, found with suffix sums.
func TestCompactCutSelection(t *testing.T) {
	// Turns of 100 tokens each (a 200-char user and a 200-char assistant).
	msgs := cpTurns(20, 200)
	tokens := session.PathTokens("", msgs) // 1000
	if tokens != 1000 {
		t.Fatalf("%d tokens", tokens)
	}
	budget := func(target uint64) uint64 { return (4*target + 2) / 3 } // the least budget whose 3/4 is target
	cases := []struct {
		budget uint64
		cut    int
	}{
		{budget(1000), 0},        // the path fits the target exactly
		{budget(999), 6},         // a tail of 14 messages (700) + 256 fits
		{budget(756), 10},        // a tail of 10 (500) + 256
		{budget(356), 16},        // a tail of 2 would fit, past the minimum: the largest allowed
		{1, 16},                  // nothing fits
		{0, 16},                  // nor here
		{math.MaxUint64, 0},      // no overflow in 3/4
		{math.MaxUint64 / 2, 0},  // nor here
		{budget(1000) - 1, 6},    // one below: target 999
		{budget(756) + 1, 10},    // target 756 still
		{budget(757) - 1, 10},    // the rounding of 3/4
		{budget(856), 8},         // a tail of 12 (600) + 256 = 856
		{budget(855), 10},        // one token short
		{budget(356 + 100), 16},  // a tail of 4 (200) + 256 = 456: message 16
		{budget(356 + 99), 16},   // over: still the largest allowed
		{budget(1), 16},          // target 1
		{budget(2000), 0},        // well under
		{budget(1000) + 1000, 0}, // well under
	}
	for _, c := range cases {
		_, cut := session.CompactCut("", msgs, c.budget)
		if want := cpRefCut("", msgs, c.budget); cut != want {
			t.Errorf("budget %d: reference cut %+v, CompactCut %+v", c.budget, want, cut)
		}
		if cut != (session.Cut{Start: c.cut, Keep: -1}) {
			t.Errorf("budget %d: cut %+v, want %d", c.budget, cut, c.cut)
		}
	}
	// A system prompt counts against the budget.
	sys := strings.Repeat("s", 400) // 100 tokens
	if _, cut := session.CompactCut(sys, msgs, budget(756)); cut.Start != 12 {
		t.Errorf("with a system prompt: cut %+v, want 12", cut)
	}
}

// cpCutPoint: a user turn that answers no tool call.
func cpCutPoint(m *session.Message) bool {
	if !m.IsUserTurn() {
		return false
	}
	for _, b := range m.Content.Blocks {
		if b.Type == session.BlockToolResult {
			return false
		}
	}
	return true
}

// Ours: a user turn that also carries tool results (Anthropic allows text
// after the results in one user message) answers the calls before it, so
// Compact does not cut there.
func TestCompactKeepsResultsWithTheirCalls(t *testing.T) {
	big := strings.Repeat("z", 2000)
	msgs := []session.Message{
		text(session.RoleUser, "start"),
		blocks(session.RoleAssistant, cpTextBlock(big), toolUse("t1", "read", `{}`)),
		blocks(session.RoleUser, cpResult("t1", "contents"), cpTextBlock("and also check b.go")), // a turn, with a result
		text(session.RoleAssistant, big),
		text(session.RoleUser, "next"),
		text(session.RoleAssistant, "a"),
		text(session.RoleUser, "b"),
		text(session.RoleAssistant, "c"),
	}
	for budget := uint64(1); budget < 2000; budget += 3 {
		got, _ := session.Compact("", msgs, budget, t0)
		if id := cpOrphaned(got); id != "" {
			t.Fatalf("budget %d: result %s lost its call", budget, id)
		}
	}
	if cut := session.SummaryCut(msgs); cut != 4 {
		t.Errorf("SummaryCut = %d, want 4", cut)
	}
	if cut := session.SummaryCut(msgs[:7]); cut != 0 {
		t.Errorf("SummaryCut of 7 = %d, want 0", cut)
	}
	got, _ := session.SummarizePrefix("", msgs[:7], "S", t0)
	if id := cpOrphaned(got); id != "" {
		t.Errorf("SummarizePrefix: result %s lost its call", id)
	}
}

// cpOrphaned returns the first tool result id with no earlier call.
func cpOrphaned(msgs []session.Message) string {
	calls := map[string]bool{}
	for _, m := range msgs {
		if m.Role == session.RoleTool && m.ToolCallID != "" && !calls[m.ToolCallID] {
			return m.ToolCallID
		}
		for _, b := range m.Content.Blocks {
			switch b.Type {
			case session.BlockToolUse:
				calls[b.ID] = true
			case session.BlockToolResult:
				if !calls[b.ToolUseID] {
					return b.ToolUseID
				}
			}
		}
	}
	return ""
}

// Ours (follows from cutting over budget, which whycodes does not): a cut
// is only worth it when the summary is smaller than the prefix it
// replaces, so Compact never makes a path bigger.
func TestCompactNeverGrowsThePath(t *testing.T) {
	msgs := []session.Message{
		text(session.RoleUser, "hi"), text(session.RoleAssistant, "ok"),
		text(session.RoleUser, "now"), text(session.RoleAssistant, strings.Repeat("w", 4000)),
		text(session.RoleUser, "y"), text(session.RoleAssistant, "z"),
	}
	got, out := session.Compact("", msgs, 100, t0)
	if out.TokensAfter > out.TokensBefore {
		t.Errorf("tokens grew: %+v", out)
	}
	if out.DroppedMessages() {
		t.Errorf("a summary of %q replaced less than it costs", out.DroppedTranscript)
	}
	cpSameMessages(t, "unchanged", got, msgs)
}

// Compact truncates and prunes even when nothing is dropped, and never
// edits the caller's messages.
func TestCompactTruncatesAndPrunes(t *testing.T) {
	huge := strings.Repeat("h", session.ToolResultMaxChars+100)
	mid := strings.Repeat("m", 3000)
	msgs := []session.Message{text(session.RoleUser, "go")}
	for i := range 6 {
		id := "c" + strconv.Itoa(i)
		body := mid
		if i == 5 {
			body = huge
		}
		msgs = append(msgs, blocks(session.RoleAssistant, toolUse(id, "read", `{}`)), cpNamedTool(id, "read", body))
	}
	before := cpEncodeAll(msgs)
	got, out := session.Compact("", msgs, 1_000_000, t0)
	if out.DroppedMessages() || len(got) != len(msgs) {
		t.Fatalf("%+v", out)
	}
	if got[2].Content.Text != mid[:session.ToolResultPruneChars]+notice(3000-session.ToolResultPruneChars) {
		t.Error("the oldest tool result was not pruned")
	}
	if got[12].Content.Text != huge[:session.ToolResultMaxChars]+notice(100) {
		t.Error("the newest tool result was not truncated")
	}
	if got[6].Content.Text != mid {
		t.Error("a recent tool result was pruned")
	}
	if !out.Reduced() || out.TokensAfter >= out.TokensBefore {
		t.Errorf("%+v", out)
	}
	if !slices.Equal(cpEncodeAll(msgs), before) {
		t.Error("Compact changed its input")
	}
}

// CompactCut and Compact agree on the cut, so the transcript printed for a
// model is exactly what its summary replaces.
func TestCompactCutAgreesWithCompact(t *testing.T) {
	msgs := cpTurns(30, 300)
	msgs[5] = cpNamedTool("x", "read", strings.Repeat("r", 40_000)) // truncated before the cut
	for _, budget := range []uint64{1, 500, 1500, 3000, 100_000} {
		prepared, cut := session.CompactCut("sys", msgs, budget)
		got, out := session.Compact("sys", msgs, budget, t0)
		if cut.Start == 0 {
			cpSameMessages(t, "no cut", got, prepared)
			continue
		}
		if out.DroppedTranscript != session.MessagesTranscript(cut.Dropped(prepared), session.DroppedTranscriptMaxChars) {
			t.Errorf("budget %d: dropped transcript differs from the printed one", budget)
		}
		cpSameMessages(t, "tail", got[1:], cut.Kept(prepared))
		withSummary := session.PrependSummary(got, "<summary>model summary</summary>", t0)
		if len(withSummary) != len(got) || !strings.Contains(encode(withSummary[0]), "model summary") ||
			strings.Contains(encode(withSummary[0]), "earlier messages trimmed") {
			t.Errorf("budget %d: the model summary did not replace the local one: %s", budget, encode(withSummary[0]))
		}
	}
}

// --- SummarizeTrimmed ---

// summary_helpers_collect_roles_paths_tools_and_limits. Ours: goals skip
// notes and summaries, and "Tools used" is filled in, since our tool
// messages keep their Name (whycodes' never do).
func TestSummarizeTrimmed(t *testing.T) {
	img := session.Block{Type: session.BlockImage, Source: json.RawMessage(`{}`)}
	cases := []struct {
		name   string
		prefix []session.Message
		want   string
	}{
		{"empty", nil, "[0 earlier messages trimmed for context management (user=0, assistant=0, tool=0)]"},
		{"roles, goals, paths, tools", []session.Message{
			text(session.RoleSystem, "be terse"),
			text(session.RoleUser, "  \n  Fix the flaky login test  \nsecond line"),
			blocks(session.RoleAssistant, cpTextBlock("I will read auth/login.go, then (pkg/x.go) and `cmd/main.go`;"),
				toolUse("t1", "read", `{"path":"auth/login_test.go"}`), session.Block{Type: session.BlockThinking, Text: "think about z/y.go"}),
			cpNamedTool("t1", "read", "# auth/login_test.go\npackage auth"),
			cpNamedTool("t2", "grep", "see https://example.com/a.b and a/b and x.y"),
			cpKind(session.KindNote, session.RoleUser, "note: use go test"),
			cpKind(session.KindSummary, session.RoleUser, "an old summary"),
			text(session.RoleUser, session.CompactedMarker+"\nGoals: x"),
			blocks(session.RoleUser, img, cpTextBlock("Then also update docs/README.md")),
			blocks(session.RoleUser, cpResult("t3", "in user/results.go")),
			cpNamedTool("t4", "read", "nothing"),
			toolMsg("t5", "no name/here.txt"),
		}, "[12 earlier messages trimmed for context management (user=6, assistant=1, tool=4, other=1)]\n" +
			"Goals: Fix the flaky login test | Then also update docs/README.md\n" +
			"Files: auth/login.go, pkg/x.go, cmd/main.go, auth/login_test.go, name/here.txt\n" +
			"Tools used: read, grep"},
		{"goal rules", []session.Message{
			text(session.RoleUser, "[bracketed first line]\nreal goal below"), // skipped: stubs open with [
			text(session.RoleUser, "same goal"),
			text(session.RoleUser, "  same goal  "), // duplicate
			text(session.RoleUser, "\n\n"),          // no line
			blocks(session.RoleUser, img),           // no text
			text(session.RoleUser, strings.Repeat("g", 120)),
			text(session.RoleUser, strings.Repeat("é", 121)),
			text(session.RoleUser, "a fourth goal"),
		}, "[8 earlier messages trimmed for context management (user=8, assistant=0, tool=0)]\n" +
			"Goals: same goal | " + strings.Repeat("g", 120) + " | " + strings.Repeat("é", 119) + "…"},
		{"tooluse paths and headers", []session.Message{
			blocks(session.RoleAssistant,
				toolUse("a", "edit", `{"path":"x/one.go","other":"y/two.go"}`),
				toolUse("b", "edit", `{"path":"nodot/here"}`),
				toolUse("c", "edit", `not json`),
				cpResult("r", "#   spaced/header.md\n"+"tail [bracket/file.txt]")),
		}, "[1 earlier messages trimmed for context management (user=0, assistant=1, tool=0)]\n" +
			"Files: x/one.go, nodot/here, spaced/header.md, bracket/file.txt"},
		// As whycodes: a header names a file by its first word, and a
		// tool's input path is taken as it is.
		{"header's first word, bare tool path", []session.Message{
			blocks(session.RoleAssistant, toolUse("a", "read", `{"path":"Makefile"}`), cpTextBlock("# src/a.rs (lines 1-20)")),
		}, "[1 earlier messages trimmed for context management (user=0, assistant=1, tool=0)]\n" +
			"Files: Makefile, src/a.rs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := session.SummarizeTrimmed(c.prefix); got != c.want {
				t.Errorf("\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

// helper_limits_and_duplicate_summary_metadata_are_covered: duplicates
// collapse, files and tools stop at 8, goals at 3.
func TestSummarizeTrimmedLimits(t *testing.T) {
	var prefix []session.Message
	var wantFiles, wantTools []string
	for i := range 12 {
		n := strconv.Itoa(i)
		prefix = append(prefix, text(session.RoleUser, "goal "+strconv.Itoa(i%5)))
		prefix = append(prefix, blocks(session.RoleAssistant, toolUse(n, "t", `{"path":"dir/f`+n+`.go"}`)))
		prefix = append(prefix, cpNamedTool(n, "tool"+n, "dir/f"+n+".go again"))
		prefix = append(prefix, cpNamedTool(n, "tool"+n, "dup"))
		if i < 8 {
			wantFiles = append(wantFiles, "dir/f"+n+".go")
			wantTools = append(wantTools, "tool"+n)
		}
	}
	want := "[48 earlier messages trimmed for context management (user=12, assistant=12, tool=24)]\n" +
		"Goals: goal 0 | goal 1 | goal 2\n" +
		"Files: " + strings.Join(wantFiles, ", ") + "\n" +
		"Tools used: " + strings.Join(wantTools, ", ")
	if got := session.SummarizeTrimmed(prefix); got != want {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
}

// looks_like_path and the scan limits (40 header lines, 200 tokens).
func TestSummarizeTrimmedPathRules(t *testing.T) {
	files := func(body string) string {
		s := session.SummarizeTrimmed([]session.Message{toolMsg("x", body)})
		_, f, _ := strings.Cut(s, "\nFiles: ")
		return f
	}
	cases := []struct{ body, want string }{
		{"a/b", ""},                            // no dot
		{"a.b", ""},                            // no slash
		{"./x", "./x"},                         // 3 bytes
		{"/x", ""},                             // 2 bytes
		{`c:\dir\file.txt`, `c:\dir\file.txt`}, // backslash
		{"http://host/a.b https://h/x.y file://z/w.q", ""},
		{"/" + strings.Repeat("d", 196) + ".go", "/" + strings.Repeat("d", 196) + ".go"}, // 200 bytes
		{"/" + strings.Repeat("d", 197) + ".go", ""},                                     // 201 bytes
		{`"quoted/path.go",`, "quoted/path.go"},
		{strings.Repeat("w w w w w w\n", 39) + "# deep/header.go", "deep/header.go"}, // line 40, token 236
		{strings.Repeat("w w w w w w\n", 40) + "# deep/header.go", ""},               // line 41
		{strings.Repeat("w ", 199) + "late/tok.go", "late/tok.go"},                   // token 200
		{strings.Repeat("w ", 200) + "late/tok.go", ""},                              // token 201
	}
	for _, c := range cases {
		if got := files(c.body); got != c.want {
			t.Errorf("files of %.40q = %q, want %q", c.body, got, c.want)
		}
	}
}

// --- transcripts ---

// transcripts_cover_all_roles_blocks_and_caps.
func TestMessagesTranscript(t *testing.T) {
	msgs := []session.Message{
		text(session.RoleSystem, "sys"),
		blocks(session.RoleAssistant,
			session.Block{Type: session.BlockThinking, Text: "hidden thought"},
			cpTextBlock("looking at the code"),
			toolUse("t1", "grep", `{"pattern":"x"}`),
			cpResult("t1", "result"),
			session.Block{Type: session.BlockImage, Source: json.RawMessage(`{}`)},
			session.Block{Type: session.BlockRedactedThinking, Data: "opaque"}),
		text(session.RoleUser, "hi"),
		toolMsg("t1", "out"),
		blocks(session.RoleUser, session.Block{Type: session.BlockToolResult, ToolUseID: "t2",
			ResultRaw: json.RawMessage(`[{"type":"text","text":"part one"},{"type":"text","text":"part two"}]`)}),
	}
	pieces := []string{
		"System: sys\n\n",
		"Assistant: looking at the code\ngrep\nresult\n\n", // thinking and images are left out
		"User: hi\n\n",
		"Tool: out\n\n",
		"User: part one\npart two\n\n",
	}
	full := strings.Join(pieces, "")
	if got := session.MessagesTranscript(msgs, 1000); got != full {
		t.Fatalf("\n got %q\nwant %q", got, full)
	}
	if !strings.Contains(full, "grep\nresult") {
		t.Fatal("tooluse name and result")
	}
	sys, asst := pieces[0], pieces[1]
	cases := []struct {
		max  int
		want string
	}{
		{len(full), full},
		{len(full) + 100, full},
		{len(full) - 1, strings.Join(pieces[:4], "")}, // 24 bytes left: no partial piece
		{50, sys + asst[:37] + "\n…"},
		{10, ""},
		{0, ""},
		// remaining exactly 32: nothing more; 33: a partial piece.
		{len(sys) + 32, sys},
		{len(sys) + 33, sys + asst[:33] + "\n…"},
	}
	for _, c := range cases {
		got := session.MessagesTranscript(msgs, c.max)
		if got != c.want {
			t.Errorf("max %d:\n got %q\nwant %q", c.max, got, c.want)
		}
	}
	if got := session.MessagesTranscript(msgs, 50); !strings.HasSuffix(got, "\n…") {
		t.Error(`cap 50 does not end with "\n…"`)
	}
	// The partial piece is cut on a char boundary.
	wide := []session.Message{text(session.RoleUser, strings.Repeat("é", 100))}
	if got := session.MessagesTranscript(wide, 60); got != "User: "+strings.Repeat("é", 54)+"\n…" {
		t.Errorf("wide cut %q", got)
	}
	if session.MessagesTranscript(nil, 100) != "" {
		t.Error("empty")
	}
}

// transcript_and_full_replace_edge_cases (transcript half).
func TestTranscriptsForSummaries(t *testing.T) {
	msgs := cpTurns(7, 20)
	if got, want := session.TranscriptForCompactSummary(msgs, 10_000), session.MessagesTranscript(msgs[:3], 10_000); got != want {
		t.Errorf("compact transcript\n got %q\nwant %q", got, want)
	}
	if got := session.TranscriptForCompactSummary(msgs[:4], 10_000); got != "" {
		t.Errorf("4 messages leave nothing to summarise: %q", got)
	}
	if got := session.TranscriptForCompactSummary(nil, 10_000); got != "" {
		t.Error("empty")
	}
	long := cpTurns(400, 300) // about 120k chars
	if session.TranscriptForFullSummary(long, 0) != session.TranscriptForFullSummary(long, 48_000) {
		t.Error("max 0 is not 48,000")
	}
	if n := len(session.TranscriptForFullSummary(long, 0)); n > 48_000+len("\n…") || n < 47_000 {
		t.Errorf("full transcript of %d bytes", n)
	}
	if session.TranscriptForFullSummary(msgs, 0) != session.MessagesTranscript(msgs, 1<<20) {
		t.Error("the full transcript covers every message")
	}
}

// --- model summaries ---

// format_compact_summary_strips_analysis_and_wraps.
func TestFormatCompactSummary(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"empty", "", ""},
		{"blank", " \n\t ", ""},
		{"plain", "  just text  ", "just text"},
		{"analysis and summary", "  <analysis>\nthinking\n</analysis>\n\n<summary>\nDid X.\nThen Y.\n</summary>\n", "Summary:\nDid X.\nThen Y."},
		{"analysis without close ends at summary", "<analysis>no close <summary>S</summary>", "Summary:\nS"},
		{"analysis only", "<analysis>only analysis", ""},
		{"closed analysis only", "<analysis>a</analysis>", ""},
		{"analysis not first is kept", "text <analysis>x</analysis>", "text <analysis>x</analysis>"},
		{"unclosed summary", "<summary>unclosed\n\n\n\nmore", "Summary:\nunclosed\n\nmore"},
		{"summary in the middle", "Intro <summary> S </summary> outro", "Intro Summary:\nS outro"},
		{"blank runs", "a\n\n\n\nb\n \n\t\nc", "a\n\nb\n\nc"},
		{"text after analysis", "<analysis>x</analysis>\n\n\nkept", "kept"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := session.FormatCompactSummary(c.in); got != c.want {
				t.Errorf("FormatCompactSummary(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

// compact_summary_formatting_covers_malformed_and_display_inputs.
func TestCompactSummaryContentAndDisplay(t *testing.T) {
	pre := session.CompactContinuationPreamble
	content := []struct{ in, want string }{
		{"", ""},
		{"<analysis>only</analysis>", ""},
		{"<summary>S</summary>", pre + "\n\nSummary:\nS"},
		{"plain", pre + "\n\nplain"},
		{pre + "\n\nalready", pre + "\n\nalready"},
		{"This session is being continued elsewhere", "This session is being continued elsewhere"},
	}
	for _, c := range content {
		if got := session.FormatCompactSummaryContent(c.in); got != c.want {
			t.Errorf("FormatCompactSummaryContent(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	display := []struct{ in, want string }{
		{"", "Conversation compacted"},
		{"   ", "Conversation compacted"},
		{pre, "Conversation compacted"},
		{session.CompactedMarker, "Conversation compacted"},
		{pre + "\n\nSummary:\nS", "Conversation compacted\nSummary:\nS"},
		{session.CompactedMarker + "\nGoals: x", "Conversation compacted\nGoals: x"},
		{"Conversation compacted\nfoo", "Conversation compacted\nfoo"},
		{"plain", "Conversation compacted\nplain"},
		// Ours: both openings go when a carrier holds a stub.
		{pre + "\n\n" + session.CompactedMarker + "\nX", "Conversation compacted\nX"},
	}
	for _, c := range display {
		if got := session.CompactSummaryDisplayText(c.in); got != c.want {
			t.Errorf("CompactSummaryDisplayText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// prepend_compact_summary_inserts_or_replaces. Ours: a previous summary,
// block or message, is replaced rather than stacked.
// prepend_compact_summary_inserts_or_replaces: a leading summary message
// (wc's, or a whycodes stub) is replaced in place; otherwise the summary
// opens the path as a user message of its own, as whycodes inserts it.
func TestPrependSummary(t *testing.T) {
	mark := session.CompactedMarker
	hello := text(session.RoleUser, "hello")
	hi := text(session.RoleAssistant, "hi")
	summary := func(s string) string {
		return `{"role":"user","content":` + strconv.Quote(s) + `,"created_at":"` + t0Text + `","kind":"summary"}`
	}
	cases := []struct {
		name string
		in   []session.Message
		raw  string
		want []string
	}{
		{"before a user turn", []session.Message{hello, hi}, "S", []string{summary(mark + "\nS"), encode(hello), encode(hi)}},
		{"cleaned first", []session.Message{hello}, "<analysis>a</analysis><summary>S</summary>", []string{summary(mark + "\nSummary:\nS"), encode(hello)}},
		{"a bracketed summary is kept as is", []session.Message{hello}, "[Custom] x", []string{summary("[Custom] x"), encode(hello)}},
		{"replaces an earlier wc's summary block", []session.Message{blocks(session.RoleUser, cpSummaryBlock("old"), cpTextBlock("hello")), hi}, "new", []string{
			`{"role":"user","content":[{"type":"text","text":"` + mark + `\nnew","kind":"summary"},{"type":"text","text":"hello"}]}`,
			encode(hi)}},
		{"before an assistant message", []session.Message{hi}, "S", []string{summary(mark + "\nS"), encode(hi)}},
		{"replaces a summary message", []session.Message{cpKind(session.KindSummary, session.RoleUser, "old"), hi}, "new", []string{
			`{"role":"user","content":"` + mark + `\nnew","kind":"summary"}`,
			encode(hi)}},
		{"replaces a whycodes stub", []session.Message{text(session.RoleUser, mark+"\nold"), hello}, "newer stub", []string{
			`{"role":"user","content":"` + mark + `\nnewer stub"}`, encode(hello)}},
		{"replaces a whycodes continuation carrier", []session.Message{text(session.RoleUser, session.CompactContinuationPreamble+"\n\nold"), hello}, "[Compacted earlier conversation]\nnewer", []string{
			`{"role":"user","content":"` + mark + `\nnewer"}`, encode(hello)}},
		{"empty path", nil, "S", []string{summary(mark + "\nS")}},
		{"empty summary", []session.Message{hello, hi}, " \n ", []string{encode(hello), encode(hi)}},
		{"analysis only is empty", []session.Message{hello}, "<analysis>x</analysis>", []string{encode(hello)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := cpEncodeAll(c.in)
			got := session.PrependSummary(c.in, c.raw, t0)
			if g := cpEncodeAll(got); !slices.Equal(g, c.want) {
				t.Errorf("\n got %q\nwant %q", g, c.want)
			}
			if !slices.Equal(cpEncodeAll(c.in), before) {
				t.Error("input changed")
			}
			again := session.PrependSummary(got, c.raw, t0)
			cpSameMessages(t, "prepending the same summary again", again, got)
		})
	}
}

// Ours: compact() then prepend_compact_summary in whycodes leaves two
// summaries, since is_compact_summary_text does not know the local stub
// ("[N earlier messages trimmed…"); the model's summary replaces it here.
func TestDeparturePrependKeepsLocalStub(t *testing.T) {
	msgs := cpTurns(10, 400)
	got, out := session.Compact("", msgs, 1200, t0)
	if !out.DroppedMessages() || session.IsCompactSummaryText(got[0].Content.Text) {
		t.Fatalf("the local stub is %q: whycodes would recognise it", got[0].Content.Text)
	}
	llm := session.PrependSummary(got, "<summary>what happened</summary>", t0)
	if len(llm) != len(got) || llm[0].Content.Text != session.CompactedMarker+"\nSummary:\nwhat happened" {
		t.Errorf("%d messages, first %s", len(llm), encode(llm[0]))
	}
	cpSameMessages(t, "kept", llm[1:], got[1:])
}

// SummarizePrefix: a model summary with no budget replaces everything
// before the last turn start that keeps MinKeepMessages.
func TestSummarizePrefix(t *testing.T) {
	msgs := cpTurns(9, 40)
	if cut := session.SummaryCut(msgs); cut != 4 {
		t.Fatalf("SummaryCut = %d, want 4", cut)
	}
	got, out := session.SummarizePrefix("sys", msgs, "<summary>S</summary>", t0)
	if len(got) != 6 || out.MessagesBefore != 9 || out.MessagesAfter != 6 {
		t.Fatalf("%d messages, %+v", len(got), out)
	}
	cpSameMessages(t, "tail", got[1:], msgs[4:])
	if got[0].Kind != session.KindSummary || got[0].Content.Text != session.CompactedMarker+"\nSummary:\nS" {
		t.Errorf("first %s", encode(got[0]))
	}
	if out.DroppedTranscript != session.MessagesTranscript(msgs[:4], session.DroppedTranscriptMaxChars) {
		t.Error("dropped transcript differs from the one printed for the model")
	}
	if out.TokensBefore != session.PathTokens("sys", msgs) || out.TokensAfter != session.PathTokens("sys", got) {
		t.Errorf("%+v", out)
	}
	t.Run("nothing to cut", func(t *testing.T) {
		for _, in := range [][]session.Message{nil, cpTurns(4, 10), cpTurns(5, 10)[1:]} {
			got, out := session.SummarizePrefix("", in, "S", t0)
			cpSameMessages(t, "unchanged", got, in)
			if out.DroppedMessages() {
				t.Error("dropped")
			}
		}
	})
	t.Run("a compacted path has its summary replaced in place", func(t *testing.T) {
		// whycodes' prepend_compact_summary: insert or replace. With no turn
		// to cut at, the summary a path opens with is what --summary replaces.
		in := append([]session.Message{cpKind(session.KindSummary, session.RoleUser, "[9 earlier messages trimmed]")}, cpTurns(4, 10)...)
		if cut := session.SummaryCut(in); cut != 1 {
			t.Fatalf("SummaryCut = %d, want 1", cut)
		}
		got, out := session.SummarizePrefix("", in, "<summary>better</summary>", t0)
		if len(got) != len(in) || got[0].Content.Text != session.CompactedMarker+"\nSummary:\nbetter" || !out.DroppedMessages() {
			t.Fatalf("%d messages, first %s", len(got), encode(got[0]))
		}
		cpSameMessages(t, "kept", got[1:], in[1:])
		again, _ := session.SummarizePrefix("", got, "<summary>better</summary>", t0)
		cpSameMessages(t, "again", again, got)
	})
	t.Run("an empty summary drops nothing", func(t *testing.T) {
		// A model that returned nothing must not cost the prefix.
		got, out := session.SummarizePrefix("", msgs, "<analysis>only</analysis>", t0)
		cpSameMessages(t, "unchanged", got, msgs)
		if out.DroppedMessages() || out.Reduced() {
			t.Errorf("%+v", out)
		}
	})
}

// --- full replace ---

// Ours: apply_full_replace restates as_text of the last user message
// only, so an image-only turn is lost and 1 message remains (reference
// §5.6, transcript_and_full_replace_edge_cases); the whole turn is kept,
// so the path still opens with the user's request.
func TestDepartureFullReplaceKeepsOnlyText(t *testing.T) {
	img := blocks(session.RoleUser, session.Block{Type: session.BlockImage, Source: json.RawMessage(`{}`)})
	msgs := []session.Message{text(session.RoleUser, "earlier"), text(session.RoleAssistant, "ok"), img, text(session.RoleAssistant, "I see a cat")}
	got, out := session.FullReplace("", msgs, "S", t0)
	if len(got) != 3 || out.MessagesAfter != 3 || got[2].Kind != session.KindSummary ||
		encode(got[0]) != `{"role":"user","content":[{"type":"image","source":{}}],"created_at":"`+t0Text+`"}` {
		t.Errorf("got %q", cpEncodeAll(got))
	}

}

// apply_full_replace_keeps_last_user_and_recent_tail.
func TestFullReplaceKeepsLastUserAndRecentTail(t *testing.T) {
	msgs := []session.Message{
		text(session.RoleUser, "first task"),
		text(session.RoleAssistant, "done"),
		blocks(session.RoleUser, cpTextBlock("second task"), session.Block{Type: session.BlockImage, Source: json.RawMessage(`{}`)}),
		blocks(session.RoleAssistant, cpTextBlock("on it"), toolUse("t1", "read", `{}`)),
		cpNamedTool("t1", "read", "body"),
		cpKind(session.KindNote, session.RoleUser, "a note"),
		text(session.RoleAssistant, "finished"),
	}
	got, out := session.FullReplace("sys", msgs, "<summary>S</summary>", t0)
	// Ours: the whole last turn is restated; whycodes kept only its first
	// text and lost the image (reference §5.6).
	want := []string{
		`{"role":"user","content":[{"type":"text","text":"second task"},{"type":"image","source":{}}],"created_at":"` + t0Text + `"}`,
		encode(msgs[3]), encode(msgs[4]), encode(msgs[5]), encode(msgs[6]),
		`{"role":"user","content":"` + session.CompactContinuationPreamble + `\n\nSummary:\nS","created_at":"` + t0Text + `","kind":"summary"}`,
	}
	if g := cpEncodeAll(got); !slices.Equal(g, want) {
		t.Errorf("\n got %q\nwant %q", g, want)
	}
	if out.DroppedTranscript != "User: first task\n\nAssistant: done\n\n" || out.MessagesBefore != 7 || out.MessagesAfter != 6 {
		t.Errorf("%+v", out)
	}
	if out.TokensAfter != session.PathTokens("sys", got) {
		t.Error("tokens after")
	}
}

// compact_full_replace_local_empty_is_noop and
// compact_full_replace_local_always_replaces_prefix: whycodes'
// compact_full_replace_local is truncate, prune, then full replace with the
// local summary.
func TestFullReplaceLocal(t *testing.T) {
	local := func(msgs []session.Message) ([]session.Message, session.CompactOutcome) {
		msgs = slices.Clone(msgs)
		session.TruncateToolResults(msgs)
		session.PruneToolResults(msgs)
		return session.FullReplace("", msgs, "", t0)
	}
	got, out := local(nil)
	if len(got) != 0 || out != (session.CompactOutcome{}) {
		t.Errorf("empty: %d messages, %+v", len(got), out)
	}
	msgs := []session.Message{
		text(session.RoleUser, "first task"), text(session.RoleAssistant, "see a/b.go"),
		text(session.RoleUser, "second task"), text(session.RoleAssistant, "ok"),
	}
	got, out = local(msgs)
	wantCarrier := session.CompactContinuationPreamble + "\n\n" +
		"[2 earlier messages trimmed for context management (user=1, assistant=1, tool=0)]\nGoals: first task\nFiles: a/b.go"
	if len(got) != 3 || got[0].Content.Text != "second task" || got[2].Content.Text != wantCarrier || got[2].Kind != session.KindSummary {
		t.Errorf("got %q", cpEncodeAll(got))
	}
	if !out.DroppedMessages() {
		t.Error("the prefix was not replaced")
	}
	if session.LocalFullReplaceSummary(msgs) != session.SummarizeTrimmed(msgs[:2]) {
		t.Error("LocalFullReplaceSummary")
	}
}

// transcript_and_full_replace_edge_cases and
// local_summary_and_replace_without_real_user_cover_empty_prefix.
func TestFullReplaceEdgeCases(t *testing.T) {
	t.Run("no real user message", func(t *testing.T) {
		msgs := []session.Message{text(session.RoleAssistant, "solo"), cpKind(session.KindNote, session.RoleUser, "note")}
		sum := session.LocalFullReplaceSummary(msgs)
		if !strings.Contains(sum, "assistant=1") || !strings.HasPrefix(sum, "[2 earlier messages") {
			t.Errorf("local summary %q", sum)
		}
		got, out := session.FullReplace("", msgs, "", t0)
		if len(got) != 3 || !strings.HasPrefix(got[2].Content.Text, session.CompactContinuationPreamble) ||
			!strings.Contains(got[2].Content.Text, "assistant=1") {
			t.Errorf("got %q", cpEncodeAll(got))
		}
		cpSameMessages(t, "kept", got[:2], msgs)
		if out.DroppedTranscript != session.MessagesTranscript(msgs, session.DroppedTranscriptMaxChars) {
			t.Error("dropped transcript")
		}
	})
	t.Run("assistant only", func(t *testing.T) {
		msgs := []session.Message{text(session.RoleAssistant, "solo")}
		if sum := session.LocalFullReplaceSummary(msgs); sum != "[1 earlier messages trimmed for context management (user=0, assistant=1, tool=0)]" {
			t.Errorf("%q", sum)
		}
	})
	t.Run("the only user turn is first", func(t *testing.T) {
		msgs := []session.Message{text(session.RoleUser, "only"), text(session.RoleAssistant, "ok")}
		if sum := session.LocalFullReplaceSummary(msgs); !strings.Contains(sum, "(user=1, assistant=1, tool=0)") {
			t.Errorf("%q", sum)
		}
		got, out := session.FullReplace("", msgs, "S", t0)
		if len(got) != 3 || got[0].Content.Text != "only" || out.DroppedMessages() {
			t.Errorf("got %q, %+v", cpEncodeAll(got), out)
		}
	})
	t.Run("a turn that also answers tool calls is not where a replace starts", func(t *testing.T) {
		msgs := []session.Message{
			text(session.RoleUser, "start"),
			blocks(session.RoleAssistant, toolUse("t1", "read", `{}`)),
			blocks(session.RoleUser, cpResult("t1", "body"), cpTextBlock("and stop there")),
			text(session.RoleAssistant, "stopped"),
		}
		got, _ := session.FullReplace("", msgs, "S", t0)
		if len(got) != 5 || got[0].Content.Text != "start" {
			t.Errorf("got %q", cpEncodeAll(got))
		}
		if id := cpOrphaned(got); id != "" {
			t.Errorf("result %s lost its call", id)
		}
		// The last real turn is the first message: nothing to replace.
		native, _, err := session.NativeCompaction("", msgs, session.Block{Type: "compaction", Raw: json.RawMessage(`{"type":"compaction"}`)}, t0)
		var refusal *session.NativeRefusal
		if !errors.As(err, &refusal) || cpOrphaned(native) != "" {
			t.Errorf("native: %v, %q", err, cpEncodeAll(native))
		}
	})
	t.Run("a whycodes stub is not a real user turn", func(t *testing.T) {
		msgs := []session.Message{
			text(session.RoleUser, "real"), text(session.RoleAssistant, "a"),
			text(session.RoleUser, session.CompactedMarker+"\nstub"), text(session.RoleAssistant, "b"),
		}
		got, _ := session.FullReplace("", msgs, "S", t0)
		if got[0].Content.Text != "real" || len(got) != 5 {
			t.Errorf("got %q", cpEncodeAll(got))
		}
	})
	t.Run("empty", func(t *testing.T) {
		got, out := session.FullReplace("sys", nil, "S", t0)
		if len(got) != 0 || out.DroppedMessages() || out.MessagesAfter != 0 || out.TokensAfter != out.TokensBefore {
			t.Errorf("%+v", out)
		}
	})
}

// --- native compaction ---

func TestNativeCompaction(t *testing.T) {
	raw := `{"type":"compaction","content":"opaque","encrypted_content":"gAAA=="}`
	block := session.Block{Type: "compaction", Raw: json.RawMessage(raw)}
	msgs := []session.Message{
		text(session.RoleUser, "a"), text(session.RoleAssistant, "b"),
		text(session.RoleUser, "c"), text(session.RoleAssistant, "d"),
	}
	got, out, err := session.NativeCompaction("", msgs, block, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"assistant","content":[` + raw + `],"created_at":"` + t0Text + `","kind":"summary"}`
	if len(got) != 3 || encode(got[0]) != want {
		t.Fatalf("got %q", cpEncodeAll(got))
	}
	cpSameMessages(t, "kept", got[1:], msgs[2:])
	if out.DroppedTranscript != "User: a\n\nAssistant: b\n\n" || out.MessagesAfter != 3 {
		t.Errorf("%+v", out)
	}
}

// Native compaction refuses each path whycodes' native_compaction_prefix
// returns None for, and changes nothing. whycodes' own test of it is not in
// the source we have; this is named after the method.
func TestNativeCompactionPrefixRefusals(t *testing.T) {
	block := session.Block{Type: "compaction", Raw: json.RawMessage(`{"type":"compaction"}`)}
	u, a := text(session.RoleUser, "go"), text(session.RoleAssistant, "ok")
	cases := []struct {
		name   string
		in     []session.Message
		reason string // "" when accepted
	}{
		{"no user turn", []session.Message{text(session.RoleAssistant, "x"), cpKind(session.KindNote, session.RoleUser, "n")}, "the session has no user turn to keep"},
		{"nothing precedes the turn", []session.Message{u, a}, "nothing precedes the last user turn"},
		{"a tool result before the turn", []session.Message{u, blocks(session.RoleAssistant, toolUse("t", "ls", `{}`)), cpNamedTool("t", "ls", "x"), u}, "the message before the last user turn is a tool result"},
		{"a user message before the turn", []session.Message{u, a, cpKind(session.KindNote, session.RoleUser, "n"), u}, "the message before the last user turn is a user message"},
		{"Anthropic's results before the turn", []session.Message{u, blocks(session.RoleAssistant, toolUse("t", "ls", `{}`)), blocks(session.RoleUser, cpResult("t", "x")), u}, "the message before the last user turn is a user message"},
		{"an open tool call before the turn", []session.Message{u, blocks(session.RoleAssistant, cpTextBlock("let me"), toolUse("t", "ls", `{}`)), u}, "the message before the last user turn has an open tool call"},
		{"an assistant reply before the turn", []session.Message{u, a, u, a}, ""},
		{"a system message before the turn", []session.Message{u, a, text(session.RoleSystem, "s"), u}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, out, err := session.NativeCompaction("", c.in, block, t0)
			if c.reason == "" {
				if err != nil || got[0].Content.Blocks[0].Type != "compaction" {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var refusal *session.NativeRefusal
			if !errors.As(err, &refusal) || refusal.Reason != c.reason || isInvalid(err) {
				t.Fatalf("err %v, want %q", err, c.reason)
			}
			cpSameMessages(t, "unchanged", got, c.in)
			if out.DroppedMessages() {
				t.Error("dropped")
			}
		})
	}
}

// compaction_prefix_end and prefix_transcript_for_summary: the prefix
// before the last real user turn, or the whole path when there is none.
func TestCompactionPrefixEnd(t *testing.T) {
	msgs := []session.Message{text(session.RoleUser, "one"), text(session.RoleAssistant, "a"),
		text(session.RoleUser, "two"), text(session.RoleAssistant, "b"), cpKind(session.KindSummary, session.RoleUser, "s")}
	if end := session.CompactionPrefixEnd(msgs); end != 2 {
		t.Errorf("end %d, want 2", end)
	}
	if got := session.PrefixTranscriptForSummary(msgs, 0); got != "User: one\n\nAssistant: a\n\n" {
		t.Errorf("transcript %q", got)
	}
	noUser := []session.Message{text(session.RoleAssistant, "a"), text(session.RoleAssistant, "b")}
	if end := session.CompactionPrefixEnd(noUser); end != 2 {
		t.Errorf("no user turn: end %d, want 2", end)
	}
	if got := session.PrefixTranscriptForSummary(msgs, 20); got != "User: one\n\n" {
		t.Errorf("capped %q", got)
	}
}

// --- caps: truncate, prune, shake ---

// Ours: CapToolText recognises its own notice, so capping twice changes
// nothing and a tighter cap adds to the count.
func TestCapToolTextRecognisesItsNotice(t *testing.T) {
	body := strings.Repeat("x", 5000)
	once, cut := session.CapToolText(body, 2048)
	if !cut || once != body[:2048]+notice(2952) {
		t.Fatalf("first cap %q", once[2040:])
	}
	if again, cut := session.CapToolText(once, 2048); cut || again != once {
		t.Error("capping again changed the text")
	}
	tighter, cut := session.CapToolText(once, 512)
	if !cut || tighter != body[:512]+notice(4488) {
		t.Errorf("tighter cap %q", tighter[500:])
	}
	if looser, cut := session.CapToolText(tighter, 2048); cut || looser != tighter {
		t.Error("a looser cap changed the text")
	}
	// A body that is within the cap but ends in a notice stays as it is.
	if got, cut := session.CapToolText("abc"+notice(7), 5); cut || got != "abc"+notice(7) {
		t.Errorf("%q", got)
	}
	// Something that only looks like a notice is text.
	for _, s := range []string{"abc\n\n[... x characters truncated for context management]", "abc\n\n[... 0 characters truncated for context management]"} {
		if got, _ := session.CapToolText(s, 3); got != "abc"+notice(len(s)-3) {
			t.Errorf("%q capped to %q", s, got)
		}
	}
}

// test_add_tool_results_caps_huge_body, through TruncateToolResults, and
// truncate_large_tool_results_caps_bodies: 2 changed, including the
// toolresult inside an assistant message.
func TestTruncateToolResults(t *testing.T) {
	huge := strings.Repeat("0123456789", 5000)
	msgs := []session.Message{
		text(session.RoleUser, huge), // user text is not a tool body
		blocks(session.RoleAssistant, cpTextBlock(huge), cpResult("a", huge)),
		toolMsg("t", huge),
		toolMsg("s", "small"),
	}
	before := cpEncodeAll(msgs)
	work := slices.Clone(msgs)
	if n := session.TruncateToolResults(work); n != 2 {
		t.Fatalf("%d changed, want 2", n)
	}
	capped := huge[:session.ToolResultMaxChars] + notice(50_000-session.ToolResultMaxChars)
	if work[2].Content.Text != capped || work[1].Content.Blocks[1].Result != capped {
		t.Error("bodies not capped")
	}
	if n := utf8.RuneCountInString(work[2].Content.Text); n >= session.ToolResultMaxChars+200 || !strings.Contains(work[2].Content.Text, "characters truncated") {
		t.Errorf("%d chars", n)
	}
	if work[0].Content.Text != huge || work[1].Content.Blocks[0].Text != huge || work[3].Content.Text != "small" {
		t.Error("a body that is not a tool result was capped")
	}
	if !slices.Equal(cpEncodeAll(msgs), before) {
		t.Error("the caller's blocks were edited")
	}
	// Ours: whycodes counts 2 again on a second run, since it re-cuts its
	// notice; we change nothing.
	snapshot := cpEncodeAll(work)
	if n := session.TruncateToolResults(work); n != 0 || !slices.Equal(cpEncodeAll(work), snapshot) {
		t.Errorf("second run changed %d", n)
	}
}

// truncation_and_pruning_cover_block_variants_and_noops.
func TestTruncateBlockVariants(t *testing.T) {
	huge := strings.Repeat("é", session.ToolResultMaxChars+1000)
	capped := strings.Repeat("é", session.ToolResultMaxChars) + notice(1000)
	list := json.RawMessage(`[{"type":"text","text":"` + strings.Repeat("l", session.ToolResultMaxChars+1000) + `"}]`)
	img := session.Block{Type: session.BlockImage, Source: json.RawMessage(`{"type":"base64","media_type":"image/png","data":"` + strings.Repeat("A", 50_000) + `"}`)}
	thinking := session.Block{Type: session.BlockThinking, Text: huge}
	use := toolUse("u", "write", `{"content":"`+strings.Repeat("c", 40_000)+`"}`)
	tool := blocks(session.RoleTool, cpTextBlock(huge), cpResult("r", huge), img, thinking, use,
		session.Block{Type: session.BlockToolResult, ToolUseID: "l", ResultRaw: list})
	tool.ToolCallID = "c"
	msgs := []session.Message{
		tool,
		blocks(session.RoleUser, cpTextBlock(huge), cpResult("r2", huge)),
		blocks(session.RoleAssistant, thinking, use),
	}
	if n := session.TruncateToolResults(msgs); n != 4 {
		t.Fatalf("%d changed, want 4", n)
	}
	bs := msgs[0].Content.Blocks
	if bs[0].Text != capped || bs[1].Result != capped || msgs[1].Content.Blocks[1].Result != capped {
		t.Error("text or toolresult not capped")
	}
	// Ours: a block list's text parts are capped as text blocks are.
	cappedText, _ := json.Marshal(strings.Repeat("l", session.ToolResultMaxChars) + notice(1000))
	cappedList := `[{"type":"text","text":` + string(cappedText) + `}]`
	if string(bs[5].ResultRaw) != cappedList {
		t.Errorf("a block-list result was not capped: …%s", bs[5].ResultRaw[len(bs[5].ResultRaw)-120:])
	}
	if encode(blocks(session.RoleTool, bs[2:5]...)) != encode(blocks(session.RoleTool, img, thinking, use)) {
		t.Error("images, thinking or tooluse were changed")
	}
	if msgs[1].Content.Blocks[0].Text != huge || msgs[2].Content.Blocks[0].Text != huge {
		t.Error("non-tool text capped")
	}
	for name, f := range map[string]func([]session.Message) int{
		"truncate": session.TruncateToolResults, "prune": session.PruneToolResults, "shake": session.ShakeToolResults,
	} {
		if n := f(nil); n != 0 {
			t.Errorf("%s of nothing: %d", name, n)
		}
		if n := f(cpTurns(10, 100)); n != 0 {
			t.Errorf("%s of no tool bodies: %d", name, n)
		}
	}
}

// Ours: a cap pass does not make a cut whose notice is as long as what it
// removes, or longer; whycodes makes it (and, counting by byte length, may
// not count it). So a cap pass never grows a body, and Compact never grows
// a path it drops nothing from. CapToolText itself still cuts (reference
// §2.2), which ToolResultContent relies on.
func TestCapPassesNeverGrowABody(t *testing.T) {
	k := cpNeutral()
	for _, char := range []string{"a", "é", "😀"} {
		for _, over := range []int{1, 20, k - 1, k, k + 1, 100} {
			body := strings.Repeat(char, session.ToolResultMaxChars+over)
			msgs := []session.Message{toolMsg("t", body), blocks(session.RoleAssistant, cpResult("r", body))}
			n := session.TruncateToolResults(msgs)
			capped, _ := session.CapToolText(body, session.ToolResultMaxChars)
			// Judged in chars, as tokens are estimated: 20 emoji are 80
			// bytes, more than the notice, but fewer chars.
			if over > k {
				if n != 2 || msgs[0].Content.Text != capped || msgs[1].Content.Blocks[0].Result != capped {
					t.Errorf("%q, %d over: %d changed, want the cut", char, over, n)
				}
			} else if n != 0 || msgs[0].Content.Text != body || msgs[1].Content.Blocks[0].Result != body {
				t.Errorf("%q, %d over: %d changed, want none", char, over, n)
			}
		}
		// The same holds for prune and shake.
		msgs := []session.Message{toolMsg("a", strings.Repeat(char, session.ToolResultPruneChars+k)), toolMsg("b", ""), toolMsg("c", ""), toolMsg("d", ""), toolMsg("e", "")}
		if n := session.PruneToolResults(msgs); n != 0 {
			t.Errorf("%q: prune of %d chars over: %d changed", char, k, n)
		}
		if n := session.ShakeToolResults(msgs); n != 1 || msgs[0].Content.Text != strings.Repeat(char, session.ToolResultShakeChars)+notice(session.ToolResultPruneChars+k-session.ToolResultShakeChars) {
			t.Errorf("%q: shake: %d changed", char, n)
		}
	}
	// Compact, whose prune cuts would not shorten, keeps those bodies as
	// they are, and does not grow the path.
	msgs := []session.Message{text(session.RoleUser, "go")}
	for i := range 6 {
		id := "c" + strconv.Itoa(i)
		msgs = append(msgs, blocks(session.RoleAssistant, toolUse(id, "read", `{}`)), toolMsg(id, strings.Repeat("x", session.ToolResultPruneChars+3)))
	}
	got, out := session.Compact("", msgs, 1, t0)
	if out.TokensAfter > out.TokensBefore {
		t.Errorf("tokens grew: %+v", out)
	}
	_, cut := session.CompactCut("", msgs, 1)
	cpSameMessages(t, "kept bodies", got[1:], cut.Kept(msgs))
}

// prune_old_tool_results_keeps_recent_full and
// shake_old_tool_results_cuts_harder_than_prune.
func TestPruneAndShake(t *testing.T) {
	body := func(i int) string { return strconv.Itoa(i) + strings.Repeat("b", 4999) }
	var msgs []session.Message
	for i := range 6 {
		id := "c" + strconv.Itoa(i)
		msgs = append(msgs, text(session.RoleUser, "turn"), blocks(session.RoleAssistant, toolUse(id, "read", `{}`)))
		if i == 1 {
			m := blocks(session.RoleTool, cpTextBlock(body(i)), cpResult(id, body(i)))
			m.ToolCallID = id
			msgs = append(msgs, m)
			continue
		}
		msgs = append(msgs, toolMsg(id, body(i)))
	}
	// A results-only user message is not a tool message: not pruned, and
	// not counted among the recent four.
	msgs = append(msgs, blocks(session.RoleUser, cpResult("x", body(9))))
	bodies := func(msgs []session.Message) []string {
		var out []string
		for _, m := range msgs {
			if m.Role == session.RoleTool {
				if m.Content.IsBlocks {
					out = append(out, m.Content.Blocks[0].Text, m.Content.Blocks[1].Result)
				} else {
					out = append(out, m.Content.Text)
				}
			}
		}
		return out
	}
	pruned := slices.Clone(msgs)
	if n := session.PruneToolResults(pruned); n != 3 {
		t.Fatalf("prune changed %d, want 3", n)
	}
	got := bodies(pruned)
	for i, b := range got {
		old := i < 3 // tool messages 0 and 1 (two fields)
		want := body(max(0, i-1))
		if i == 1 || i == 2 {
			want = body(1)
		}
		if old {
			want = want[:session.ToolResultPruneChars] + notice(5000-session.ToolResultPruneChars)
		}
		if b != want {
			t.Errorf("body %d: %.30q… (%d chars)", i, b, len(b))
		}
	}
	if pruned[len(pruned)-1].Content.Blocks[0].Result != body(9) {
		t.Error("the results-only user message was pruned")
	}
	if n := session.PruneToolResults(pruned); n != 0 {
		t.Errorf("prune again: %d", n)
	}
	shaken := slices.Clone(pruned)
	if n := session.ShakeToolResults(shaken); n != 3 {
		t.Fatalf("shake changed %d, want 3", n)
	}
	for i, b := range bodies(shaken)[:3] {
		if n := utf8.RuneCountInString(b); n > session.ToolResultShakeChars+80 {
			t.Errorf("shaken body %d has %d chars", i, n)
		}
		if !strings.HasSuffix(b, notice(5000-session.ToolResultShakeChars)) {
			t.Errorf("shaken body %d: the omitted count does not add up: %q", i, b[len(b)-60:])
		}
	}
	if !slices.Equal(bodies(shaken)[3:], bodies(msgs)[3:]) {
		t.Error("a recent tool message was shaken")
	}
	if n := session.ShakeToolResults(shaken); n != 0 {
		t.Errorf("shake again: %d", n)
	}
	// Four tool messages or fewer: nothing is old.
	few := slices.Clone(msgs[6:])
	if n := session.PruneToolResults(few); n != 0 {
		t.Errorf("prune of 4 tool messages: %d", n)
	}
}

// --- spill ---

func TestSpillToolResults(t *testing.T) {
	long := func(c string) string { return strings.Repeat(c, 3000) }
	store := map[string]string{}
	calls := 0
	put := func(body string) string {
		calls++
		sum := cpSHA(body)
		store[sum] = body
		return sum
	}
	spilled := long("s")
	msgs := []session.Message{
		toolMsg("a", long("a")), // 0: spilled
		toolMsg("b", long("a")), // 1: same body, same blob
		toolMsg("c", strings.Repeat("é", session.ToolResultPruneChars+1)), // 2: counted in chars
		toolMsg("d", strings.Repeat("é", session.ToolResultPruneChars)),   // 3: not over TOOL_RESULT_PRUNE_CHARS
		toolMsg("e", long("e")+"\n"+session.SpillMark+"elsewhere"),        // 4: long, but already spilled
		func() session.Message { // 5: blocks
			m := blocks(session.RoleTool, cpTextBlock(long("t")), cpResult("f", long("r")),
				session.Block{Type: session.BlockToolResult, ToolUseID: "g", ResultRaw: json.RawMessage(`["` + long("q") + `"]`)})
			m.ToolCallID = "f"
			return m
		}(),
		toolMsg("h", spilled), toolMsg("i", spilled), toolMsg("j", spilled), toolMsg("k", spilled), // the newest 4
	}
	before := cpEncodeAll(msgs)
	work := slices.Clone(msgs)
	if n := session.SpillToolResults(work, put); n != 6 {
		t.Fatalf("%d spilled, want 6", n)
	}
	pointer := regexp.MustCompile(`(?s)^(.*)\n…\nfull output saved: wc-blob:([0-9a-f]{64})$`)
	check := func(what, got, orig string) {
		t.Helper()
		m := pointer.FindStringSubmatch(got)
		if m == nil {
			t.Errorf("%s: no pointer line in %q", what, got)
			return
		}
		if m[1] != string([]rune(orig)[:session.SpillHeadChars]) {
			t.Errorf("%s: head is not the first 400 chars", what)
		}
		if store[m[2]] != orig || m[2] != cpSHA(orig) {
			t.Errorf("%s: blob %s does not hold the body", what, m[2])
		}
		if utf8.RuneCountInString(got) >= utf8.RuneCountInString(orig) {
			t.Errorf("%s: spilling did not shorten the body", what)
		}
	}
	check("text", work[0].Content.Text, long("a"))
	check("same body", work[1].Content.Text, long("a"))
	if work[0].Content.Text != work[1].Content.Text {
		t.Error("identical bodies point at different blobs")
	}
	check("wide chars", work[2].Content.Text, strings.Repeat("é", session.ToolResultPruneChars+1))
	check("text block", work[5].Content.Blocks[0].Text, long("t"))
	check("toolresult block", work[5].Content.Blocks[1].Result, long("r"))
	if encode(work[3]) != before[3] || encode(work[4]) != before[4] {
		t.Error("a short or already spilled body was spilled")
	}
	var part []string // ours: a block list's text parts spill as text blocks do
	if err := json.Unmarshal(work[5].Content.Blocks[2].ResultRaw, &part); err != nil || len(part) != 1 {
		t.Fatalf("the block-list result became %s (%v)", work[5].Content.Blocks[2].ResultRaw, err)
	}
	check("block-list part", part[0], long("q"))
	if !slices.Equal(cpEncodeAll(work[6:]), before[6:]) {
		t.Error("one of the newest 4 tool messages was spilled")
	}
	if !slices.Equal(cpEncodeAll(msgs), before) {
		t.Error("the caller's blocks were edited")
	}
	// Never twice; and neither prune nor shake can cut the pointer off.
	snapshot := cpEncodeAll(work)
	calls = 0
	if n := session.SpillToolResults(work, put); n != 0 || calls != 0 {
		t.Errorf("second spill: %d changed, %d blobs written", n, calls)
	}
	session.PruneToolResults(work)
	session.ShakeToolResults(work)
	for _, i := range []int{0, 1, 2} {
		if encode(work[i]) != snapshot[i] {
			t.Errorf("message %d: the pointer did not survive prune and shake", i)
		}
	}
	// Four tool messages or fewer: nothing spills.
	few := slices.Clone(msgs[6:])
	if n := session.SpillToolResults(few, put); n != 0 {
		t.Errorf("%d spilled", n)
	}
}

// As whycodes' spill: only a body longer than TOOL_RESULT_PRUNE_CHARS
// leaves the transcript (whycodes' own test of it is not in the source
// we have).
func TestSpillThresholdIsPruneChars(t *testing.T) {
	for _, c := range []struct {
		chars int
		spill bool
	}{{500, false}, {session.ToolResultPruneChars, false}, {session.ToolResultPruneChars + 1, true}} {
		msgs := []session.Message{toolMsg("a", strings.Repeat("x", c.chars)), toolMsg("b", ""), toolMsg("c", ""), toolMsg("d", ""), toolMsg("e", "")}
		if n := session.SpillToolResults(msgs, cpSHA); (n == 1) != c.spill || n > 1 {
			t.Errorf("%d chars: %d spilled", c.chars, n)
		}
	}
}

// Ours: whycodes reserved 256 tokens for the summary; eight long file paths
// make it larger, the result lands over budget, and a second compaction
// cut again. Reserving the summary's real bound makes it repeatable.
func TestCompactIsRepeatableWithLongSummaries(t *testing.T) {
	var msgs []session.Message
	for i := 0; i < 40; i++ {
		// Paths near the 200-byte limit make the summary about 500 tokens:
		// the old fixed slack of 256 must overshoot by more than a turn.
		path := fmt.Sprintf("/root/go/pkg/mod/github.com/some-organisation/some-rather-long-module-name@v1.%d.0/internal/deeply/nested/package/with/many/levels/of/directories/below/it/file%02d.go", i, i)
		msgs = append(msgs, text(session.RoleUser, fmt.Sprintf("look at %s please, it has a bug in the %d-th function", path, i)),
			text(session.RoleAssistant, "Reading "+path+" now. "+strings.Repeat("words ", 10)))
	}
	first, out := session.Compact("", msgs, 3000, t0)
	if !out.DroppedMessages() {
		t.Fatalf("nothing dropped: %+v", out)
	}
	if summary := session.EstimateTokens(session.SummarizeTrimmed(msgs[:len(msgs)/2])); summary <= session.SummaryTokenSlack+150 {
		t.Fatalf("the summary (%d tokens) is not above the old slack: the test shows nothing", summary)
	}
	if out.StillOver(3000 * 3 / 4) {
		t.Errorf("over budget after compaction: %d tokens", out.TokensAfter)
	}
	second, out2 := session.Compact("", first, 3000, t0)
	if !cpSame(first, second) || out2.DroppedMessages() {
		t.Errorf("a second compaction changed the path (%d -> %d messages)", len(first), len(second))
	}
}

// Ours: full replace twice stacked a second carrier; now it is a no-op.
func TestFullReplaceTwiceChangesNothing(t *testing.T) {
	msgs := []session.Message{
		text(session.RoleUser, "first"), text(session.RoleAssistant, "a"),
		text(session.RoleUser, "second"), text(session.RoleAssistant, "b"),
	}
	once, _ := session.FullReplace("", msgs, "", t0)
	twice, out := session.FullReplace("", once, "", t1)
	if !cpSame(once, twice) || out.Reduced() {
		t.Errorf("second full replace changed the path:\n%v\n%v", cpEncodeAll(once), cpEncodeAll(twice))
	}
}
