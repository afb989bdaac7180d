package kvstore

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
)

// A long path reads on whole after the pages read were released from the
// process (storetest streams it through every handle).
func TestPathAfterPagesReleased(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	id := testID(0x9a7b, 1)
	nodes := chain(3000, 1024) // about 12 batches and 12 chunks
	create(t, dir, map[string][]session.Node{id: nodes})
	check := func(t *testing.T, s *Store) {
		i := 0
		err := s.Path(id, 3000, func(n *session.Node) error {
			if n.Seq != nodes[i].Seq || n.Msg.Content.Text != nodes[i].Msg.Content.Text {
				return fmt.Errorf("node %d of the path is %d", i+1, n.Seq)
			}
			i++
			return nil
		})
		if err != nil || i != 3000 {
			t.Fatalf("path: %d nodes, %v", i, err)
		}
	}
	s := open(t, dir, Read)
	defer mustClose(t, s)
	check(t, s)
	defer func(was int) { releaseEvery = was }(releaseEvery)
	releaseEvery = 64 << 10
	check(t, s)
	if n := s.releasePages(); n == 0 {
		t.Error("no table mapping found to release")
	}
}

// A head whose depth equals its seq makes Path read 1..head in one scan;
// the parents must bear the depth out, or the session is reported damaged
// rather than exported wrong.
func TestPathDepthMustMatchParents(t *testing.T) {
	dir := t.TempDir()
	id := testID(0x9a7c, 1)
	nodes := chain(5, 100)
	nodes[4].Parent = 3 // a forged branch that still claims depth 5
	create(t, dir, map[string][]session.Node{id: nodes})
	s := open(t, dir, Read)
	defer mustClose(t, s)
	var seen []uint64
	err := s.Path(id, 5, func(n *session.Node) error { seen = append(seen, n.Seq); return nil })
	if err == nil || !strings.Contains(err.Error(), "node 5 has parent 3") {
		t.Fatalf("path %v, error %v; want the session reported damaged", seen, err)
	}
}
