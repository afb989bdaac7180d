package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4/options"
	"github.com/wctoolkit/wc/pkg/session"
)

// tablesSize is the size of the store's table files.
func tablesSize(t *testing.T, dir string) int64 {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "db", "*.sst"))
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	for _, name := range names {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		size += fi.Size()
	}
	return size
}

// checkPaths reads every session's path and compares each node with the
// one written, byte for byte.
func checkPaths(t *testing.T, s *Store, want map[string][]session.Node) {
	t.Helper()
	for id, nodes := range want {
		i := 0
		err := s.Path(id, nodes[len(nodes)-1].Seq, func(n *session.Node) error {
			if i >= len(nodes) {
				return fmt.Errorf("more than %d nodes", len(nodes))
			}
			if got, exp := session.EncodeNode(n), session.EncodeNode(&nodes[i]); !bytes.Equal(got, exp) {
				return fmt.Errorf("node %d: %.60s, want %.60s", n.Seq, got, exp)
			}
			i++
			return nil
		})
		if err == nil && i != len(nodes) {
			err = fmt.Errorf("%d nodes, want %d", i, len(nodes))
		}
		if err != nil {
			t.Fatalf("session %s: %v", id, err)
		}
	}
}

// A store whose tables an older wc wrote compressed is read, written and
// merged without a block cache, by readers and writers; merged tables are
// written uncompressed.
func TestCompressedTablesRead(t *testing.T) {
	dir := t.TempDir()
	sessions := map[string][]session.Node{}
	raw := 0
	for i := range 24 {
		nodes := chain(60, 3000) // repetitive text: Snappy shrinks it a lot
		for j := range nodes {
			raw += len(session.EncodeNode(&nodes[j]))
		}
		sessions[testID(uint32(i), i)] = nodes
	}
	tableCompression = options.Snappy
	t.Cleanup(func() { tableCompression = options.None })
	create(t, dir, sessions)
	tableCompression = options.None
	compressed := tablesSize(t, dir)
	if compressed*4 > int64(raw) {
		t.Fatalf("the old tables hold %d bytes for %d of nodes: not compressed", compressed, raw)
	}

	r := open(t, dir, Read)
	checkPaths(t, r, sessions)
	mustClose(t, r)

	// Appends land in level 0; the merge reads the old tables and writes
	// new ones.
	w := open(t, dir, Write)
	checkPaths(t, w, sessions)
	for id := range sessions {
		if err := appendOne(w, id, strings.Repeat("y", 3000)); err != nil {
			t.Fatal(err)
		}
		n, err := w.Node(id, 61)
		if err != nil {
			t.Fatal(err)
		}
		sessions[id] = append(sessions[id], n)
	}
	mustClose(t, w) // the appends' table goes to level 0
	w = open(t, dir, Write)
	if err := w.flatten(); err != nil { // merged with the old tables it overlaps
		t.Fatal(err)
	}
	checkPaths(t, w, sessions)
	if err := w.rebuild(); err != nil { // every table written anew
		t.Fatal(err)
	}
	mustClose(t, w)
	if size := tablesSize(t, dir); size < int64(raw) {
		t.Errorf("the rewritten tables hold %d bytes for %d of nodes: still compressed", size, raw)
	}
	r = open(t, dir, Read)
	defer mustClose(t, r)
	checkPaths(t, r, sessions)
}
