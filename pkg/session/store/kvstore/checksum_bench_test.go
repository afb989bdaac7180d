package kvstore

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/render"
	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
)

// BenchmarkChecksums is what verifying every read costs (RELIABILITY.md,
// "A damaged store is refused"): the same operations with every checksum
// check off (verify=off, as before) and on (verify=on), in one run:
//   - append: one appended message in an open store (read the metadata
//     and head, write a node and the metadata);
//   - export: a 4,000-message session to markdown from an open store;
//   - list: the newest 50 of 10,000 sessions;
//   - open: a reader's open and close of the 10,000-session store, whose
//     tables a writer recorded verified;
//   - open-unrecorded: the same with no such record, as after a copy or a
//     restore, when every table is read whole once.
//
// go test ./pkg/session/store -run XXX -bench Checksums -count 6 | benchstat -col /verify
func BenchmarkChecksums(b *testing.B) {
	modes := []struct {
		name   string
		verify bool
	}{{"off", false}, {"on", true}}
	text := strings.Repeat("y", 1000)
	appendDir := b.TempDir()
	appendID := testID(0xbe9c, 3)
	create(b, appendDir, map[string][]session.Node{appendID: chain(2000, 1024)})
	exportDir, exportID, size := exportSession(b)
	listDir := listBenchStore(b, 10000, 8, 0)
	defer func() { badgerkv.VerifyReads = true }()
	for _, m := range modes {
		badgerkv.VerifyReads = m.verify
		b.Run("op=append/verify="+m.name, func(b *testing.B) {
			s := open(b, appendDir, Write)
			defer mustClose(b, s)
			for b.Loop() {
				if err := appendOne(s, appendID, text); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("op=export/verify="+m.name, func(b *testing.B) {
			s := open(b, exportDir, Read)
			defer mustClose(b, s)
			b.SetBytes(size)
			for b.Loop() {
				mw := render.NewMarkdownWriter(io.Discard)
				if err := s.Path(exportID, 4000, func(n *session.Node) error { return mw.Message(&n.Msg) }); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("op=list/verify="+m.name, func(b *testing.B) {
			s := open(b, listDir, Read)
			defer mustClose(b, s)
			for b.Loop() {
				n := 0
				if err := s.ListInfo(ListQuery{Limit: 50}, func(*session.Info) error { n++; return nil }); err != nil || n != 50 {
					b.Fatal(n, err)
				}
			}
		})
		for _, recorded := range []bool{true, false} {
			name := "op=open/verify=" + m.name
			if !recorded {
				name = "op=open-unrecorded/verify=" + m.name
			}
			b.Run(name, func(b *testing.B) {
				lock := filepath.Join(listDir, "lock")
				record, err := os.ReadFile(lock)
				if err != nil {
					b.Fatal(err)
				}
				defer os.WriteFile(lock, record, 0o600)
				for b.Loop() {
					if !recorded {
						if err := os.Truncate(lock, 0); err != nil {
							b.Fatal(err)
						}
					}
					mustClose(b, open(b, listDir, Read))
				}
			})
		}
	}
}
