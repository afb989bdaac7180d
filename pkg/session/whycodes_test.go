package session_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/internal/wirecheck"
	"github.com/wctoolkit/wc/internal/wirecheck/sessioncheck"
	"github.com/wctoolkit/wc/pkg/session"
)

// Every class of content whycodes' serde types refuse still gives a share
// it loads: whycodes gets what it can hold, wc_content keeps the rest, and
// wc reads the share back as the same tree.
func TestShareLoadsInWhycodes(t *testing.T) {
	png := `{"type":"base64","media_type":"image/png","data":"iVBO"}`
	cases := []struct {
		name string
		msg  string
		view string // the message's content as whycodes gets it
	}{
		{"server_tool_use from a raw Anthropic response",
			`{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"go"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},{"type":"text","text":"found"}]}`,
			`[{"type":"text","text":"found"}]`},
		{"the --native compaction block",
			`{"role":"assistant","content":[{"type":"compaction","encrypted_content":"gAAAA=="}],"kind":"summary"}`, `[]`},
		{"Codex items",
			`{"role":"assistant","content":[{"type":"thinking","text":"plan","encrypted_content":"gAAA"},{"type":"web_search_call","status":"completed"},{"type":"tooluse","id":"call_1","name":"apply_patch","input":"*** Begin Patch"}]}`,
			`[{"type":"thinking","text":"plan","encrypted_content":"gAAA"},{"type":"tooluse","id":"call_1","name":"apply_patch","input":"*** Begin Patch"}]`},
		{"a tool result's block list",
			`{"role":"user","content":[{"type":"toolresult","tool_use_id":"t1","content":[{"type":"text","text":"a"},{"type":"image","source":` + png + `}],"is_error":null}]}`,
			`[{"type":"toolresult","tool_use_id":"t1","content":"a","is_error":null}]`},
		{"an image of a file source",
			`{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"file_1"}},{"type":"image","source":` + png + `}]}`,
			`[{"type":"image","source":` + png + `}]`},
		{"a tool input past serde_json's limits",
			`{"role":"assistant","content":[{"type":"tooluse","id":"t1","name":"n","input":{"x":1e400}}]}`,
			`[{"type":"tooluse","id":"t1","name":"n","input":"{\"x\":1e400}"}]`},
		{"a block member past them",
			`{"role":"assistant","content":[{"type":"text","text":"a","deep":` + strings.Repeat("[", 125) + strings.Repeat("]", 125) + `,"ok":1}]}`,
			`[{"type":"text","text":"a","ok":1}]`},
		{"content whycodes loads", `{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]}`, ""},
	}
	for _, c := range cases {
		m, tree := buildSession(t, "/p", "s", text(session.RoleUser, "go"), decode(t, c.msg))
		share := session.AppendShare(nil, &m, tree)
		msg := gjson.GetBytes(share, "messages.1")
		switch {
		case c.view == "" && msg.Get("wc_content").Exists():
			t.Errorf("%s: a wc_content for content whycodes loads: %s", c.name, msg.Raw)
		case c.view != "" && msg.Get("content").Raw != c.view:
			t.Errorf("%s: whycodes gets %s, want %s", c.name, msg.Get("content").Raw, c.view)
		case c.view != "" && msg.Get("wc_content").Raw != gjson.Get(encode(tree.Node(2).Msg), "content").Raw:
			t.Errorf("%s: wc_content %s", c.name, msg.Get("wc_content").Raw)
		}
		if err := sessioncheck.Share(&m, tree); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// A lone surrogate escape in JSON wc keeps as it came is \ufffd from the
// way in (what encoding/json makes of it), in every place wc keeps JSON.
func TestLoneSurrogatesReplaced(t *testing.T) {
	m := decode(t, `{"role":"assistant","content":[{"type":"compaction","x":"a\ud800b\udc00"},`+
		`{"type":"tooluse","id":"t","name":"n","input":{"s":"\ud83d\ude00\ud83d"}},{"type":"text","text":"\ud800","extra":"\\ud800"}],"meta":"\udfff"}`)
	got := encode(m)
	want := `{"role":"assistant","content":[{"type":"compaction","x":"a\ufffdb\ufffd"},` +
		`{"type":"tooluse","id":"t","name":"n","input":{"s":"\ud83d\ude00\ufffd"}},{"type":"text","text":"` + "\ufffd" + `","extra":"\\ud800"}],"meta":"\ufffd"}`
	if got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	meta, tree := buildSession(t, "/p", "s", text(session.RoleUser, "go"), m)
	if _, err := wirecheck.LoadWhycodes(session.AppendShare(nil, &meta, tree)); err != nil {
		t.Error(err)
	}
}

// An import refuses what whycodes would not load: an unknown title_source,
// a time chrono does not read.
func TestDecodeShareRefusesWhatWhycodesCannotLoad(t *testing.T) {
	for _, doc := range []string{
		`{"title":"t","title_source":"Manual","messages":[{"role":"user","content":"a"}]}`,
		`{"title":"t","title_source":"bogus","messages":[{"role":"user","content":"a"}]}`,
		`{"messages":[{"role":"user","content":"a","created_at":"2026-08-21T12:00:00,5Z"}]}`,
		`{"messages":[{"role":"user","content":"a"}],"created_at":"2026-08-21T12:00:00,5Z"}`,
		`{"messages":[{"role":"user","content":"a"}],"checkpoint":{"keep_until":0,"goal":"g"}}`,
	} {
		if _, err := session.DecodeShare([]byte(doc)); err == nil || !isInvalid(err) {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

// brTree builds a session whose tree the paths alone do not give back: a
// branch made before the active path's later nodes, two equal siblings, a
// node no path reaches, a seq freed at the end.
func brTree(t *testing.T) (session.Meta, *session.Tree) {
	t.Helper()
	m := session.New(testID, "/p", "s", t0)
	var nodes []session.Node
	add := func(parent uint64, msgs ...session.Message) {
		var head *session.Node
		for i := range nodes {
			if nodes[i].Seq == parent {
				head = &nodes[i]
			}
		}
		res := session.Append(&m, head, msgs, t0, nil, session.AppendOptions{})
		nodes = append(nodes, res.Nodes...)
	}
	add(0, text(session.RoleUser, "u1"), text(session.RoleAssistant, "a1"))        // 1, 2
	add(2, text(session.RoleUser, "try this"), text(session.RoleAssistant, "no"))  // 3, 4
	add(2, text(session.RoleUser, "try this"), text(session.RoleAssistant, "yes")) // 5, 6: 5 equals 3
	add(6, text(session.RoleUser, "gone"))                                         // 7: reached by nothing
	add(6, text(session.RoleUser, "then"))                                         // 8
	m.Branches = []session.NamedBranch{{Name: "first try", Seq: 4}, {Seq: 4}}
	m.NextSeq = 12
	tree := session.NewTree(nodes)
	m.SetHead(tree.Node(8))
	return m, tree
}

// The share of such a tree carries wc_tree, and reads back as the same
// tree; without it, the same share would read back as another.
func TestShareTree(t *testing.T) {
	m, tree := brTree(t)
	share := session.AppendShare(nil, &m, tree)
	wt := gjson.GetBytes(share, "wc_tree")
	if wt.Get("next_seq").Int() != 12 || wt.Get("messages").Raw != "[1,2,5,6,8]" || wt.Get("branches").Raw != "[[1,2,3,4],[1,2,3,4]]" ||
		wt.Get("nodes.#").Int() != 1 || wt.Get("nodes.0.seq").Int() != 7 || wt.Get("nodes.0.parent").Int() != 6 {
		t.Errorf("wc_tree %s", wt.Raw)
	}
	if err := sessioncheck.Share(&m, tree); err != nil {
		t.Error(err)
	}
	stripped := bytes.Replace(share, []byte(`,"wc_tree":`+wt.Raw), nil, 1)
	sh, err := session.DecodeShare(stripped)
	if err != nil {
		t.Fatal(err)
	}
	m2, nodes := session.FromShare(&sh, testID, t0)
	if bytes.Equal(sessioncheck.TreeLines(&m, tree), sessioncheck.TreeLines(&m2, session.NewTree(nodes))) {
		t.Error("the paths alone read back as the same tree: the test shows nothing")
	}

	// A session the paths give back exactly has no wc_tree.
	plain, plainTree := buildSession(t, "/p", "s", text(session.RoleUser, "a"), text(session.RoleAssistant, "b"))
	if bytes.Contains(session.AppendShare(nil, &plain, plainTree), []byte("wc_tree")) {
		t.Error("wc_tree in a plain session's share")
	}
}

// A wc_tree that does not fit the share's paths is refused.
func TestShareTreeRefused(t *testing.T) {
	m, tree := brTree(t)
	share := string(session.AppendShare(nil, &m, tree))
	for name, edit := range map[string][2]string{
		"a seq short":               {`"messages":[1,2,5,6,8]`, `"messages":[1,2,5,6]`},
		"two messages at one seq":   {`"messages":[1,2,5,6,8]`, `"messages":[1,2,4,6,8]`},
		"a child before its parent": {`"messages":[1,2,5,6,8]`, `"messages":[1,2,5,6,4]`},
		"past next_seq":             {`"next_seq":12`, `"next_seq":8`},
		"a node twice":              {`"nodes":[{"seq":7`, `"nodes":[{"seq":8`},
		"an unknown parent":         {`"parent":6,"message"`, `"parent":11,"message"`},
		"not an object":             {`"wc_tree":{`, `"wc_tree":[],"x":{`},
	} {
		doc := strings.Replace(share, edit[0], edit[1], 1)
		if doc == share {
			t.Fatalf("%s: the edit does not apply", name)
		}
		if _, err := session.DecodeShare([]byte(doc)); err == nil || !isInvalid(err) || !strings.Contains(err.Error(), "wc_tree") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A title_source an older wc stored from an import, which whycodes does not
// have, is written as the one wc infers: the share still loads.
func TestShareOfAnUnknownTitleSource(t *testing.T) {
	m, tree := buildSession(t, "/p", "s", text(session.RoleUser, "please fix the login bug"))
	m.TitleSource = "bogus"
	ws, err := wirecheck.LoadWhycodes(session.AppendShare(nil, &m, tree))
	if err != nil || ws.TitleSource != string(session.TitleGenerated) {
		t.Errorf("%v %+v", err, ws)
	}
}
