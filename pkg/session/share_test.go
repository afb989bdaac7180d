package session_test

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
)

const newID = "0c0ffee0-1111-4222-8333-444455556666"

// topLevelKeys returns the member names of a JSON object, in order.
func topLevelKeys(t *testing.T, doc []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %v %v", tok, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func shareOf(m *session.Meta, nodes []session.Node) []byte {
	return session.AppendShare(nil, m, session.NewTree(nodes))
}

func decodeShare(t testing.TB, raw []byte) session.Share {
	t.Helper()
	sh, err := session.DecodeShare(raw)
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

func TestAppendShareFieldOrder(t *testing.T) {
	m, tree := buildSession(t, "/p", "sys", text(session.RoleUser, "a"))
	minimal := session.AppendShare(nil, &m, tree)
	want := []string{"id", "title", "title_source", "messages", "branches", "system_prompt", "project_path",
		"created_at", "updated_at", "usage", "cost", "edit_stats", "stream_rules"}
	if got := topLevelKeys(t, minimal); !reflect.DeepEqual(got, want) {
		t.Errorf("keys %v\nwant %v", got, want)
	}
	m.Checkpoint = &session.Checkpoint{KeepUntil: 1, Goal: "g", StartedAt: t0Text}
	m.LastRewindReport = ptr("r")
	m.ForkedFrom = &session.ForkOrigin{ID: "x", Seq: 2}
	m.Extra = []session.Field{{Key: "turn_context", Value: json.RawMessage(`"c"`)}, {Key: "instruction_dirs", Value: json.RawMessage(`[]`)}}
	full := session.AppendShare(nil, &m, tree)
	want = []string{"id", "title", "title_source", "messages", "branches", "system_prompt", "project_path",
		"created_at", "updated_at", "usage", "cost", "edit_stats", "checkpoint", "last_rewind_report",
		"stream_rules", "forked_from", "turn_context", "instruction_dirs"}
	if got := topLevelKeys(t, full); !reflect.DeepEqual(got, want) {
		t.Errorf("keys %v\nwant %v", got, want)
	}
	// serde_test_round_trip...: the token cache is never written.
	for _, doc := range [][]byte{minimal, full} {
		if bytes.Contains(doc, []byte("token_cache")) {
			t.Error("token_cache written")
		}
		if !json.Valid(doc) {
			t.Error("invalid JSON")
		}
	}
	wantMinimal := `{"id":"` + testID + `","title":"a","title_source":"heuristic","messages":[{"role":"user","content":"a","created_at":"` + t0Text + `"}],"branches":[],"system_prompt":"sys","project_path":"/p","created_at":"` + t0Text + `","updated_at":"` + t0Text + `","usage":{"input_tokens":0,"output_tokens":0},"cost":{"usd":0.0,"unpriced_steps":0},"edit_stats":{"added":0,"removed":0,"approximate":false},"stream_rules":{"turn":1,"fired":{}}}`
	if string(minimal) != wantMinimal {
		t.Errorf("\n got %s\nwant %s", minimal, wantMinimal)
	}
}

func TestAppendShareNoHTMLEscaping(t *testing.T) {
	m, tree := buildSession(t, "/p/<x>", "a <b> & c", text(session.RoleUser, "<script>"))
	m.Checkpoint = &session.Checkpoint{Goal: "<goal> & more", StartedAt: t0Text}
	m.LastRewindReport = ptr("<r>")
	m.ForkedFrom = &session.ForkOrigin{ID: "<id>"}
	m.StreamRules.Record("<rule>&")
	m.Title = "<t>"
	doc := session.AppendShare(nil, &m, tree)
	for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
		if bytes.Contains(doc, []byte(esc)) {
			t.Errorf("HTML-escaped %s in %s", esc, doc)
		}
	}
	for _, lit := range []string{`"goal":"<goal> & more"`, `"fired":{"<rule>&":1}`, `"forked_from":{"id":"<id>","seq":0}`, `"title":"<t>"`} {
		if !bytes.Contains(doc, []byte(lit)) {
			t.Errorf("missing %s in %s", lit, doc)
		}
	}
}

var tenth = 0.1

// Costs are written as serde_json (ryu) writes an f64.
func TestAppendShareCostFloats(t *testing.T) {
	cases := []struct {
		v    float64
		want string
	}{
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{3, "3.0"},
		{-2.5, "-2.5"},
		{0.1, "0.1"},
		{tenth + 2*tenth, "0.30000000000000004"}, // at run time: constants are exact
		{0.4213, "0.4213"},
		{12.5, "12.5"},
		{1.5e-5, "0.000015"},
		{1e-5, "0.00001"},
		{1e-6, "1e-6"},
		{1.25e-7, "1.25e-7"},
		{1234567, "1234567.0"},
		{1e15, "1000000000000000.0"},
		{1e16, "1e16"},
		{1.5e16, "1.5e16"},
		{1.5e17, "1.5e17"},
		{1 << 60, "1.152921504606847e18"},
		{1e21, "1e21"},
		{5e-324, "5e-324"},
		{math.MaxFloat64, "1.7976931348623157e308"},
		{math.NaN(), "null"},
		{math.Inf(1), "null"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			m := session.New(testID, "/p", "", t0)
			m.Cost.USD = tc.v
			doc := session.AppendShare(nil, &m, session.NewTree(nil))
			if want := `"cost":{"usd":` + tc.want + `,`; !bytes.Contains(doc, []byte(want)) {
				t.Errorf("got %s", doc[bytes.Index(doc, []byte(`"cost"`)):][:40])
			}
			if !json.Valid(doc) {
				t.Error("invalid JSON")
			}
			if math.IsNaN(tc.v) || math.IsInf(tc.v, 0) {
				return
			}
			sh := decodeShare(t, doc)
			if sh.Meta.Cost.USD != tc.v || math.Signbit(sh.Meta.Cost.USD) != math.Signbit(tc.v) {
				t.Errorf("reads back as %v", sh.Meta.Cost.USD)
			}
		})
	}
}

func TestDecodeWhycodesShare(t *testing.T) {
	raw := readTestdata(t, "whycodes-share.json")
	sh := decodeShare(t, raw)
	if len(sh.Messages) != 8 || len(sh.Branches) != 3 {
		t.Fatalf("%d messages, %d branches", len(sh.Messages), len(sh.Branches))
	}
	br := sh.Branches
	if !br[0].HasName || br[0].Name != "before-patch" || len(br[0].Messages) != 3 ||
		!br[1].HasName || br[1].Name != "try-mock" || len(br[1].Messages) != 5 ||
		br[2].HasName || len(br[2].Messages) != 2 {
		t.Errorf("branches %+v", br)
	}
	m := sh.Meta
	u64 := func(v uint64) *uint64 { return &v }
	want := session.Meta{
		Title: "fix the flaky auth test", TitleSource: session.TitleHeuristic,
		SystemPrompt: "You are whycodes, a coding agent.", ProjectPath: "/home/u/auth-service",
		CreatedAt: "2026-08-20T09:00:00.123456789Z", UpdatedAt: "2026-08-20T09:14:02.5Z",
		Usage:            session.Usage{InputTokens: 48211, OutputTokens: 2210, CacheCreationInputTokens: u64(12000), CacheReadInputTokens: u64(96000)},
		Cost:             session.Cost{USD: 0.4213, UnpricedSteps: 1},
		EditStats:        session.EditStats{Added: 4, Removed: 2},
		Checkpoint:       &session.Checkpoint{KeepUntil: 5, Goal: "find why <TestLogin> flakes & fix it", StartedAt: "2026-08-20T09:00:45Z"},
		LastRewindReport: ptr("Explored two fixes; kept the clock injection."),
		StreamRules:      session.StreamRules{Turn: 2, Fired: map[string]uint64{"ask-before-rm": 2, "no-force-push": 1}},
		Extra: []session.Field{
			{Key: "turn_context", Value: json.RawMessage(`"git branch: fix/auth-flake"`)},
			{Key: "instruction_dirs", Value: json.RawMessage(`["/home/u/auth-service"]`)},
		},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("meta\n got %+v\nwant %+v", m, want)
	}
	if got := sh.Messages[1].Content.Blocks[0]; got.Type != session.BlockThinking || got.Signature != "EqQBCkYIBxgCKkB3c2lnbmF0dXJl" {
		t.Errorf("thinking %+v", got)
	}
}

// The reference's export/import round trip: FromShare, a tree, AppendShare
// give back the input; only the id is new. Ours writes our member order
// (unknown members last) and compact JSON, so compare values, then bytes
// from the second round on.
func TestShareRoundTrip(t *testing.T) {
	raw := readTestdata(t, "whycodes-share.json")
	m, nodes := session.FromShare(ptr(decodeShare(t, raw)), newID, t1)
	out := shareOf(&m, nodes)

	var in, got map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil {
		t.Fatal(err)
	}
	dec = json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got["id"] != newID {
		t.Errorf("id %v", got["id"])
	}
	delete(in, "id")
	delete(got, "id")
	// A whycodes checkpoint names a position; wc adds the node it is.
	if cp, ok := got["checkpoint"].(map[string]any); ok {
		if cp["seq"] != json.Number("6") {
			t.Errorf("checkpoint seq %v, want 6 (position 5 of the active path)", cp["seq"])
		}
		delete(cp, "seq")
	}
	for k := range in {
		if !reflect.DeepEqual(in[k], got[k]) {
			a, _ := json.Marshal(in[k])
			b, _ := json.Marshal(got[k])
			t.Errorf("%s differs:\n  in %s\n out %s", k, a, b)
		}
	}
	if len(got) != len(in) {
		t.Errorf("%d members, want %d", len(got), len(in))
	}

	t.Run("stable bytes", func(t *testing.T) {
		m2, nodes2 := session.FromShare(ptr(decodeShare(t, out)), newID, t1)
		if again := shareOf(&m2, nodes2); !bytes.Equal(again, out) {
			t.Errorf("second round differs:\n%s\n%s", again, out)
		}
		m3, nodes3 := session.FromShare(ptr(decodeShare(t, out)), testID, t1)
		third := shareOf(&m3, nodes3)
		if want := bytes.Replace(out, []byte(newID), []byte(testID), 1); !bytes.Equal(third, want) {
			t.Errorf("a new id changes more than the id:\n%s", third)
		}
	})

	t.Run("tree", func(t *testing.T) {
		// 8 active + 0 (before-patch is a prefix) + 2 (try-mock) + 1 (unnamed).
		if len(nodes) != 11 {
			t.Errorf("%d nodes, want 11", len(nodes))
		}
		if m.Head != 8 || m.NextSeq != 12 || m.MessageCount != 8 || m.UserMessageCount != 2 {
			t.Errorf("head %d next %d count %d users %d", m.Head, m.NextSeq, m.MessageCount, m.UserMessageCount)
		}
		if want := []session.NamedBranch{{Name: "before-patch", Seq: 3}, {Name: "try-mock", Seq: 10}, {Seq: 11}}; !reflect.DeepEqual(m.Branches, want) {
			t.Errorf("branches %+v", m.Branches)
		}
		tree := session.NewTree(nodes)
		var tokens uint64
		for _, n := range tree.Path(m.Head) {
			tokens += session.MessageTokens(&n.Msg)
		}
		if m.SystemTokens != session.EstimateTokens(m.SystemPrompt) || m.Tokens != m.SystemTokens+tokens {
			t.Errorf("tokens %d/%d", m.SystemTokens, m.Tokens)
		}
		if got := tree.Children(1); !reflect.DeepEqual(got, []uint64{2, 11}) {
			t.Errorf("fork after the first message: %v", got)
		}
	})

	t.Run("kept as given", func(t *testing.T) {
		if m.Title != "fix the flaky auth test" || m.TitleSource != session.TitleHeuristic ||
			m.CreatedAt != "2026-08-20T09:00:00.123456789Z" || m.UpdatedAt != "2026-08-20T09:14:02.5Z" ||
			*m.Usage.CacheReadInputTokens != 96000 || m.EditStats.Added != 4 || m.Checkpoint == nil {
			t.Errorf("%+v", m)
		}
	})
}

// Ours: named branches first, then unnamed leaves; paths that are only a
// prefix of another path, or equal to the active one, are not repeated.
func TestShareBranchOrderAndDedup(t *testing.T) {
	u := `{"role":"user","content":"u"}`
	a1 := `{"role":"assistant","content":"a1"}`
	a2 := `{"role":"assistant","content":"a2"}`
	a3 := `{"role":"assistant","content":"a3"}`
	in := `{"title":"t","title_source":"manual","messages":[` + u + `,` + a1 + `],"branches":[` +
		`{"messages":[` + u + `,` + a2 + `]},` + // unnamed first in the input
		`{"name":"n","messages":[` + u + `,` + a3 + `]},` +
		`{"messages":[` + u + `]},` + // a prefix: no leaf of its own
		`{"messages":[` + u + `,` + a1 + `]},` + // the active path again
		`{"name":"same-as-active","messages":[` + u + `,` + a1 + `]},` +
		`{"name":"empty","messages":[]}` +
		`]}`
	m, nodes := session.FromShare(ptr(decodeShare(t, []byte(in))), newID, t0)
	out := shareOf(&m, nodes)
	sh := decodeShare(t, out)
	var got []string
	for _, b := range sh.Branches {
		var parts []string
		for _, msg := range b.Messages {
			parts = append(parts, msg.Content.Text)
		}
		name := "-"
		if b.HasName {
			name = b.Name
		}
		got = append(got, name+":"+strings.Join(parts, ","))
	}
	// Kept in input order; an unnamed copy of the active path adds nothing.
	want := []string{"-:u,a2", "n:u,a3", "-:u", "same-as-active:u,a1", "empty:"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("branches %v, want %v", got, want)
	}
	if len(nodes) != 4 {
		t.Errorf("%d nodes, want 4", len(nodes))
	}
}

// from_imported_uses_title_hint_or_first_user_text, and the upgrade of a
// placeholder title on import (whycodes upgrades on resume and listing).
func TestFromShareTitles(t *testing.T) {
	cases := []struct {
		name, in, title string
		source          session.TitleSource
	}{
		{"bare array gets a heuristic title", `[{"role":"system","content":"s"},{"role":"assistant","content":"hi"},{"role":"user","content":"please fix the login bug"},{"role":"user","content":"second"}]`,
			"fix the login bug", session.TitleHeuristic},
		// As from_imported: only the first user message can title, and an
		// image-only one has no text.
		{"image-only first user message", `[{"role":"user","content":[{"type":"image","source":{}}]},{"role":"user","content":"Hey describe it"}]`,
			"proj-0c", session.TitleDefault},
		{"first user message's first text block", `[{"role":"user","content":[{"type":"image","source":{}},{"type":"text","text":"Hey describe it"}]},{"role":"user","content":"later"}]`,
			"describe it", session.TitleHeuristic},
		{"no user text keeps the default", `[{"role":"assistant","content":"hi"}]`, "proj-0c", session.TitleDefault},
		{"empty array", `[]`, "proj-0c", session.TitleDefault},
		{"untitled object", `{"project_path":"/x/proj","messages":[{"role":"user","content":"add tests"}]}`, "add tests", session.TitleHeuristic},
		{"empty title", `{"title":"","project_path":"/x/proj","messages":[{"role":"user","content":"add tests"}]}`, "add tests", session.TitleHeuristic},
		{"title kept, source inferred generated", `{"title":"My title","messages":[{"role":"user","content":"add tests"}]}`, "My title", session.TitleGenerated},
		{"placeholder title upgraded", `{"title":"proj-ab","project_path":"/x/proj","messages":[{"role":"user","content":"add tests"},{"role":"user","content":"next"}]}`, "add tests", session.TitleHeuristic},
		{"placeholder title without user text kept", `{"title":"proj-ab","project_path":"/x/proj","messages":[{"role":"assistant","content":"hi"}]}`, "proj-ab", session.TitleDefault},
		{"legacy title inferred default", `{"title":"New session - 2024-01-01T00:00:00.000Z","messages":[]}`, "New session - 2024-01-01T00:00:00.000Z", session.TitleDefault},
		{"legacy title upgraded from the first prompt", `{"title":"New session - 2024-01-01T00:00:00.000Z","messages":[{"role":"user","content":"Please fix the stripe webhook"},{"role":"assistant","content":"ok"},{"role":"user","content":"also retries"}]}`, "fix the stripe webhook", session.TitleHeuristic},
		{"a default source is a placeholder", `{"title":"x","title_source":"default","messages":[{"role":"user","content":"add tests"}]}`, "add tests", session.TitleHeuristic},
		{"title and source kept", `{"title":"x","title_source":"manual","messages":[{"role":"user","content":"add tests"}]}`, "x", session.TitleManual},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sh := decodeShare(t, []byte(tc.in))
			if sh.Meta.ProjectPath == "" {
				sh.Meta.ProjectPath = "/x/proj"
			}
			m, _ := session.FromShare(&sh, newID, t0)
			if m.Title != tc.title || m.TitleSource != tc.source {
				t.Errorf("title %q (%s), want %q (%s)", m.Title, m.TitleSource, tc.title, tc.source)
			}
		})
	}
}

func TestFromShareDefaults(t *testing.T) {
	sh := decodeShare(t, []byte(`[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]`))
	m, nodes := session.FromShare(&sh, newID, t1)
	if m.ID != newID || m.CreatedAt != t1Text || m.UpdatedAt != t1Text {
		t.Errorf("%+v", m)
	}
	if len(nodes) != 2 || m.Head != 2 || m.MessageCount != 2 || m.UserMessageCount != 1 || m.NextSeq != 3 {
		t.Errorf("head %d count %d", m.Head, m.MessageCount)
	}
	// Messages are not re-stamped.
	if nodes[0].Msg.CreatedAt != "" {
		t.Errorf("stamped %q", nodes[0].Msg.CreatedAt)
	}
	t.Run("updated_at defaults to created_at", func(t *testing.T) {
		sh := decodeShare(t, []byte(`{"created_at":"2020-01-01T00:00:00Z","messages":[]}`))
		m, nodes := session.FromShare(&sh, newID, t1)
		if m.CreatedAt != "2020-01-01T00:00:00Z" || m.UpdatedAt != m.CreatedAt || len(nodes) != 0 || m.Head != 0 {
			t.Errorf("%+v", m)
		}
	})
	t.Run("token_cache and id are dropped", func(t *testing.T) {
		sh := decodeShare(t, []byte(`{"id":"old","token_cache":{"total":5},"messages":[],"x":1}`))
		if len(sh.Meta.Extra) != 1 || sh.Meta.Extra[0].Key != "x" {
			t.Errorf("extra %+v", sh.Meta.Extra)
		}
		m, nodes := session.FromShare(&sh, newID, t1)
		out := shareOf(&m, nodes)
		if bytes.Contains(out, []byte("token_cache")) || bytes.Contains(out, []byte(`"old"`)) {
			t.Errorf("%s", out)
		}
	})
	t.Run("stored counts in the share are ignored", func(t *testing.T) {
		sh := decodeShare(t, []byte(`{"messages":[{"role":"user","content":"abcd"}],"branches":null,"usage":{"input_tokens":1,"output_tokens":2}}`))
		m, _ := session.FromShare(&sh, newID, t1)
		if m.Tokens != 1 || m.MessageCount != 1 || m.Usage.Total() != 3 {
			t.Errorf("%+v", m.Info())
		}
	})
}

func TestDecodeShareErrors(t *testing.T) {
	cases := []struct{ name, in, mention string }{
		{"string", `"x"`, "a string"},
		{"number", `1`, "a number"},
		{"null", `null`, "null"},
		{"no messages", `{"title":"x"}`, "messages"},
		{"messages not an array", `{"messages":{}}`, "messages"},
		{"bad message", `{"messages":[{"role":"user","content":"a"},{"role":"robot"}]}`, `message 2: unknown role "robot"`},
		{"bad message in a bare array", `[{"role":"user"},3]`, "message 2"},
		{"branches not an array", `{"messages":[],"branches":{}}`, "branches"},
		{"branch without messages", `{"messages":[],"branches":[{"name":"x"}]}`, "branch 1"},
		{"branch not an object", `{"messages":[],"branches":[[]]}`, "branch 1"},
		{"bad branch message", `{"messages":[],"branches":[{"messages":[]},{"messages":[{"role":"user","content":5}]}]}`, "branch 2: branch message 1"},
		{"usage of the wrong type", `{"messages":[],"usage":{"input_tokens":"many"}}`, "usage"},
		{"negative usage", `{"messages":[],"usage":{"input_tokens":-1}}`, "share metadata"},
		{"title not a string", `{"messages":[],"title":5}`, "title"},
		{"cost of the wrong type", `{"messages":[],"cost":[]}`, "cost"},
		{"bad created_at", `{"messages":[],"created_at":"monday"}`, "monday"},
		{"bad updated_at", `{"messages":[],"updated_at":"2026-08-20"}`, "2026-08-20"},
		{"checkpoint of the wrong type", `{"messages":[],"checkpoint":{"keep_until":"x"}}`, "checkpoint"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := session.DecodeShare([]byte(tc.in))
			if err == nil {
				t.Fatal("no error")
			}
			if !isInvalid(err) {
				t.Errorf("%T is not *session.InvalidError", err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

// Edit stats are rebuilt from the transcript on import, as whycodes
// rebuilds them on load, when the share does not give them: from tool
// messages (named, or by their call) and toolresult blocks.
func TestFromShareRebuildsEditStats(t *testing.T) {
	const msgs = `[{"role":"user","content":"patch it"},
		{"role":"assistant","content":[{"type":"tooluse","id":"p1","name":"apply_patch","input":{}}]},
		{"role":"tool","tool_call_id":"p1","content":"patched a.go\n[+4 -2]\npatched b.go\n[+1 -0]"},
		{"role":"assistant","content":[{"type":"tooluse","id":"p2","name":"apply_patch","input":{}}]},
		{"role":"user","content":[{"type":"toolresult","tool_use_id":"p2","content":"[+3 -3]","is_error":null}]},
		{"role":"assistant","content":[{"type":"tooluse","id":"g1","name":"grep","input":{}}]},
		{"role":"tool","tool_call_id":"g1","content":"[+9 -9]"},
		{"role":"tool","tool_call_id":"p3","name":"apply_patch","content":"failed\n[+7 -7]","is_error":true}]`
	cases := []struct {
		name, in string
		want     session.EditStats
	}{
		{"share without edit_stats", `{"title":"t","messages":` + msgs + `}`, session.EditStats{Added: 8, Removed: 5}},
		{"bare message list", msgs, session.EditStats{Added: 8, Removed: 5}},
		{"share with edit_stats keeps them", `{"title":"t","edit_stats":{"added":1,"removed":2,"approximate":true},"messages":` + msgs + `}`, session.EditStats{Added: 1, Removed: 2, Approximate: true}},
		{"a counted result without a trailer", `[{"role":"tool","name":"edit","tool_call_id":"e","content":"done"}]`, session.EditStats{Approximate: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sh := decodeShare(t, []byte(c.in))
			m, _ := session.FromShare(&sh, newID, t0)
			if m.EditStats != c.want {
				t.Errorf("edit stats %+v, want %+v", m.EditStats, c.want)
			}
		})
	}
}

// Ours: whycodes' load_from_db starts cost and the stream-rule ledger at
// zero and infers title_source from the title; a share imported here, and
// every session the store holds (record.TestMetaRoundTrip), keeps all
// three as they were.
func TestDepartureResumeRestartsCostAndStreamRules(t *testing.T) {
	in := `{"title":"proj-ab","title_source":"generated","project_path":"/x/proj","cost":{"usd":0.25,"unpriced_steps":2},` +
		`"stream_rules":{"turn":3,"fired":{"no-sleep":2}},"messages":[{"role":"user","content":"add tests"}]}`
	sh := decodeShare(t, []byte(in))
	m, nodes := session.FromShare(&sh, newID, t0)
	if m.Cost != (session.Cost{USD: 0.25, UnpricedSteps: 2}) || m.StreamRules.Turn != 3 || m.StreamRules.Fired["no-sleep"] != 2 {
		t.Errorf("cost %+v, stream rules %+v", m.Cost, m.StreamRules)
	}
	// "proj-ab" would be inferred a placeholder; the share says generated.
	if m.Title != "proj-ab" || m.TitleSource != session.TitleGenerated {
		t.Errorf("title %q (%s)", m.Title, m.TitleSource)
	}
	out := decodeShare(t, session.AppendShare(nil, &m, session.NewTree(nodes)))
	if out.Meta.Cost != m.Cost || out.Meta.StreamRules.Turn != 3 || out.Meta.TitleSource != session.TitleGenerated {
		t.Errorf("exported: %+v", out.Meta)
	}
}
