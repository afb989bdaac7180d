package record_test

import (
	"slices"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

func TestNodeRef(t *testing.T) {
	root := session.Child(nil, 1, session.Message{Role: session.RoleUser, Content: session.TextContent("hello")})
	target := session.Child(&root, 2, session.Message{Role: session.RoleAssistant, Content: session.TextContent("a \"quoted\" reply")})
	n := session.Child(&root, 9, target.Msg)

	ref := record.EncodeNodeRef(&n, target.Seq)
	h, msg, err := record.DecodeNodeHeader(ref)
	want := session.NodeHeader{Parent: 1, Depth: 2, Tokens: n.Tokens, Users: 1, Same: 2}
	if err != nil || msg != nil || h != want {
		t.Fatalf("header of %s: %+v, %q, %v; want %+v", ref, h, msg, err, want)
	}
	if _, err := record.DecodeNode(n.Seq, ref); err == nil {
		t.Error("DecodeNode read a reference as a node")
	}
	full, err := record.AppendResolvedNodeRef([]byte("kept"), ref, record.EncodeNode(&target))
	if err != nil || string(full) != "kept"+string(record.EncodeNode(&n)) {
		t.Errorf("resolved: %s, %v\nwant %s", full, err, record.EncodeNode(&n))
	}
	if _, err := record.AppendResolvedNodeRef(nil, ref, ref); err == nil {
		t.Error("resolved a reference to a reference")
	}
	if _, err := record.AppendResolvedNodeRef(nil, record.EncodeNode(&n), record.EncodeNode(&target)); err == nil {
		t.Error("resolved a node that is no reference")
	}
	head := `{"parent":1,"n":2,"tok":3,"users":1,`
	for _, bad := range []string{`"same":0}`, `"same":}`, `"same":7}x`, `"same":7,"msg":{}}`, `"same":-7}`, `"same":18446744073709551616}`} {
		if _, _, err := record.DecodeNodeHeader([]byte(head + bad)); err == nil {
			t.Errorf("decoded %s", head+bad)
		}
	}
}

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

// Any stored value decodes or is refused, and a reference resolves to a
// node with its header.
func FuzzDecodeNode(f *testing.F) {
	root := session.Child(nil, 1, session.Message{Role: session.RoleUser, Content: session.TextContent("hi")})
	f.Add(record.EncodeNode(&root))
	f.Add(record.EncodeNodeRef(&root, 3))
	f.Add([]byte(`{"parent":1,"n":2,"tok":3,"users":1,"same":5}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, msg, err := record.DecodeNodeHeader(b)
		if err != nil {
			return
		}
		if h.Same == 0 {
			if n, err := record.DecodeNode(7, b); err == nil {
				back, _, err := record.DecodeNodeHeader(record.EncodeNode(&n))
				if err != nil || back != h {
					t.Errorf("%s: header %+v read back as %+v, %v", b, h, back, err)
				}
			}
			return
		}
		if msg != nil {
			t.Errorf("%s: a reference with a message", b)
		}
		if _, err := record.DecodeNode(7, b); err == nil {
			t.Errorf("%s: DecodeNode read a reference", b)
		}
		full, err := record.AppendResolvedNodeRef(nil, b, record.EncodeNode(&root))
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		n, err := record.DecodeNode(7, full)
		want := h
		want.Same = 0
		if err != nil || n.Header() != want || !n.Msg.SameJSON(&root.Msg) {
			t.Errorf("%s resolved to %s: %+v, %v", b, full, n, err)
		}
	})
}
