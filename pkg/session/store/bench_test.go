package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
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
