package session_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
)

// Hot paths not in bench_test.go: token counts, the tool-output caps of a
// compaction, and share JSON (wc-new --import, wc-export --format json);
// the store's records are in store/record.

// benchPath is a session of n messages shaped like bench.sh's data: turns
// of a prompt, an assistant step with a tool call and its output, of which
// every third is 8 KB (over the prune cap) and every tenth 40 KB (over the
// 32,768 cap), and a closing answer.
func benchPath(b *testing.B, n int) []session.Message {
	body := func(size int) string {
		return strings.Repeat("     1→func TestLogin(t *testing.T) { if err := login(ctx); err != nil { t.Fatal(err) } }\n", size/90+1)[:size]
	}
	var msgs []session.Message
	for i := 0; len(msgs) < n; i++ {
		size := 700
		switch {
		case i%10 == 0:
			size = 40_000
		case i%3 == 0:
			size = 8_000
		}
		id := fmt.Sprintf("toolu_%04d", i)
		msgs = append(msgs,
			text(session.RoleUser, fmt.Sprintf("turn %d: please run the login tests again", i)),
			blocks(session.RoleAssistant, session.Block{Type: session.BlockText, Text: "Running them."},
				toolUse(id, "bash", `{"command":"go test ./internal/auth/..."}`)),
			session.Message{Role: session.RoleTool, Content: session.TextContent(body(size)), ToolCallID: id, Name: "bash"},
			text(session.RoleAssistant, "They pass now."))
	}
	return msgs[:n]
}

func jsonSize(msgs []session.Message) int64 {
	var size int64
	for i := range msgs {
		size += int64(len(msgs[i].AppendJSON(nil)))
	}
	return size
}

// MessageTokens over a whole path: every compaction and every import
// counts it (EstimateTokens alone is in bench_test.go).
func BenchmarkPathTokens(b *testing.B) {
	msgs := benchPath(b, 1000)
	b.SetBytes(jsonSize(msgs))
	for b.Loop() {
		session.PathTokens("You are terse.", msgs)
	}
}

// The first half of every --max-tokens compaction: cap all tool output at
// 32,768 characters and all but the newest 4 at 2,048, on a copy.
func BenchmarkTruncatePrune(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		msgs := benchPath(b, n)
		work := make([]session.Message, len(msgs))
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			b.SetBytes(jsonSize(msgs))
			b.ReportAllocs()
			for b.Loop() {
				copy(work, msgs)
				if session.TruncateToolResults(work)+session.PruneToolResults(work) == 0 {
					b.Fatal("nothing capped")
				}
			}
		})
	}
}

func BenchmarkCapToolText(b *testing.B) {
	for _, tc := range []struct {
		name string
		s    string
		max  int
	}{
		{"ascii-40KB-to-32K", strings.Repeat("abcdefgh", 5000), session.ToolResultMaxChars},
		{"ascii-40KB-to-2K", strings.Repeat("abcdefgh", 5000), session.ToolResultPruneChars},
		{"utf8-40KB-to-2K", strings.Repeat("     1→abc\n", 3600), session.ToolResultPruneChars},
		{"within-cap", strings.Repeat("abcdefgh", 200), session.ToolResultPruneChars},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.s)))
			for b.Loop() {
				session.CapToolText(tc.s, tc.max)
			}
		})
	}
}

// Share JSON of a 1,000-message session: wc-export --format json writes it,
// wc-new --import native reads it.
func BenchmarkShare(b *testing.B) {
	m, tree := buildSession(b, "/home/dev/src/api-gateway", "You are terse.", benchPath(b, 1000)...)
	raw := session.AppendShare(nil, &m, tree)
	b.Run("Append", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		buf := make([]byte, 0, len(raw))
		for b.Loop() {
			buf = session.AppendShare(buf[:0], &m, tree)
		}
	})
	b.Run("Decode", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := session.DecodeShare(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	sh, err := session.DecodeShare(raw)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("FromShare", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			session.FromShare(&sh, testID, t0)
		}
	})
}

// The local summary of a compacted prefix scans the text of assistant and
// tool messages for paths until its list is full: early when paths are
// mentioned ("paths"), never when none is, so that every message is
// scanned ("no-paths").
func BenchmarkSummarizeTrimmed(b *testing.B) {
	for _, tc := range []struct{ name, line string }{
		{"paths", "     1→see internal/auth/login_%d.go and cmd/api/main.go for the handler\n"},
		{"no-paths", "     1→func TestLogin%d(t *testing.T) { if err := login(ctx); err != nil { t.Fatal(err) } }\n"},
	} {
		var msgs []session.Message
		for i := 0; len(msgs) < 1000; i++ {
			out := strings.Repeat(fmt.Sprintf(tc.line, i), 40)
			msgs = append(msgs,
				text(session.RoleUser, fmt.Sprintf("turn %d: please run the login tests again", i)),
				text(session.RoleAssistant, "Running them: "+out[:200]),
				session.Message{Role: session.RoleTool, Content: session.TextContent(out), ToolCallID: "t", Name: "bash"})
		}
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(jsonSize(msgs))
			for b.Loop() {
				session.SummarizeTrimmed(msgs)
			}
		})
	}
}
