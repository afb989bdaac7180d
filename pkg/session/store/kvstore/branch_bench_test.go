package kvstore

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
)

// benchNodes reads one session's nodes from the store, as wc-branch's
// tool.SessionNodes does.
type benchNodes struct {
	s  *Store
	id string
}

func (r benchNodes) ReadNode(seq uint64) (session.Node, error) { return r.s.Node(r.id, seq) }

// branchBenchSession commits a session of n messages, 1..n, with a second
// last message n+1 beside n; "a" names n and "b" names n+1. The head is n.
func branchBenchSession(b *testing.B, n int) (*Store, string) {
	b.Helper()
	dir := b.TempDir()
	id := testID(0xb7a9, n)
	nodes := chain(n, 1024)
	alt := session.Child(&nodes[n-2], uint64(n+1), userMsg("the other last message"))
	m := metaFor(id, nodes)
	m.NextSeq = uint64(n + 2)
	m.Branches = []session.NamedBranch{{Name: "a", Seq: uint64(n)}, {Name: "b", Seq: uint64(n + 1)}}
	s := open(b, dir, Write)
	if err := s.Commit(&m, append(nodes, alt)); err != nil {
		b.Fatal(err)
	}
	// Reopen, as every command does, so that the build's writes are settled.
	mustClose(b, s)
	return open(b, dir, Write), id
}

var branchBenchSizes = []int{10, 20000}

// t0Bench is the clock of the benchmarks' commits.
var t0Bench = time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)

// wc-branch mark: read the metadata, name the head, commit the metadata. The
// name is one of eight, dropped first when taken, so that the metadata keeps
// its size whatever b.N. The cost must not depend on the session's length.
func BenchmarkMark(b *testing.B) {
	for _, n := range branchBenchSizes {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			s, id := branchBenchSession(b, n)
			defer mustClose(b, s)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m, err := s.Meta(id)
				if err != nil {
					b.Fatal(err)
				}
				name := "mark-" + strconv.Itoa(i%8)
				_, _ = m.DeleteBranch(name)
				if _, err := m.Mark(name); err != nil {
					b.Fatal(err)
				}
				m.Touch(t0Bench)
				if err := s.Commit(&m, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if m, err := s.Meta(id); err != nil || len(m.Branches) != 2+min(b.N, 8) || m.Head != uint64(n) {
				b.Fatalf("after the marks: %d branches, head %d, %v", len(m.Branches), m.Head, err)
			}
		})
	}
}

// wc-branch switch: read the metadata, resolve the target, read its node,
// move the head, commit the metadata. It goes back and forth between the
// two last messages; both are named, so no unnamed branch piles up. The cost
// must not depend on the session's length.
func BenchmarkSwitch(b *testing.B) {
	for _, n := range branchBenchSizes {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			s, id := branchBenchSession(b, n)
			defer mustClose(b, s)
			reader := benchNodes{s, id}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m, err := s.Meta(id)
				if err != nil {
					b.Fatal(err)
				}
				target := "b"
				if i%2 == 1 {
					target = "a"
				}
				if _, err := session.SwitchTo(&m, reader, target); err != nil {
					b.Fatal(err)
				}
				m.Touch(t0Bench)
				if err := s.Commit(&m, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			m, err := s.Meta(id)
			want := uint64(n)
			if b.N%2 == 1 {
				want = uint64(n + 1)
			}
			if err != nil || m.Head != want || m.MessageCount != uint64(n) || len(m.Branches) != 2 {
				b.Fatalf("after the switches: head %d (want %d), %d messages, %d branches, %v", m.Head, want, m.MessageCount, len(m.Branches), err)
			}
		})
	}
}
