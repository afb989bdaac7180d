package session_test

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
)

var t1 = t0.Add(90 * time.Second)

const t1Text = "2026-08-21T12:01:30Z"

func TestAppendStamping(t *testing.T) {
	m := session.New(testID, "/p", "", t0)
	given := text(session.RoleAssistant, "old")
	given.CreatedAt = "2020-01-01T00:00:00.5+02:00"
	res := session.Append(&m, nil, []session.Message{text(session.RoleUser, "hi"), given}, t1, nil, session.AppendOptions{})
	if got := res.Nodes[0].Msg.CreatedAt; got != t1Text {
		t.Errorf("empty created_at stamped %q, want %q", got, t1Text)
	}
	if got := res.Nodes[1].Msg.CreatedAt; got != given.CreatedAt {
		t.Errorf("given created_at re-stamped: %q", got)
	}
	if m.UpdatedAt != t1Text || m.CreatedAt != t0Text {
		t.Errorf("touch: created %q updated %q", m.CreatedAt, m.UpdatedAt)
	}
	t.Run("sub-second stamp", func(t *testing.T) {
		m := session.New(testID, "/p", "", t0)
		now := time.Date(2026, 8, 21, 14, 0, 0, 123456789, time.FixedZone("CEST", 2*3600))
		res := session.Append(&m, nil, []session.Message{text(session.RoleUser, "hi")}, now, nil, session.AppendOptions{})
		if got := res.Nodes[0].Msg.CreatedAt; got != "2026-08-21T12:00:00.123456789Z" {
			t.Errorf("stamp %q", got)
		}
	})
}

func TestAppendCountsAndHead(t *testing.T) {
	m := session.New(testID, "/p", "abcdefgh", t0) // system: 2 tokens
	note := text(session.RoleUser, "abcd")
	note.Kind = session.KindNote
	msgs := []session.Message{
		text(session.RoleUser, "abcd"),        // 1
		text(session.RoleAssistant, "abcdef"), // 2
		note,                                  // 1
	}
	res := session.Append(&m, nil, msgs, t0, nil, session.AppendOptions{})
	if len(res.Nodes) != 3 || res.Capped != 0 {
		t.Fatalf("%+v", res)
	}
	for i, n := range res.Nodes {
		if n.Seq != uint64(i+1) {
			t.Errorf("node %d seq %d", i, n.Seq)
		}
		if i > 0 && n.Parent != res.Nodes[i-1].Seq {
			t.Errorf("node %d parent %d", i, n.Parent)
		}
	}
	check := func(t *testing.T, head, next, count, users, tokens uint64) {
		t.Helper()
		if m.Head != head || m.NextSeq != next || m.MessageCount != count || m.UserMessageCount != users || m.Tokens != tokens {
			t.Errorf("head %d next %d count %d users %d tokens %d; want %d %d %d %d %d",
				m.Head, m.NextSeq, m.MessageCount, m.UserMessageCount, m.Tokens, head, next, count, users, tokens)
		}
	}
	check(t, 3, 4, 3, 2, 2+4)

	// A second append continues from the head node alone.
	head := res.Nodes[2]
	res2 := session.Append(&m, &head, []session.Message{text(session.RoleAssistant, "abcdefghijkl")}, t1, nil, session.AppendOptions{})
	if res2.Nodes[0].Parent != 3 || res2.Nodes[0].Seq != 4 || res2.Nodes[0].Depth != 4 {
		t.Errorf("%+v", res2.Nodes[0].Header())
	}
	check(t, 4, 5, 4, 2, 2+4+3)

	t.Run("nothing to append", func(t *testing.T) {
		before := m
		res := session.Append(&m, &res2.Nodes[0], nil, t1.Add(time.Hour), nil, session.AppendOptions{})
		if len(res.Nodes) != 0 || m.Head != before.Head || m.NextSeq != before.NextSeq || m.MessageCount != before.MessageCount {
			t.Errorf("changed: %+v", m)
		}
		if m.UpdatedAt == before.UpdatedAt {
			t.Error("not touched")
		}
	})
	t.Run("info", func(t *testing.T) {
		info := m.Info()
		if info.ID != testID || info.MessageCount != 4 || info.UserMessageCount != 2 || info.Tokens != 9 || info.Head != 4 || info.Branches != 0 {
			t.Errorf("%+v", info)
		}
	})
}

func TestAppendToolNames(t *testing.T) {
	lookupCalls := 0
	lookup := func(id string) (string, bool) {
		lookupCalls++
		switch id {
		case "old-1":
			return "grep", true
		}
		return "", false
	}
	named := toolMsg("x-1", "out")
	named.Name = "given"
	msgs := []session.Message{
		blocks(session.RoleAssistant, toolUse("b-1", "read", `{}`), toolUse("b-2", "bash", `{}`)),
		toolMsg("b-2", "second"),
		toolMsg("b-1", "first"),
		toolMsg("old-1", "earlier"),
		toolMsg("gone", "unknown"),
		named,
		toolMsg("", "no id"),
		// A later tooluse with the same id wins for later results.
		blocks(session.RoleAssistant, toolUse("b-1", "write", `{}`)),
		toolMsg("b-1", "again"),
	}
	m := session.New(testID, "/p", "", t0)
	res := session.Append(&m, nil, msgs, t0, lookup, session.AppendOptions{})
	want := []string{"", "bash", "read", "grep", "", "given", "", "", "write"}
	for i, n := range res.Nodes {
		if n.Msg.Name != want[i] {
			t.Errorf("message %d: name %q, want %q", i, n.Msg.Name, want[i])
		}
	}
	if lookupCalls != 2 { // old-1 and gone; batch names never ask the store
		t.Errorf("lookup called %d times", lookupCalls)
	}
	t.Run("nil lookup", func(t *testing.T) {
		m := session.New(testID, "/p", "", t0)
		res := session.Append(&m, nil, []session.Message{toolMsg("old-1", "x")}, t0, nil, session.AppendOptions{})
		if res.Nodes[0].Msg.Name != "" {
			t.Error("name from nowhere")
		}
	})
	t.Run("written in the JSON", func(t *testing.T) {
		if got := encode(res.Nodes[1].Msg); got != `{"role":"tool","content":"second","tool_call_id":"b-2","name":"bash","created_at":"`+t0Text+`"}` {
			t.Error(got)
		}
	})
}

func TestAppendEditStats(t *testing.T) {
	huge := strings.Repeat("x", session.ToolResultMaxChars+100)
	failed := toolMsg("p1", "[+5 -5]")
	failed.IsError = true
	cases := []struct {
		name string
		msgs []session.Message
		want session.EditStats
	}{
		{"apply_patch exact", []session.Message{
			blocks(session.RoleAssistant, toolUse("p1", "apply_patch", `{}`)),
			toolMsg("p1", "Patched a.go\n[+3 -1]"),
		}, session.EditStats{Added: 3, Removed: 1}},
		{"multi-file trailers summed", []session.Message{
			blocks(session.RoleAssistant, toolUse("p1", "apply_patch", `{}`)),
			toolMsg("p1", "a.go\n[+3 -1]\nb.go\n[+4 -2]\n"),
		}, session.EditStats{Added: 7, Removed: 3}},
		{"edit and write approximate", []session.Message{
			blocks(session.RoleAssistant, toolUse("e1", "edit", `{}`), toolUse("w1", "write", `{}`)),
			toolMsg("e1", "[+2 -2]"),
			toolMsg("w1", "[+10 -0]"),
		}, session.EditStats{Added: 12, Removed: 2, Approximate: true}},
		{"no trailer approximate", []session.Message{
			blocks(session.RoleAssistant, toolUse("p1", "apply_patch", `{}`)),
			toolMsg("p1", "something happened"),
		}, session.EditStats{Approximate: true}},
		{"errors ignored", []session.Message{
			blocks(session.RoleAssistant, toolUse("p1", "apply_patch", `{}`)),
			failed,
		}, session.EditStats{}},
		{"other tools ignored", []session.Message{
			blocks(session.RoleAssistant, toolUse("b1", "bash", `{}`)),
			toolMsg("b1", "[+5 -5]"),
		}, session.EditStats{}},
		{"unknown tool name ignored", []session.Message{toolMsg("nobody", "[+5 -5]")}, session.EditStats{}},
		{"recorded before capping", []session.Message{
			blocks(session.RoleAssistant, toolUse("p1", "apply_patch", `{}`)),
			toolMsg("p1", huge+"\n[+8 -1]"),
		}, session.EditStats{Added: 8, Removed: 1}},
		{"toolresult blocks in a user message", []session.Message{
			blocks(session.RoleAssistant, toolUse("p1", "apply_patch", `{}`), toolUse("p2", "apply_patch", `{}`), toolUse("p3", "apply_patch", `{}`)),
			blocks(session.RoleUser,
				session.Block{Type: session.BlockToolResult, ToolUseID: "p1", Result: "[+1 -1]"},
				session.Block{Type: session.BlockToolResult, ToolUseID: "p2", Result: "[+9 -9]", IsError: ptr(true)},
				session.Block{Type: session.BlockToolResult, ToolUseID: "p3", Result: "[+2 -0]", IsError: ptr(false)}),
		}, session.EditStats{Added: 3, Removed: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := session.New(testID, "/p", "", t0)
			session.Append(&m, nil, tc.msgs, t0, nil, session.AppendOptions{})
			if m.EditStats != tc.want {
				t.Errorf("got %+v, want %+v", m.EditStats, tc.want)
			}
		})
	}
	t.Run("via lookup", func(t *testing.T) {
		m := session.New(testID, "/p", "", t0)
		lookup := func(string) (string, bool) { return "apply_patch", true }
		session.Append(&m, nil, []session.Message{toolMsg("p9", "[+4 -4]")}, t0, lookup, session.AppendOptions{})
		if m.EditStats != (session.EditStats{Added: 4, Removed: 4}) {
			t.Errorf("%+v", m.EditStats)
		}
	})
}

func TestAppendCapping(t *testing.T) {
	huge := strings.Repeat("y", session.ToolResultMaxChars+5)
	capped := strings.Repeat("y", session.ToolResultMaxChars) + notice(5)
	userResults := func() session.Message {
		return blocks(session.RoleUser,
			session.Block{Type: session.BlockToolResult, ToolUseID: "a", Result: huge},
			session.Block{Type: session.BlockToolResult, ToolUseID: "b", Result: "small"},
			session.Block{Type: session.BlockText, Text: huge})
	}
	t.Run("tool text and toolresult blocks", func(t *testing.T) {
		m := session.New(testID, "/p", "", t0)
		in := []session.Message{toolMsg("c", huge), userResults(), text(session.RoleUser, huge)}
		res := session.Append(&m, nil, in, t0, nil, session.AppendOptions{})
		if res.Capped != 2 {
			t.Errorf("capped %d", res.Capped)
		}
		if res.Nodes[0].Msg.Content.Text != capped {
			t.Error("tool text not capped")
		}
		b := res.Nodes[1].Msg.Content.Blocks
		if b[0].Result != capped || b[1].Result != "small" || b[2].Text != huge {
			t.Error("blocks: only toolresult bodies are capped")
		}
		if res.Nodes[2].Msg.Content.Text != huge {
			t.Error("user text capped")
		}
		if want := session.EstimateTokens(capped); res.Nodes[0].Tokens != want {
			t.Errorf("tokens of the capped body: %d, want %d", res.Nodes[0].Tokens, want)
		}
		// The caller's messages are not written through.
		if in[0].Content.Text != huge || in[1].Content.Blocks[0].Result != huge {
			t.Error("Append modified its input")
		}
	})
	// Ours: a toolresult whose content is a provider block list has its
	// text parts capped as text blocks are; other parts stay as they were.
	t.Run("block-list toolresult", func(t *testing.T) {
		m := session.New(testID, "/p", "", t0)
		list := json.RawMessage(`[` + jsonOf(t, huge) + `,{"type":"text","text":` + jsonOf(t, huge) +
			`,"cache_control":{"type":"ephemeral"}},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]`)
		in := []session.Message{blocks(session.RoleUser, session.Block{Type: session.BlockToolResult, ToolUseID: "l", ResultRaw: list})}
		res := session.Append(&m, nil, in, t0, nil, session.AppendOptions{})
		want := `[` + jsonOf(t, capped) + `,{"type":"text","text":` + jsonOf(t, capped) +
			`,"cache_control":{"type":"ephemeral"}},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]`
		if got := string(res.Nodes[0].Msg.Content.Blocks[0].ResultRaw); res.Capped != 2 || got != want {
			t.Errorf("capped %d, content %.200s", res.Capped, got)
		}
		if string(in[0].Content.Blocks[0].ResultRaw) != string(list) {
			t.Error("Append modified its input")
		}
	})
	t.Run("NoCap", func(t *testing.T) {
		m := session.New(testID, "/p", "", t0)
		res := session.Append(&m, nil, []session.Message{toolMsg("c", huge), userResults(),
			toolMsg("i", "WHYCODES_IMAGE_B64:image/png\nAAAA")}, t0, nil, session.AppendOptions{NoCap: true})
		if res.Capped != 0 || res.Nodes[0].Msg.Content.Text != huge || res.Nodes[1].Msg.Content.Blocks[0].Result != huge {
			t.Error("capped with NoCap")
		}
		if !res.Nodes[2].Msg.Content.IsBlocks {
			t.Error("image payload not extracted with NoCap")
		}
	})
	t.Run("image payload", func(t *testing.T) {
		m := session.New(testID, "/p", "", t0)
		res := session.Append(&m, nil, []session.Message{toolMsg("i", "shot:\nWHYCODE_IMAGE_B64:image/png\nAAAA")}, t0, nil, session.AppendOptions{})
		want := `{"role":"tool","content":[{"type":"text","text":"shot:"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}],"tool_call_id":"i","created_at":"` + t0Text + `"}`
		if got := encode(res.Nodes[0].Msg); got != want {
			t.Errorf("\n got %s\nwant %s", got, want)
		}
		if res.Nodes[0].Tokens != session.EstimateTokens("shot:")+session.ImageTokens {
			t.Errorf("tokens %d", res.Nodes[0].Tokens)
		}
	})
	t.Run("image payload only on tool messages", func(t *testing.T) {
		m := session.New(testID, "/p", "", t0)
		body := "WHYCODE_IMAGE_B64:image/png\nAAAA"
		res := session.Append(&m, nil, []session.Message{text(session.RoleUser, body)}, t0, nil, session.AppendOptions{})
		if res.Nodes[0].Msg.Content.IsBlocks {
			t.Error("user text parsed as image")
		}
	})
}

func TestAppendHeuristicTitle(t *testing.T) {
	note := text(session.RoleUser, "please read AGENTS.md first")
	note.Kind = session.KindNote
	cases := []struct {
		name   string
		manual bool
		batch  [][]session.Message
		title  string
		source session.TitleSource
	}{
		{"first user turn titles", false, [][]session.Message{{text(session.RoleUser, "please fix the login bug")}},
			"fix the login bug", session.TitleHeuristic},
		{"later turns do not retitle", false, [][]session.Message{
			{text(session.RoleUser, "please fix the login bug"), text(session.RoleAssistant, "ok")},
			{text(session.RoleUser, "now add tests")},
		}, "fix the login bug", session.TitleHeuristic},
		{"same batch, second turn does not retitle", false, [][]session.Message{
			{text(session.RoleUser, "first"), text(session.RoleUser, "second")},
		}, "first", session.TitleHeuristic},
		{"assistant and system do not title", false, [][]session.Message{
			{text(session.RoleSystem, "be terse"), text(session.RoleAssistant, "hello there")},
		}, "proj-3f", session.TitleDefault},
		{"notes are not turns", false, [][]session.Message{{note}, {text(session.RoleUser, "hey refactor parser")}},
			"refactor parser", session.TitleHeuristic},
		{"compaction stubs are not turns", false, [][]session.Message{
			{text(session.RoleUser, "[Compacted earlier conversation]\nGoals: x"), text(session.RoleUser, "go on")},
		}, "go on", session.TitleHeuristic},
		{"first text block of a block turn", false, [][]session.Message{{blocks(session.RoleUser,
			session.Block{Type: session.BlockImage, Source: json.RawMessage(`{}`)},
			session.Block{Type: session.BlockText, Text: "what is in this picture"})}},
			"what is in this picture", session.TitleHeuristic},
		// Ours: a turn that yields no title (an image alone, blank text)
		// leaves the default, so the next turn with text names the session.
		{"textless first turn leaves the default", false, [][]session.Message{
			{blocks(session.RoleUser, session.Block{Type: session.BlockImage, Source: json.RawMessage(`{}`)})},
			{text(session.RoleUser, "   ")},
			{text(session.RoleUser, "explain the image")},
		}, "explain the image", session.TitleHeuristic},
		{"manual title wins", true, [][]session.Message{{text(session.RoleUser, "please fix the login bug")}},
			"Mine", session.TitleManual},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := session.New(testID, "/x/proj", "", t0)
			if tc.manual {
				m.SetTitleManual("Mine")
			}
			var head *session.Node
			for _, batch := range tc.batch {
				res := session.Append(&m, head, batch, t0, nil, session.AppendOptions{})
				head = &res.Nodes[len(res.Nodes)-1]
			}
			if m.Title != tc.title || m.TitleSource != tc.source {
				t.Errorf("title %q (%s), want %q (%s)", m.Title, m.TitleSource, tc.title, tc.source)
			}
		})
	}
}

func TestAppendStreamRulesTurns(t *testing.T) {
	note := text(session.RoleUser, "n")
	note.Kind = session.KindNote
	summary := text(session.RoleUser, "s")
	summary.Kind = session.KindSummary
	rewind := text(session.RoleUser, "r")
	rewind.Kind = session.KindRewind
	m := session.New(testID, "/p", "", t0)
	session.Append(&m, nil, []session.Message{
		text(session.RoleUser, "one"), // turn 1
		text(session.RoleAssistant, "a"),
		toolMsg("c", "t"),
		note, summary, rewind,
		text(session.RoleUser, "[Compacted earlier conversation]"),
		blocks(session.RoleUser, session.Block{Type: session.BlockText, Text: "two"}), // turn 2
		text(session.RoleSystem, "s"),
		text(session.RoleUser, "three"), // turn 3
	}, t0, nil, session.AppendOptions{})
	if m.StreamRules.Turn != 3 {
		t.Errorf("turn %d, want 3", m.StreamRules.Turn)
	}
	// Node.Users counts every user-role message, as whycodes'
	// user_message_count counts stubs.
	if m.UserMessageCount != 7 {
		t.Errorf("user messages %d, want 7", m.UserMessageCount)
	}
}

// ledger_tracks_turns_and_hits.
func TestStreamRules(t *testing.T) {
	var l session.StreamRules
	if !l.IsEmpty() {
		t.Error("new ledger not empty")
	}
	if _, ok := l.LastFired("r"); ok {
		t.Error("fired on an empty ledger")
	}
	l.BeginTurn()
	l.Record("no-force-push")
	if l.IsEmpty() || l.Turn != 1 {
		t.Errorf("%+v", l)
	}
	l.BeginTurn()
	l.BeginTurn()
	if got, ok := l.LastFired("no-force-push"); !ok || got != 1 {
		t.Errorf("LastFired = %d, %v", got, ok)
	}
	l.Record("no-force-push")
	l.Record("other")
	if got, _ := l.LastFired("no-force-push"); got != 3 {
		t.Errorf("LastFired after a new hit = %d", got)
	}
	if !reflect.DeepEqual(l.Fired, map[string]uint64{"no-force-push": 3, "other": 3}) {
		t.Errorf("%v", l.Fired)
	}
	t.Run("saturates", func(t *testing.T) {
		l := session.StreamRules{Turn: ^uint64(0)}
		l.BeginTurn()
		if l.Turn != ^uint64(0) {
			t.Errorf("wrapped to %d", l.Turn)
		}
	})
	t.Run("record before any turn", func(t *testing.T) {
		var l session.StreamRules
		l.Record("r")
		if got, ok := l.LastFired("r"); !ok || got != 0 {
			t.Errorf("%d %v", got, ok)
		}
	})
}

func TestUsage(t *testing.T) {
	u64 := func(v uint64) *uint64 { return &v }
	cases := []struct {
		name      string
		adds      []session.Usage
		want      session.Usage
		wantTotal uint64
	}{
		{"empty", nil, session.Usage{}, 0},
		{"plain counters", []session.Usage{{InputTokens: 10, OutputTokens: 2}, {InputTokens: 5, OutputTokens: 1}},
			session.Usage{InputTokens: 15, OutputTokens: 3}, 18},
		{"cache fields stay nil until reported", []session.Usage{{InputTokens: 1}, {OutputTokens: 1}},
			session.Usage{InputTokens: 1, OutputTokens: 1}, 2},
		{"cache fields sum once reported", []session.Usage{
			{InputTokens: 1},
			{InputTokens: 1, CacheReadInputTokens: u64(100)},
			{InputTokens: 1},
			{InputTokens: 1, CacheReadInputTokens: u64(50), CacheCreationInputTokens: u64(7)},
		}, session.Usage{InputTokens: 4, CacheReadInputTokens: u64(150), CacheCreationInputTokens: u64(7)}, 161},
		{"a reported zero is kept", []session.Usage{{CacheCreationInputTokens: u64(0)}},
			session.Usage{CacheCreationInputTokens: u64(0)}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var u session.Usage
			for _, a := range tc.adds {
				u.Add(a)
			}
			if !reflect.DeepEqual(u, tc.want) {
				t.Errorf("got %s, want %s", jsonOf(t, u), jsonOf(t, tc.want))
			}
			if u.Total() != tc.wantTotal || u.IsEmpty() != (tc.wantTotal == 0) {
				t.Errorf("Total() = %d", u.Total())
			}
		})
	}
	t.Run("Add does not alias", func(t *testing.T) {
		other := session.Usage{CacheReadInputTokens: u64(5)}
		var u session.Usage
		u.Add(other)
		u.Add(other)
		if *other.CacheReadInputTokens != 5 || *u.CacheReadInputTokens != 10 {
			t.Errorf("other %d, u %d", *other.CacheReadInputTokens, *u.CacheReadInputTokens)
		}
	})
	t.Run("JSON", func(t *testing.T) {
		if got := jsonOf(t, session.Usage{InputTokens: 1, OutputTokens: 2}); got != `{"input_tokens":1,"output_tokens":2}` {
			t.Error(got)
		}
		if got := jsonOf(t, session.Usage{CacheCreationInputTokens: u64(3), CacheReadInputTokens: u64(0)}); got != `{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":3,"cache_read_input_tokens":0}` {
			t.Error(got)
		}
	})
	t.Run("AddUsage touches", func(t *testing.T) {
		m := session.New(testID, "/p", "", t0)
		if err := m.AddUsage(session.Usage{InputTokens: 3}, t1); err != nil || m.Usage.InputTokens != 3 || m.UpdatedAt != t1Text {
			t.Errorf("%+v, %v", m, err)
		}
		before := m
		if err := m.AddUsage(session.Usage{InputTokens: math.MaxUint64 - 2}, t0.Add(time.Hour)); err == nil || m.Usage != before.Usage || m.UpdatedAt != before.UpdatedAt {
			t.Errorf("a sum past 2^64: %+v, %v", m.Usage, err)
		}
	})
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCost(t *testing.T) {
	var c session.Cost
	if !c.IsEmpty() {
		t.Error("zero cost not empty")
	}
	c.Add(ptr(0.25))
	c.Add(nil)
	c.Add(ptr(0.5))
	c.Add(nil)
	if c.USD != 0.75 || c.UnpricedSteps != 2 || c.IsEmpty() {
		t.Errorf("%+v", c)
	}
	if err := c.Merge(session.Cost{USD: 1, UnpricedSteps: 3}); err != nil || c.USD != 1.75 || c.UnpricedSteps != 5 {
		t.Errorf("Merge: %+v, %v", c, err)
	}
	for _, tc := range [][2]session.Cost{
		{{USD: math.MaxFloat64}, {USD: math.MaxFloat64}},
		{{USD: 1}, {USD: math.Inf(1)}},
		{{UnpricedSteps: 5}, {UnpricedSteps: math.MaxUint32}},
	} {
		c, was := tc[0], tc[0]
		if err := c.Merge(tc[1]); err == nil || c != was {
			t.Errorf("Merge(%+v) into %+v: %+v, %v", tc[1], was, c, err)
		}
	}
	unpriced := session.Cost{}
	unpriced.Add(nil)
	if unpriced.IsEmpty() {
		t.Error("an unpriced step is not empty")
	}
	priced := session.Cost{}
	priced.Add(ptr(0.0))
	if !priced.IsEmpty() {
		t.Error("a free step is empty")
	}
}

func TestSetSystemPromptAndHead(t *testing.T) {
	m, tree := buildSession(t, "/p", "abcd", text(session.RoleUser, "abcdefgh"), text(session.RoleAssistant, "abcdefghijkl"))
	if m.SystemTokens != 1 || m.Tokens != 1+2+3 {
		t.Fatalf("tokens %d/%d", m.SystemTokens, m.Tokens)
	}
	m.SetSystemPrompt(strings.Repeat("s", 40))
	if m.SystemTokens != 10 || m.Tokens != 10+5 || m.SystemPrompt != strings.Repeat("s", 40) {
		t.Errorf("tokens %d/%d", m.SystemTokens, m.Tokens)
	}
	m.SetHead(tree.Node(1))
	if m.Head != 1 || m.MessageCount != 1 || m.UserMessageCount != 1 || m.Tokens != 12 {
		t.Errorf("SetHead(1): %+v", m.Info())
	}
	m.SetHead(nil)
	if m.Head != 0 || m.MessageCount != 0 || m.UserMessageCount != 0 || m.Tokens != 10 {
		t.Errorf("SetHead(nil): %+v", m.Info())
	}
	m.Touch(t1)
	if m.UpdatedAt != t1Text {
		t.Error(m.UpdatedAt)
	}
	if got := session.FormatTime(time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("x", -3600))); got != "2026-01-02T04:04:05.0000006Z" {
		t.Errorf("FormatTime = %s", got)
	}
}

func TestMetaBranchSeq(t *testing.T) {
	m, _ := buildSession(t, "/p", "sys", text(session.RoleUser, "please fix & ship"))
	m.Branches = []session.NamedBranch{{Name: "main", Seq: 1}}
	if seq, ok := m.BranchSeq("main"); !ok || seq != 1 {
		t.Error("BranchSeq(main)")
	}
	if _, ok := m.BranchSeq("nope"); ok {
		t.Error("BranchSeq(nope)")
	}
}

func TestTree(t *testing.T) {
	// 1 ─ 2 ─ 3 ─ 4        (head 4)
	//      └─ 5 ─ 6        (named "alt" at 6)
	//      └─ 7            (unnamed leaf)
	// 8                    (second root, unnamed leaf)
	mk := func(seq, parent uint64, s string) session.Node {
		return session.Node{Seq: seq, Parent: parent, Msg: text(session.RoleUser, s)}
	}
	nodes := []session.Node{mk(1, 0, "a"), mk(2, 1, "b"), mk(3, 2, "c"), mk(4, 3, "d"), mk(5, 2, "e"), mk(6, 5, "f"), mk(7, 2, "g"), mk(8, 0, "h")}
	tree := session.NewTree(nodes)
	pathText := func(p []*session.Node) string {
		var b strings.Builder
		for _, n := range p {
			b.WriteString(n.Msg.Content.Text)
		}
		return b.String()
	}
	if tree.Len() != 8 || len(tree.Nodes()) != 8 {
		t.Error("Len")
	}
	if got := pathText(tree.Path(6)); got != "abef" {
		t.Errorf("Path(6) = %s", got)
	}
	if tree.Path(0) != nil || tree.Path(99) != nil {
		t.Error("Path of nothing")
	}
	if tree.Node(99) != nil || tree.Node(3).Msg.Content.Text != "c" {
		t.Error("Node")
	}
	if got := tree.Leaves(); !reflect.DeepEqual(got, []uint64{4, 6, 7, 8}) {
		t.Errorf("Leaves = %v", got)
	}
	if got := tree.Children(2); !reflect.DeepEqual(got, []uint64{3, 5, 7}) {
		t.Errorf("Children(2) = %v", got)
	}
	if got := tree.Children(0); !reflect.DeepEqual(got, []uint64{1, 8}) {
		t.Errorf("roots = %v", got)
	}
	m := session.Meta{Head: 4, Branches: []session.NamedBranch{{Name: "alt", Seq: 6}, {Name: "mid", Seq: 2}, {Seq: 7}}}
	var got []string
	for _, b := range session.Branches(&m, tree) {
		var msgs []string
		for _, msg := range b.Messages {
			msgs = append(msgs, msg.Content.Text)
		}
		got = append(got, b.Name+"="+strings.Join(msgs, ""))
	}
	// The kept entries in order, named or not; the leaf 8 is kept by nothing.
	if want := []string{"alt=abef", "mid=ab", "=abg"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Branches = %v, want %v", got, want)
	}
	t.Run("corrupt parent links end the path", func(t *testing.T) {
		loop := session.NewTree([]session.Node{{Seq: 1, Parent: 2}, {Seq: 2, Parent: 1}})
		if p := loop.Path(2); p != nil {
			t.Errorf("Path on a cycle = %d nodes", len(p))
		}
		self := session.NewTree([]session.Node{{Seq: 3, Parent: 3}})
		if p := self.Path(3); p != nil {
			t.Error("Path on a self-loop")
		}
	})
}

// Totals that would wrap or become infinite do not fit; anything else does.
func TestTotalsFit(t *testing.T) {
	n := func(v uint64) *uint64 { return &v }
	usd := func(v float64) *float64 { return &v }
	const top = math.MaxUint64
	usages := []struct {
		have, add session.Usage
		fits      bool
	}{
		{session.Usage{InputTokens: top - 1}, session.Usage{InputTokens: 1}, true},
		{session.Usage{InputTokens: top}, session.Usage{InputTokens: 1}, false},
		{session.Usage{OutputTokens: 2}, session.Usage{OutputTokens: top - 1}, false},
		{session.Usage{CacheReadInputTokens: n(top)}, session.Usage{CacheReadInputTokens: n(1)}, false},
		{session.Usage{CacheCreationInputTokens: n(top)}, session.Usage{CacheCreationInputTokens: n(1)}, false},
		{session.Usage{CacheReadInputTokens: n(top)}, session.Usage{}, true},
		{session.Usage{}, session.Usage{CacheReadInputTokens: n(top)}, true},
	}
	for _, c := range usages {
		if got := c.have.Fits(c.add); got != c.fits {
			t.Errorf("%+v fits %+v: %v, want %v", c.have, c.add, got, c.fits)
		}
	}
	costs := []struct {
		have session.Cost
		add  *float64
		fits bool
	}{
		{session.Cost{USD: 1e308}, usd(1e308), false},
		{session.Cost{USD: 1e308}, usd(1e307), true},
		{session.Cost{UnpricedSteps: math.MaxUint32 - 1}, nil, true},
		{session.Cost{UnpricedSteps: math.MaxUint32}, nil, false},
	}
	for _, c := range costs {
		if got := c.have.Fits(c.add); got != c.fits {
			t.Errorf("%+v fits %v: %v, want %v", c.have, c.add, got, c.fits)
		}
	}
}
