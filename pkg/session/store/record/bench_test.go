package record_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// The records every listing and every append decode (the metadata) and
// every export and compaction (the nodes).

var t0 = time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)

// benchNodes are the messages of pkg/session's BenchmarkDecodeMessage: a
// step of thinking, prose and a tool call, and a mid-sized tool result.
var benchNodes = map[string]string{
	"blocks": `{"role":"assistant","content":[{"type":"thinking","text":"` + strings.Repeat("The handler reads the clock. ", 30) + `","signature":"` + strings.Repeat("EqQB", 50) + `"},` +
		`{"type":"text","text":"Let me read it."},{"type":"tool_use","id":"toolu_01","name":"read","input":{"path":"auth/login_test.go","range":[1,400]},"caller":{"type":"direct"}}],` +
		`"model":"claude-opus-4-6","usage":{"input_tokens":4211,"output_tokens":310},"created_at":"2026-08-21T12:00:00Z"}`,
	"tool": `{"role":"tool","content":"` + strings.Repeat(`func TestLogin(t *testing.T) {\n\tif got := login(\"a\"); got != nil {\n\t\tt.Fatal(got)\n\t}\n}\n`, 60) + `","tool_call_id":"toolu_01","name":"read","created_at":"2026-08-21T12:00:00Z"}`,
}

func benchNode(b *testing.B, name string) session.Node {
	msg, err := session.DecodeMessage([]byte(benchNodes[name]))
	if err != nil {
		b.Fatal(err)
	}
	return session.Child(nil, 1, msg)
}

// benchMeta is a session's metadata as a long-lived session has it.
func benchMeta(system int) session.Meta {
	cacheRead := uint64(1_651_968)
	m := session.New("3f2a9c1e-4b7d-4e2a-9f1c-0123456789ab", "/home/dev/src/api-gateway", strings.Repeat("You are a careful coding agent. ", system/32+1)[:system], t0)
	m.SetTitleManual("fix the flaky login test in internal/auth")
	if err := m.AddUsage(session.Usage{InputTokens: 1_751_428, OutputTokens: 14_600, CacheReadInputTokens: &cacheRead}, t0); err != nil {
		panic(err)
	}
	usd := 1.25
	m.Cost.Add(&usd)
	m.EditStats.Record("apply_patch", "Patched auth/login.go\n[+4 -2]", false)
	m.StreamRules.BeginTurn()
	m.StreamRules.Record("no-sleep-in-tests")
	m.Branches = []session.NamedBranch{{Name: "pre-compact-1", Seq: 412}, {Name: "before-refactor", Seq: 97}}
	m.Head, m.NextSeq, m.MessageCount, m.UserMessageCount, m.Tokens = 530, 531, 420, 31, 88_000
	return m
}

func BenchmarkDecodeMeta(b *testing.B) {
	for _, system := range []int{0, 4096} {
		m := benchMeta(system)
		raw := record.EncodeMeta(&m)
		b.Run(fmt.Sprintf("system=%d", system), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := record.DecodeMeta(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncodeMeta(b *testing.B) {
	for _, system := range []int{0, 4096} {
		m := benchMeta(system)
		b.Run(fmt.Sprintf("system=%d", system), func(b *testing.B) {
			b.SetBytes(int64(len(record.EncodeMeta(&m))))
			b.ReportAllocs()
			for b.Loop() {
				record.EncodeMeta(&m)
			}
		})
	}
}

// A stored node is decoded for every message an export or compaction reads;
// the header alone for every node a path search passes.
func BenchmarkDecodeNode(b *testing.B) {
	for _, name := range []string{"blocks", "tool"} {
		n := benchNode(b, name)
		raw := record.EncodeNode(&n)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := record.DecodeNode(1, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/header", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := record.DecodeNodeHeader(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncodeNode(b *testing.B) {
	for _, name := range []string{"blocks", "tool"} {
		n := benchNode(b, name)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(record.EncodeNode(&n))))
			b.ReportAllocs()
			for b.Loop() {
				record.EncodeNode(&n)
			}
		})
	}
}
