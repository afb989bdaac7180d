package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
)

// A path longer than many read-ahead batches arrives whole and in order,
// directly and through the resident process, and a callback that stops it
// midway gets its error back and leaves the handle usable.
func TestPathStreams(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	id := testID(0x9a7b, 1)
	nodes := chain(3000, 1024) // about 12 batches and 12 chunks
	create(t, dir, map[string][]session.Node{id: nodes})
	check := func(t *testing.T, h Handle) {
		i := 0
		err := h.Path(id, 3000, func(n *session.Node) error {
			if n.Seq != nodes[i].Seq || n.Parent != nodes[i].Parent || n.Msg.Content.Text != nodes[i].Msg.Content.Text {
				return fmt.Errorf("node %d of the path is %d %q", i+1, n.Seq, n.Msg.Content.Text[:8])
			}
			i++
			return nil
		})
		if err != nil || i != 3000 {
			t.Fatalf("path: %d nodes, %v", i, err)
		}
		stop := errors.New("enough")
		count := 0
		err = h.Path(id, 3000, func(*session.Node) error {
			if count++; count == 1500 {
				return stop
			}
			return nil
		})
		if err != stop || count != 1500 {
			t.Fatalf("stopped path: %d nodes, %v", count, err)
		}
		if m, err := h.Meta(id); err != nil || m.Head != 3000 {
			t.Fatalf("after a stopped path: %+v, %v", m, err)
		}
		count = 0
		if err := h.Path(id, 2000, func(*session.Node) error { count++; return nil }); err != nil || count != 2000 {
			t.Fatalf("path to 2000: %d nodes, %v", count, err)
		}
	}
	t.Run("direct", func(t *testing.T) {
		s := open(t, dir, Read)
		defer mustClose(t, s)
		check(t, s)
		// Reading on after the pages read were released from the process.
		defer func(was int) { releaseEvery = was }(releaseEvery)
		releaseEvery = 64 << 10
		check(t, s)
		if n := s.releasePages(); n == 0 {
			t.Error("no table mapping found to release")
		}
	})
	t.Run("resident", func(t *testing.T) {
		serve(t, dir, time.Minute)
		c := dial(t, dir, Read)
		defer c.Close()
		check(t, c)
	})
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
