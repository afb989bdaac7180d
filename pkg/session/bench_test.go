package session_test

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/render"
)

// benchMessages is a realistic mix: prose, a tool call, a mid-sized tool
// result, thinking with a signature, and provider members we keep.
var benchMessages = map[string]string{
	"text": `{"role":"user","content":"` + strings.Repeat("Please look at the failing login test and explain. ", 20) + `","created_at":"2026-08-21T12:00:00Z"}`,
	"blocks": `{"role":"assistant","content":[{"type":"thinking","text":"` + strings.Repeat("The handler reads the clock. ", 30) + `","signature":"` + strings.Repeat("EqQB", 50) + `"},` +
		`{"type":"text","text":"Let me read it."},{"type":"tool_use","id":"toolu_01","name":"read","input":{"path":"auth/login_test.go","range":[1,400]},"caller":{"type":"direct"}}],` +
		`"model":"claude-opus-4-6","usage":{"input_tokens":4211,"output_tokens":310},"created_at":"2026-08-21T12:00:00Z"}`,
	"tool": `{"role":"tool","content":"` + strings.Repeat(`func TestLogin(t *testing.T) {\n\tif got := login(\"a\"); got != nil {\n\t\tt.Fatal(got)\n\t}\n}\n`, 60) + `","tool_call_id":"toolu_01","name":"read","created_at":"2026-08-21T12:00:00Z"}`,
}

func BenchmarkDecodeMessage(b *testing.B) {
	for _, name := range []string{"text", "blocks", "tool"} {
		raw := []byte(benchMessages[name])
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := session.DecodeMessage(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncodeMessage(b *testing.B) {
	for _, name := range []string{"text", "blocks", "tool"} {
		m := decode(b, benchMessages[name])
		size := len(m.AppendJSON(nil))
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			buf := make([]byte, 0, size)
			for b.Loop() {
				buf = m.AppendJSON(buf[:0])
			}
		})
	}
}

func BenchmarkEstimateTokens(b *testing.B) {
	for _, tc := range []struct{ name, s string }{
		{"ascii-4KiB", strings.Repeat("abcd", 1024)},
		{"utf8-4KiB", strings.Repeat("é", 2048)},
		{"late-non-ascii-4KiB", strings.Repeat("a", 4094) + "é"},
		// Tool output as Claude Code's Read returns it, and prose with accents.
		{"numbered-lines-4KiB", strings.Repeat("    12→\tif err != nil {\n", 160)[:4096]},
		{"prose-accents-4KiB", strings.Repeat("Naïve cache extract after the café update. ", 100)[:4096]},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.s)))
			for b.Loop() {
				session.EstimateTokens(tc.s)
			}
		})
	}
}

func BenchmarkMarkdown(b *testing.B) {
	var msgs []session.Message
	for i := range 250 {
		msgs = append(msgs,
			text(session.RoleUser, fmt.Sprintf("turn %d: please explain `code` and ```fences```", i)),
			decode(b, benchMessages["blocks"]),
			decode(b, benchMessages["tool"]),
			text(session.RoleAssistant, "Done."),
		)
	}
	m, tree := buildSession(b, "/home/u/proj", "sys", msgs...)
	path := tree.Path(m.Head)
	if len(path) != 1000 {
		b.Fatalf("%d messages", len(path))
	}
	var size int64
	cw := &countWriter{}
	mw := render.NewMarkdownWriter(cw)
	_ = mw.Header(&m)
	for _, n := range path {
		_ = mw.Message(&n.Msg)
	}
	size = cw.n
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		mw := render.NewMarkdownWriter(io.Discard)
		if err := mw.Header(&m); err != nil {
			b.Fatal(err)
		}
		for _, n := range path {
			if err := mw.Message(&n.Msg); err != nil {
				b.Fatal(err)
			}
		}
	}
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// Append touches only the head node: its cost is the same for a head at
// depth 10 and at depth 20,000.
func BenchmarkAppend(b *testing.B) {
	batch := []session.Message{
		decode(b, `{"role":"user","content":"please run the tests"}`),
		decode(b, benchMessages["blocks"]),
		decode(b, `{"role":"tool","content":"ok\n[+3 -1]","tool_call_id":"toolu_01"}`),
	}
	lookup := func(string) (string, bool) { return "", false }
	for _, depth := range []uint64{10, 20_000} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			base := session.New(testID, "/home/u/proj", "sys", t0)
			head := session.Node{Seq: depth, Parent: depth - 1, Depth: depth, Tokens: depth * 300, Users: depth / 3,
				Msg: text(session.RoleAssistant, "previous")}
			base.NextSeq = depth + 1
			base.SetHead(&head)
			b.ReportAllocs()
			for b.Loop() {
				m := base
				res := session.Append(&m, &head, batch, t1, lookup, session.AppendOptions{})
				if m.MessageCount != depth+3 || len(res.Nodes) != 3 {
					b.Fatal(m.MessageCount)
				}
			}
		})
	}
}
