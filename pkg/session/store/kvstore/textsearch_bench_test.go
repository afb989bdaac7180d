package kvstore

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// benchVocabulary is about what the benchmark program's generator draws
// prose from, plus identifiers, so that postings are as long as a real
// store's.
var benchVocabulary = strings.Fields(`the a to of and in is it that for this on with be as are not we can
	you if but or at by from will should would could function test handler request response error value
	config file path session store message tool output user assistant token cache index query update list
	append export compact branch budget lock timeout retry parse decode encode buffer stream writer reader
	login auth password migration schema table column row transaction commit rollback fixture golden
	fix bug failing flaky passes build lint format refactor rename extract inline move delete add remove
	handleLogin parseConfig openStore readMeta writeNode TestLogin TestParse café 中文`)

// benchIndexStore writes sessions of messages of about msgBytes each.
func benchIndexStore(b *testing.B, dir string, sessions, messages, msgBytes int) int64 {
	r := rand.New(rand.NewPCG(1, 1))
	st := open(b, dir, Write)
	defer mustClose(b, st)
	var text int64
	for i := range sessions {
		id := testID(uint32(i)*2654435761, i)
		nodes := make([]session.Node, messages)
		for j := range nodes {
			var sb strings.Builder
			for sb.Len() < msgBytes {
				sb.WriteString(benchVocabulary[r.IntN(len(benchVocabulary))])
				sb.WriteByte(" \n."[r.IntN(3)])
			}
			text += int64(sb.Len())
			var parent *session.Node
			if j > 0 {
				parent = &nodes[j-1]
			}
			nodes[j] = session.Child(parent, uint64(j+1), userMsg(sb.String()))
		}
		m := metaFor(id, nodes)
		if err := st.Commit(&m, nodes); err != nil {
			b.Fatal(err)
		}
	}
	return text
}

// BenchmarkIndexAppend is one append in a store of 1,000 indexed
// sessions: with the index (the pending mark, and the folds the writer
// that crosses the bound does), and without it.
func BenchmarkIndexAppend(b *testing.B) {
	for _, indexed := range []bool{true, false} {
		b.Run(fmt.Sprintf("indexed=%v", indexed), func(b *testing.B) {
			dir := b.TempDir()
			benchIndexStore(b, dir, 1000, 5, 1000)
			s := open(b, dir, Write)
			if err := s.foldIndex(true, mergeBytes); err != nil {
				b.Fatal(err)
			}
			indexOff = !indexed
			defer func() { indexOff = false }()
			text := "the login test failed again after the rollback of the migration"
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := appendOne(s, testID(uint32(i%1000)*2654435761, i%1000), text); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			mustClose(b, s)
		})
	}
}

// BenchmarkIndexQuery is a --grep and a --search over 2,000 sessions of
// 10 messages (about 20 MB of text), folded, on a reader's handle.
func BenchmarkIndexQuery(b *testing.B) {
	dir := b.TempDir()
	text := benchIndexStore(b, dir, 2000, 10, 1000)
	w := open(b, dir, Write)
	if err := w.foldIndex(true, mergeBytes); err != nil {
		b.Fatal(err)
	}
	stats, _ := w.IndexStats()
	mustClose(b, w)
	b.Logf("index: %d segments, %d bytes for %d bytes of text (%.1f%%)", stats.Segments, stats.Bytes, text, 100*float64(stats.Bytes)/float64(text))
	s := open(b, dir, Read)
	defer mustClose(b, s)
	for _, q := range []ListQuery{
		{Grep: "login test"}, {Grep: "parseConfig"}, {Grep: "ogi", Limit: 20}, {Grep: "handleLogin café"},
		{Search: `"login test"`, Limit: 20}, {Search: "flaky rollback", Limit: 20}, {Search: "pars*", Limit: 20},
	} {
		b.Run(fmt.Sprintf("grep=%q/search=%q", q.Grep, q.Search), func(b *testing.B) {
			n := 0
			for i := 0; i < b.N; i++ {
				n = 0
				if err := s.ListJSON(q, func([]byte) error { n++; return nil }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n), "sessions")
		})
	}
	b.Run("full-scan/grep=\"login test\"", func(b *testing.B) {
		indexOff = true
		defer func() { indexOff = false }()
		for i := 0; i < b.N; i++ {
			if err := s.ListJSON(ListQuery{Grep: "login test"}, func([]byte) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkIndexRebuild builds the index of 500 sessions of 20 messages
// from scratch: the MB/s are of message text.
func BenchmarkIndexRebuild(b *testing.B) {
	dir := b.TempDir()
	text := benchIndexStore(b, dir, 500, 20, 1000)
	s := open(b, dir, Write)
	defer mustClose(b, s)
	b.SetBytes(text)
	for i := 0; i < b.N; i++ {
		if err := s.eng.Update(func(txn kv.Txn) error { return txn.Delete(manifestKey) }); err != nil {
			b.Fatal(err)
		}
		if err := s.foldIndex(false, mergeBytes); err != nil {
			b.Fatal(err)
		}
	}
}
