package kvstore

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/render"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// One append (read metadata and head, write one node and the metadata) in an
// open store: the cost must not depend on the session's length.
func BenchmarkAppendCommit(b *testing.B) {
	text := strings.Repeat("y", 1000)
	for _, n := range []int{10, 20000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			id := testID(0xbe9c, n)
			create(b, dir, map[string][]session.Node{id: chain(n, 1024)})
			s := open(b, dir, Write)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := appendOne(s, id, text); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			mustClose(b, s)
		})
	}
}

// Open and Close of a store holding 100 sessions, as every command pays.
func BenchmarkOpenClose(b *testing.B) {
	dir := b.TempDir()
	sessions := map[string][]session.Node{}
	for i := 0; i < 100; i++ {
		sessions[testID(uint32(i), i)] = chain(10, 800)
	}
	create(b, dir, sessions)
	for _, mode := range []Mode{Read, Write} {
		name := map[Mode]string{Read: "Read", Write: "Write"}[mode]
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s, err := Open(Options{Dir: dir}, mode)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Path of a 20,000-node session (what an export streams).
func BenchmarkPath(b *testing.B) {
	dir := b.TempDir()
	id := testID(0xbe9d, 1)
	nodes := chain(20000, 1024)
	create(b, dir, map[string][]session.Node{id: nodes})
	s := open(b, dir, Read)
	defer mustClose(b, s)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := 0
		if err := s.Path(id, 20000, func(*session.Node) error { n++; return nil }); err != nil || n != 20000 {
			b.Fatal(n, err)
		}
	}
}

// exportSession is a 4,000-message session shaped like bench.sh's: tool
// output of code with tabs, quotes and line numbers, assistant prose with
// fenced code and tool calls, thinking, and short prompts.
func exportSession(b *testing.B) (dir, id string, size int64) {
	code := func(i, lines int) string {
		var s strings.Builder
		for l := range lines {
			fmt.Fprintf(&s, "%6d→\tif err := store.Append(ctx, \"session-%d\", msg); err != nil {\n\t\treturn fmt.Errorf(\"append: %%w\", err)\n\t}\n", l+1, i)
		}
		return s.String()
	}
	var msgs []session.Message
	for i := 0; len(msgs) < 4000; i++ {
		id := fmt.Sprintf("toolu_%04d", i)
		msgs = append(msgs,
			session.Message{Role: session.RoleUser, Content: session.TextContent(fmt.Sprintf("turn %d: the login test fails again, see `auth.go`", i))},
			session.Message{Role: session.RoleAssistant, Content: session.BlockContent(
				session.Block{Type: session.BlockThinking, Text: strings.Repeat("The handler reads the clock before the lock. ", 8), Signature: "EqQB", HasSignature: true},
				session.Block{Type: session.BlockText, Text: "Let me read it:\n\n```go\n" + code(i, 3) + "```\n"},
				session.Block{Type: session.BlockToolUse, ID: id, Name: "read", Input: []byte(`{"path":"internal/auth/login.go","limit":400}`)})},
			session.Message{Role: session.RoleTool, Content: session.TextContent(code(i, 10+i%60)), ToolCallID: id, Name: "read"},
			session.Message{Role: session.RoleAssistant, Content: session.TextContent("It passes now: the clock is read under the lock.")})
	}
	nodes := make([]session.Node, len(msgs))
	for i := range msgs {
		var parent *session.Node
		if i > 0 {
			parent = &nodes[i-1]
		}
		nodes[i] = session.Child(parent, uint64(i+1), msgs[i])
		size += int64(len(record.EncodeNode(&nodes[i])))
	}
	dir, id = b.TempDir(), testID(0xbe9e, 1)
	create(b, dir, map[string][]session.Node{id: nodes})
	return dir, id, size
}

// An export to markdown from an open store, as wc-export does it: the path
// read and decoded a batch ahead, each message rendered.
func BenchmarkExportMarkdown(b *testing.B) {
	dir, id, size := exportSession(b)
	s := open(b, dir, Read)
	defer mustClose(b, s)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		mw := render.NewMarkdownWriter(io.Discard)
		if err := s.Path(id, 4000, func(n *session.Node) error { return mw.Message(&n.Msg) }); err != nil {
			b.Fatal(err)
		}
	}
}

// What wc-append costs through a warm resident process, besides starting
// the command: dial and take the lock, resolve, read the metadata and head,
// commit (synced), end; with the reference resolved by the hello, as
// commands do, or by a request of its own (one round trip more).
func BenchmarkAppendResident(b *testing.B) {
	dir := b.TempDir()
	id := testID(0xbe9c, 1)
	create(b, dir, map[string][]session.Node{id: chain(10, 1024)})
	serve(b, dir, time.Minute)
	// The two variants alternate, so that the store's growth and the
	// machine's load weigh on both alike; each reports its median.
	var took [2][]time.Duration
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		withHello := i%2 == 0
		var refs []string
		if withHello {
			refs = []string{id[:8]}
		}
		start := time.Now()
		c, err := dialStore(Options{Dir: dir, LockTimeout: time.Second}, Write, refs...)
		if err != nil {
			b.Fatal(err)
		}
		if got, err := c.Resolve(id[:8]); err != nil || got != id {
			b.Fatal(got, err)
		}
		if err := appendOne(c, id, "fix the login test"); err != nil {
			b.Fatal(err)
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
		took[i%2] = append(took[i%2], time.Since(start))
	}
	for i, name := range []string{"hello-ns/op", "request-ns/op"} {
		slices.Sort(took[i])
		if len(took[i]) > 0 {
			b.ReportMetric(float64(took[i][len(took[i])/2]), name)
		}
	}
}
