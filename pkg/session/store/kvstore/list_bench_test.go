package kvstore

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/record"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
)

// benchID is session i of listBenchStore: ids spread over the key space
// (and the listing's shards) as random UUIDs do.
func benchID(i int) string { return testID(uint32(i)*2654435761, i) }

// listBenchStore writes n sessions of nodes messages of about 1 KB each,
// whose metadata carries a system prompt of system bytes, and returns the
// store's directory, closed.
func listBenchStore(b *testing.B, n, nodes, system int) string {
	b.Helper()
	dir := b.TempDir()
	s := open(b, dir, Write)
	prompt := strings.Repeat("You are a careful coding agent. ", system/32+1)[:system]
	chainOf := chain(nodes, 1024)
	for i := range n {
		id := benchID(i)
		m := metaFor(id, chainOf)
		m.ProjectPath = fmt.Sprintf("/home/dev/src/project%02d", i%20)
		m.UpdatedAt = fmt.Sprintf("2026-%02d-%02dT%02d:%02d:00Z", 1+i%12, 1+i%28, i%24, i%60)
		m.SetSystemPrompt(prompt)
		if err := s.Commit(&m, chainOf); err != nil {
			b.Fatal(err)
		}
	}
	mustClose(b, s)
	return dir
}

// List (wc-compact --all, and wc-ls before the listing) reads one
// metadata record per session and seeks past its nodes: its cost should
// grow with the number of sessions only, not with what they hold. The variants separate the walk over the key space (nodes) from
// decoding the metadata (system: the prompt lives in it).
func BenchmarkList(b *testing.B) {
	for _, tc := range []struct{ sessions, nodes, system int }{
		{1000, 0, 0},
		{10000, 0, 0},
		{10000, 8, 0},
		{10000, 0, 4096},
	} {
		name := fmt.Sprintf("sessions=%d/nodes=%d/system=%d", tc.sessions, tc.nodes, tc.system)
		b.Run(name, func(b *testing.B) {
			dir := listBenchStore(b, tc.sessions, tc.nodes, tc.system)
			s := open(b, dir, Read)
			defer mustClose(b, s)
			b.ReportAllocs()
			for b.Loop() {
				count := 0
				if err := s.List(func(*session.Meta) error { count++; return nil }); err != nil || count != tc.sessions {
					b.Fatal(count, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tc.sessions), "ns/session")
		})
	}
}

// wc-ls's queries on the listing: the newest 50 seek each of the 256
// shards and read about 50 entries, whatever the store holds; a project
// filter reads entries until 50 match (here 1 in 20); the whole listing
// reads every entry. The stores are those of BenchmarkList, whose full
// metadata scan is what wc-ls did before.
func BenchmarkListInfo(b *testing.B) {
	for _, tc := range []struct{ sessions, nodes int }{{1000, 8}, {10000, 8}} {
		dir := listBenchStore(b, tc.sessions, tc.nodes, 0)
		s := open(b, dir, Read)
		for _, q := range []struct {
			name  string
			query ListQuery
			want  int
		}{
			{"newest-50", ListQuery{Limit: 50}, 50},
			{"project-newest-50", ListQuery{Project: "/home/dev/src/project07", Limit: 50}, 50},
			{"oldest-50", ListQuery{Oldest: true, Limit: 50}, 50},
			{"all", ListQuery{}, tc.sessions},
		} {
			b.Run(fmt.Sprintf("sessions=%d/%s", tc.sessions, q.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					count := 0
					if err := s.ListInfo(q.query, func(*session.Info) error { count++; return nil }); err != nil || count != q.want {
						b.Fatal(count, err)
					}
				}
			})
		}
		mustClose(b, s)
	}
}

// Opening and closing the 10,000-session store, as every wc-ls and
// wc-append pays before it does anything (BenchmarkOpenClose: 100 sessions).
func BenchmarkOpenCloseLarge(b *testing.B) {
	dir := listBenchStore(b, 10000, 8, 0)
	total := 0
	s := open(b, dir, Read)
	total, _ = s.Tables()
	mustClose(b, s)
	for _, mode := range []Mode{Read, Write} {
		name := map[Mode]string{Read: "Read", Write: "Write"}[mode]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				s, err := Open(Options{Dir: dir}, mode)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(total), "tables")
		})
	}
}

// Meta and Node of one session in the 10,000-session store: the two reads
// of every wc-append before its Commit (BenchmarkAppendCommit measures the
// whole append in a store of one session).
func BenchmarkGetInLargeStore(b *testing.B) {
	dir := listBenchStore(b, 10000, 8, 0)
	s := open(b, dir, Read)
	defer mustClose(b, s)
	id := benchID(5000)
	b.Run("Meta", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Meta(id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Node", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Node(id, 8); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Resolve-prefix", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Resolve(id[:8]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Committing a whole session at once, as wc-new --import and wcbench gen do:
// 1,000 nodes of about 2 KB.
func BenchmarkCommitSession(b *testing.B) {
	nodes := chain(1000, 2048)
	size := 0
	for i := range nodes {
		size += len(record.EncodeNode(&nodes[i]))
	}
	dir := b.TempDir()
	s := open(b, dir, Write)
	defer mustClose(b, s)
	b.SetBytes(int64(size))
	i := 0
	for b.Loop() {
		i++
		id := testID(0xc0, i)
		m := metaFor(id, nodes)
		if err := s.Commit(&m, nodes); err != nil {
			b.Fatal(err)
		}
	}
}

// Nodes streams every node of a 20,000-node session (wc-ls --grep, gc and
// share exports read sessions this way; BenchmarkPath covers the path).
func BenchmarkNodes(b *testing.B) {
	dir := b.TempDir()
	id := testID(0xbe9e, 1)
	nodes := chain(20000, 1024)
	create(b, dir, map[string][]session.Node{id: nodes})
	s := open(b, dir, Read)
	defer mustClose(b, s)
	size := 0
	for i := range nodes {
		size += len(record.EncodeNode(&nodes[i]))
	}
	b.SetBytes(int64(size))
	for b.Loop() {
		n := 0
		if err := s.Nodes(id, func(uint64, []byte) error { n++; return nil }); err != nil || n != 20000 {
			b.Fatal(n, err)
		}
	}
}

// What wc-ls -n 50 costs through a warm resident process, besides starting
// the command: dial and take the lock, list, end. The newest sessions come
// from the process's cache after the first run; a project's do not.
func BenchmarkListInfoResident(b *testing.B) {
	dir := listBenchStore(b, 10000, 8, 0)
	serve(b, dir, time.Minute)
	for _, q := range []struct {
		name  string
		query ListQuery
	}{
		{"newest-50", ListQuery{Limit: 50}},
		{"project-newest-50", ListQuery{Project: "/home/dev/src/project07", Limit: 50}},
	} {
		// Alternately with the listing sent with the hello (Ask.Listing,
		// as wc-ls does) and asked after the welcome; each reports its
		// median.
		b.Run(q.name, func(b *testing.B) {
			var took [2][]time.Duration
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				opts := Options{Dir: dir, LockTimeout: time.Second}
				var c *remote.Client
				var err error
				if i%2 == 0 {
					c, err = dialListing(opts, q.query)
				} else {
					c, err = dialStore(opts, Read)
				}
				if err != nil {
					b.Fatal(err)
				}
				count := 0
				if err := c.ListInfo(q.query, func(*session.Info) error { count++; return nil }); err != nil || count != 50 {
					b.Fatal(count, err)
				}
				if err := c.Close(); err != nil {
					b.Fatal(err)
				}
				took[i%2] = append(took[i%2], time.Since(start))
			}
			for i, name := range []string{"with-hello-ns/op", "after-welcome-ns/op"} {
				slices.Sort(took[i])
				if len(took[i]) > 0 {
					b.ReportMetric(float64(took[i][len(took[i])/2]), name)
				}
			}
		})
	}
}
