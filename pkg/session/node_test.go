package session_test

import (
	"slices"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
)

func TestHintRepeats(t *testing.T) {
	msg := func(s string) session.Message {
		return session.Message{Role: session.RoleUser, Content: session.TextContent(s)}
	}
	var old []session.Node
	for i, s := range []string{"a", "b", "c", "d", "e"} {
		old = append(old, session.Node{Seq: uint64(10 + i), Msg: msg(s)})
	}
	// A summary, then c, a changed d, e: a compaction's path that kept the
	// tail and pruned one message of it.
	var nodes []session.Node
	for i, s := range []string{"summary", "c", "d!", "e"} {
		nodes = append(nodes, session.Node{Seq: uint64(20 + i), Msg: msg(s)})
	}
	session.HintRepeats(nodes, old)
	var got []uint64
	for _, n := range nodes {
		got = append(got, n.Same)
	}
	if want := []uint64{0, 12, 0, 14}; !slices.Equal(got, want) {
		t.Errorf("hints %v, want %v", got, want)
	}
	// A longer new path than the old one is aligned at the end too.
	nodes = []session.Node{{Seq: 30, Msg: msg("x")}, {Seq: 31, Msg: msg("a")}, {Seq: 32, Msg: msg("e")}}
	session.HintRepeats(nodes, old[3:])
	if nodes[0].Same != 0 || nodes[1].Same != 0 || nodes[2].Same != 14 {
		t.Errorf("hints %d %d %d, want 0 0 14", nodes[0].Same, nodes[1].Same, nodes[2].Same)
	}
}
