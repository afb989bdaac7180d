package session_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/wctoolkit/wc/internal/wirecheck/sessioncheck"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/render"
)

var messageSeeds = []string{
	`{"role":"user","content":"hello"}`,
	`{"role":"system","content":"You are terse."}`,
	`{"role":"user","content":[{"type":"text","text":"..."}]}`,
	`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}`,
	`{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}`,
	`{"role":"assistant","content":[{"type":"tooluse","id":"t1","name":"grep","input":{"any":"JSON"}}]}`,
	`{"role":"user","content":[{"type":"toolresult","tool_use_id":"t1","content":"...","is_error":true}]}`,
	`{"role":"user","content":[{"type":"toolresult","tool_use_id":"t1","content":[{"type":"text","text":"a"}],"is_error":null}]}`,
	`{"role":"assistant","content":[{"type":"thinking","text":"...","signature":"..."}]}`,
	`{"role":"assistant","content":[{"type":"redacted_thinking","data":"..."}]}`,
	`{"role":"tool","content":"file body...","tool_call_id":"call-1","created_at":"2026-08-21T12:00:00.123456789+00:00"}`,
	`{"role":"tool","content":"boom","tool_call_id":"c1","name":"bash","is_error":true,"kind":"note"}`,
	`{"role":"assistant","content":[{"type":"compaction","encrypted_content":"gAAAA=="}],"model":"m","usage":{"input_tokens":1}}`,
	`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]}`,
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"x"}]}`,
	`{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"EqQB"}]}`,
	`{"role":"assistant","content":"Let me look.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\": \"a.go\"}"}}]}`,
	`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ"}},"bare"]}`,
	`{"role":"developer","content":"Be brief."}`,
	`{"role":"user","content":"<script>\u2028\ud83d\ude00\u0000"}`,
	`{"role":"robot","content":"x"}`,
	// What providers and whycodes refuse as it is (issue 20's classes).
	`{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}]}`,
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]}]}`,
	`{"role":"tool","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}],"tool_call_id":"t1"}`,
	`{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"file_1"}},{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"}}]}`,
	`{"role":"assistant","content":[{"type":"text","text":"\n\n"},{"type":"tooluse","id":"","name":"","input":"*** Begin Patch"}]}`,
	`{"role":"assistant","content":[{"type":"thinking","text":"plan","encrypted_content":"gAAA"},{"type":"web_search_call","status":"completed"}]}`,
	`{"role":"assistant","content":[{"type":"compaction","x":"\ud800"}],"y":"\udc00"}`,
	`{"role":"assistant","content":[{"type":"tooluse","id":"functions.Bash:0","name":"bash","input":{"x":1e400}}]}`,
	`{"role":"user","content":"a","wc_content":[{"type":"text","text":"b"}]}`,
}

// fixtureMessages returns the small `message` objects of the Claude Code
// fixtures in the repository's testdata; a missing fixture fails.
func fixtureMessages(tb testing.TB) [][]byte {
	tb.Helper()
	files, err := filepath.Glob("../../testdata/fixtures/claude-code/*.jsonl")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no Claude Code fixtures under ../../testdata/fixtures (%v)", err)
	}
	var out [][]byte
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() && len(out) < 60 {
			msg := gjson.GetBytes(sc.Bytes(), "message")
			if msg.IsObject() && len(msg.Raw) <= 2048 {
				out = append(out, []byte(msg.Raw))
			}
		}
		fh.Close()
	}
	return out
}

// checkMessage is the property of FuzzDecodeMessage, also run on every seed
// by plain go test.
func checkMessage(t *testing.T, data []byte) {
	if !gjson.ValidBytes(data) {
		return // DecodeMessage's contract: the caller validates the JSON
	}
	m, err := session.DecodeMessage(data)
	if err != nil {
		if !isInvalid(err) {
			t.Fatalf("error %T %v is not *InvalidError", err, err)
		}
		return
	}
	out := m.AppendJSON(nil)
	if !json.Valid(out) {
		t.Fatalf("AppendJSON wrote invalid JSON:\n in %q\nout %q", data, out)
	}
	if utf8.Valid(data) && !utf8.Valid(out) {
		t.Fatalf("AppendJSON wrote invalid UTF-8:\n in %q\nout %q", data, out)
	}
	m2, err := session.DecodeMessage(out)
	if err != nil {
		t.Fatalf("output does not decode: %v\n in %q\nout %q", err, data, out)
	}
	if out2 := m2.AppendJSON(nil); !bytes.Equal(out, out2) {
		t.Fatalf("not stable after one round:\n in %q\n 1st %q\n 2nd %q", data, out, out2)
	}
	if session.MessageTokens(&m) != session.MessageTokens(&m2) {
		t.Fatal("token estimate changed across a round trip")
	}
	_ = render.NewMarkdownWriter(io.Discard).Message(&m)
	_ = render.ConversationText(io.Discard, &m)
	// Alone, and answering a prompt: the bodies and the share of a path
	// holding it.
	for _, path := range [][]session.Message{{m}, {text(session.RoleUser, "go on"), m}} {
		meta, tree := buildSession(t, "/p", "be brief", path...)
		if err := sessioncheck.Check(&meta, tree); err != nil {
			t.Fatalf("%v\n in %q", err, data)
		}
	}
}

func FuzzDecodeMessage(f *testing.F) {
	for _, s := range messageSeeds {
		f.Add([]byte(s))
	}
	for _, s := range fixtureMessages(f) {
		f.Add(s)
	}
	f.Fuzz(checkMessage)
}

func shareSeeds(tb testing.TB) [][]byte {
	seeds := [][]byte{
		[]byte(`[{"role":"user","content":"please fix it"},{"role":"assistant","content":"ok"}]`),
		[]byte(`{"messages":[]}`),
		[]byte(`{"title":"t","title_source":"manual","messages":[{"role":"user","content":"u"}],"branches":[{"name":"n","messages":[{"role":"user","content":"u"},{"role":"assistant","content":"a"}]},{"messages":[{"role":"user","content":"v"}]}],"cost":{"usd":1.5e-5,"unpriced_steps":1},"stream_rules":{"turn":1,"fired":{"r":1}},"x":[1]}`),
		[]byte(`{"messages":[{"role":"user","content":"a"}],"branches":null,"usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":3},"checkpoint":{"keep_until":0,"goal":"<g>","started_at":"2026-08-21T12:00:00Z"},"forked_from":{"id":"x","seq":1}}`),
		[]byte(`{"title":"t","title_source":"Manual","messages":[{"role":"user","content":"a"}]}`),
		// A tree the paths alone do not give back (see brTree).
		[]byte(`{"title":"t","messages":[{"role":"user","content":"u"},{"role":"assistant","content":"b"}],"branches":[{"messages":[{"role":"user","content":"u"},{"role":"assistant","content":"a"}]}],` +
			`"wc_tree":{"next_seq":9,"messages":[1,5],"branches":[[1,2]],"nodes":[{"seq":3,"parent":2,"message":{"role":"user","content":"x"}}]}}`),
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "whycodes-share.json")); err == nil {
		var buf bytes.Buffer
		if json.Compact(&buf, b) == nil {
			seeds = append(seeds, buf.Bytes())
		}
	}
	return seeds
}

func checkShare(t *testing.T, data []byte) {
	if !gjson.ValidBytes(data) {
		return
	}
	sh, err := session.DecodeShare(data)
	if err != nil {
		if !isInvalid(err) {
			t.Fatalf("error %T %v is not *InvalidError", err, err)
		}
		return
	}
	m, nodes := session.FromShare(&sh, newID, t0)
	tree := session.NewTree(nodes)
	if got := uint64(len(tree.Path(m.Head))); got != m.MessageCount {
		t.Fatalf("MessageCount %d, path has %d", m.MessageCount, got)
	}
	out := session.AppendShare(nil, &m, tree)
	if !json.Valid(out) {
		t.Fatalf("AppendShare wrote invalid JSON:\n in %q\nout %q", data, out)
	}
	sh2, err := session.DecodeShare(out)
	if err != nil {
		t.Fatalf("output does not decode: %v\n in %q\nout %q", err, data, out)
	}
	m2, nodes2 := session.FromShare(&sh2, newID, t0)
	if out2 := session.AppendShare(nil, &m2, session.NewTree(nodes2)); !bytes.Equal(out, out2) {
		t.Fatalf("not stable after one round:\n in %q\n 1st %q\n 2nd %q", data, out, out2)
	}
	if m2.Tokens != m.Tokens || len(nodes2) != len(nodes) {
		t.Fatalf("counts changed: %d/%d tokens, %d/%d nodes", m.Tokens, m2.Tokens, len(nodes), len(nodes2))
	}
	if err := sessioncheck.Check(&m, tree); err != nil {
		t.Fatalf("%v\n in %q", err, data)
	}
}

func FuzzDecodeShare(f *testing.F) {
	for _, s := range shareSeeds(f) {
		f.Add(s)
	}
	for _, s := range messageSeeds[:4] {
		f.Add([]byte(`{"messages":[` + s + `],"branches":[{"messages":[` + s + `,` + s + `]}]}`))
	}
	f.Fuzz(checkShare)
}
