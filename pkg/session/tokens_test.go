package session_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
)

func TestEstimateTokens(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
	}{
		{"", 0},
		{"a", 1},
		{"abc", 1},
		{"abcd", 1},
		{"abcde", 2},
		{"abcdefgh", 2},
		{"abcdefghi", 3},
		{strings.Repeat("x", 4000), 1000},
		{strings.Repeat("x", 4001), 1001},
		{"ééééé", 2},                  // 5 chars, 10 bytes: chars count for non-ASCII
		{"é", 1},                      // 1 char
		{"aé", 1},                     // 2 chars, 3 bytes
		{"aaaaé", 2},                  // 5 chars
		{"中文中文中文中文", 2},               // 8 chars, 24 bytes
		{"😀😀😀😀😀", 2},                  // 5 chars, 20 bytes
		{"\n\n\n\n\n", 2},             // whitespace counts
		{strings.Repeat("é", 8), 2},   // 16 bytes, 8 chars
		{strings.Repeat("é", 9), 3},   // 9 chars
		{"abc" + "\u00e9" + "d", 2},   // 5 chars
		{"plain ascii text!", 5},      // 17 bytes
		{"\x00\x01\x02\x03\x04", 2},   // control bytes are ASCII
		{"\xff\xfe\xfd\xfc\xfb", 2},   // invalid UTF-8 counts one char per byte
		{"日本語のテキストです", 3},             // 10 chars
		{"ab\u2028cd", 2},             // 5 chars
		{strings.Repeat("ab", 10), 5}, // 20 bytes
	}
	for _, tc := range cases {
		t.Run(tc.in[:min(len(tc.in), 12)], func(t *testing.T) {
			if got := session.EstimateTokens(tc.in); got != tc.want {
				t.Errorf("EstimateTokens(%q) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}

// The per-message estimate of reference §2.2, one row per content kind.
func TestMessageTokens(t *testing.T) {
	est := session.EstimateTokens
	long := strings.Repeat("word ", 40) // 200 bytes: 50
	cases := []struct {
		name string
		msg  string
		want uint64
	}{
		{"text content", `{"role":"user","content":"` + long + `"}`, 50},
		{"empty text content", `{"role":"user","content":""}`, 0},
		{"text block", `{"role":"user","content":[{"type":"text","text":"` + long + `"}]}`, 50},
		{"toolresult block", `{"role":"user","content":[{"type":"toolresult","tool_use_id":"x","content":"12345678","is_error":null}]}`, 2},
		{"toolresult parts count their text", `{"role":"user","content":[{"type":"toolresult","tool_use_id":"x","content":[{"type":"text","text":"1234"},{"type":"text","text":"5678"}]}]}`, est("1234\n5678")},
		{"tooluse: name plus compact input", `{"role":"assistant","content":[{"type":"tooluse","id":"t","name":"grep","input":{ "pattern" : "x" }}]}`, est("grep") + est(`{"pattern":"x"}`)},
		{"tooluse without input counts {}", `{"role":"assistant","content":[{"type":"tooluse","id":"t","name":"now"}]}`, est("now") + est("{}")},
		{"image is flat", `{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + strings.Repeat("A", 10000) + `"}}]}`, session.ImageTokens},
		{"thinking with signature", `{"role":"assistant","content":[{"type":"thinking","text":"abcdefgh","signature":"abcd"}]}`, 3},
		{"thinking without signature", `{"role":"assistant","content":[{"type":"thinking","text":"abcdefgh"}]}`, 2},
		{"redacted thinking", `{"role":"assistant","content":[{"type":"redacted_thinking","data":"abcdefghijkl"}]}`, 3},
		// Ours: an unknown block is not free; its string members count.
		{"unknown block counts string members", `{"role":"assistant","content":[{"type":"compaction","encrypted_content":"abcdefgh","n":123456789,"obj":{"s":"not counted"}}]}`, 2},
		{"sum over blocks", `{"role":"assistant","content":[{"type":"text","text":"abcd"},{"type":"image","source":{}},{"type":"text","text":"ab"}]}`, 1 + 100 + 1},
		{"no blocks", `{"role":"assistant","content":[]}`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := decode(t, tc.msg)
			if got := session.MessageTokens(&m); got != tc.want {
				t.Errorf("MessageTokens = %d, want %d", got, tc.want)
			}
		})
	}
	if session.ImageTokens != 100 {
		t.Errorf("ImageTokens = %d, reference §2.2 says 100", session.ImageTokens)
	}
}

func TestBlockTokensNilInput(t *testing.T) {
	b := session.Block{Type: session.BlockToolUse, Name: "abcd"}
	if got := session.BlockTokens(&b); got != 2 {
		t.Errorf("got %d", got)
	}
	b.Input = json.RawMessage(`{"k":"abcdefghijklmnopqrstuvwxyz"}`) // 34 bytes: 9
	if got := session.BlockTokens(&b); got != 1+9 {
		t.Errorf("got %d", got)
	}
}

// test_token_count: the count grows with text and with blocks.
func TestTokenCountGrows(t *testing.T) {
	m := session.New(testID, "/p", "", t0)
	var head *session.Node
	last := m.Tokens
	for i, msg := range []session.Message{
		text(session.RoleUser, "hello there"),
		blocks(session.RoleAssistant, session.Block{Type: session.BlockText, Text: "hi"}, toolUse("t", "read", `{"path":"a"}`)),
		toolMsg("t", "contents of a"),
		blocks(session.RoleUser, session.Block{Type: session.BlockImage, Source: json.RawMessage(`{}`)}),
	} {
		res := session.Append(&m, head, []session.Message{msg}, t0, nil, session.AppendOptions{})
		head = &res.Nodes[0]
		if m.Tokens <= last {
			t.Errorf("message %d: tokens %d did not grow from %d", i, m.Tokens, last)
		}
		last = m.Tokens
	}
}

// Child keeps running totals of the path: depth, tokens and user-role
// messages (notes included, as whycodes' user_message_count counts stubs).
func TestChildRunningTotals(t *testing.T) {
	note := text(session.RoleUser, "abcd")
	note.Kind = session.KindNote
	msgs := []session.Message{
		text(session.RoleSystem, "abcdefgh"),      // 2
		text(session.RoleUser, "abcd"),            // 1
		text(session.RoleAssistant, "abcdefghij"), // 3
		note,             // 1
		toolMsg("c", ""), // 0
	}
	want := []session.NodeHeader{
		{Parent: 0, Depth: 1, Tokens: 2, Users: 0},
		{Parent: 10, Depth: 2, Tokens: 3, Users: 1},
		{Parent: 11, Depth: 3, Tokens: 6, Users: 1},
		{Parent: 12, Depth: 4, Tokens: 7, Users: 2},
		{Parent: 13, Depth: 5, Tokens: 7, Users: 2},
	}
	var parent *session.Node
	for i, msg := range msgs {
		n := session.Child(parent, uint64(10+i), msg)
		if n.Seq != uint64(10+i) {
			t.Errorf("node %d: seq %d", i, n.Seq)
		}
		if got := n.Header(); got != want[i] {
			t.Errorf("node %d: %+v, want %+v", i, got, want[i])
		}
		parent = &n
	}
	t.Run("root", func(t *testing.T) {
		n := session.Child(nil, 7, text(session.RoleUser, "abcdefgh"))
		if n.Header() != (session.NodeHeader{Parent: 0, Depth: 1, Tokens: 2, Users: 1}) {
			t.Errorf("%+v", n.Header())
		}
	})
}
