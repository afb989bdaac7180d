package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/pkg/session"
)

// benchSession is n messages in turns of a prompt, a tool call, its output
// (every third 8 KB, the others 700 bytes) and an answer.
func benchSession(n int) []session.Message {
	body := func(size int) string {
		return strings.Repeat("ok  \tgithub.com/acme/api/internal/auth\t0.412s\n", size/46+1)[:size]
	}
	var msgs []session.Message
	for i := 0; len(msgs) < n; i++ {
		size := 700
		if i%3 == 0 {
			size = 8000
		}
		id := fmt.Sprintf("toolu_%04d", i)
		msgs = append(msgs,
			session.Message{Role: session.RoleUser, Content: session.TextContent(fmt.Sprintf("turn %d: run the tests", i))},
			session.Message{Role: session.RoleAssistant, Content: session.BlockContent(
				session.Block{Type: session.BlockText, Text: "Running them."},
				session.Block{Type: session.BlockToolUse, ID: id, Name: "bash", Input: []byte(`{"command":"go test ./..."}`)})},
			session.Message{Role: session.RoleTool, Content: session.TextContent(body(size)), ToolCallID: id, Name: "bash"},
			session.Message{Role: session.RoleAssistant, Content: session.TextContent("They pass.")})
	}
	return msgs[:n]
}

// One session of wc-compact --max-tokens 100000 between reading the path
// and committing: apply the plan, then find the unchanged prefix (which
// encodes every message of both paths).
func BenchmarkCompactSession(b *testing.B) {
	c := &command.Ctx{Now: time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)}
	p := &plan{maxTokens: 100_000, maxChars: 12_000}
	for _, n := range []int{100, 1000, 20000} {
		msgs := benchSession(n)
		var size int64
		for i := range msgs {
			size += int64(len(msgs[i].AppendJSON(nil)))
		}
		m := session.New("3f2a9c1e-4b7d-4e2a-9f1c-0123456789ab", "/home/dev/src/api", "", c.Now)
		m.Tokens = session.PathTokens("", msgs)
		next, _, err := apply(&m, msgs, p, c, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("apply/messages=%d", n), func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := apply(&m, msgs, p, c, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("sharedPrefix/messages=%d", n), func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				sharedPrefix(msgs, next)
			}
		})
		// A session under budget comes back whole: every message is compared.
		same := append([]session.Message(nil), msgs...)
		b.Run(fmt.Sprintf("sharedPrefix-unchanged/messages=%d", n), func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if sharedPrefix(msgs, same) != n {
					b.Fatal("not the same")
				}
			}
		})
	}
}
