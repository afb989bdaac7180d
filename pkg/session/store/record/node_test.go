package record_test

import (
	"reflect"
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

func TestNodeEncoding(t *testing.T) {
	msg := nodeMessage(t, `{"role":"assistant","content":[{"type":"text","text":"hi \"there\""},{"type":"compaction","encrypted_content":"x"}],"created_at":"2026-08-21T12:00:00Z","model":"m"}`)
	n := session.Node{Seq: 42, Parent: 41, Depth: 7, Tokens: 1234, Users: 3, Msg: msg}
	enc := record.EncodeNode(&n)
	want := `{"parent":41,"n":7,"tok":1234,"users":3,"msg":` + string(msg.AppendJSON(nil)) + `}`
	if string(enc) != want {
		t.Errorf("\n got %s\nwant %s", enc, want)
	}
	h, raw, err := record.DecodeNodeHeader(enc)
	if err != nil || h != n.Header() || string(raw) != string(msg.AppendJSON(nil)) {
		t.Errorf("DecodeNodeHeader = %+v, %s, %v", h, raw, err)
	}
	got, err := record.DecodeNode(42, enc)
	if err != nil || !reflect.DeepEqual(got, n) {
		t.Errorf("DecodeNode = %+v, %v", got, err)
	}
	t.Run("root with zeros", func(t *testing.T) {
		n := session.Node{Seq: 1, Msg: session.Message{Role: session.RoleUser, Content: session.TextContent("")}}
		got, err := record.DecodeNode(1, record.EncodeNode(&n))
		if err != nil || !reflect.DeepEqual(got, n) {
			t.Errorf("%+v %v", got, err)
		}
	})
	bad := []string{
		``,
		`{}`,
		`{"parent":1,"n":2,"tok":3,"users":4}`,
		`{"parent":,"n":2,"tok":3,"users":4,"msg":{"role":"user"}}`,
		`{"parent":1,"n":2,"tok":3,"users":4,"msg":`,
		`{"parent":1,"n":2,"tok":3,"users":4,"msg":}`,
		`{"parent":99999999999999999999,"n":2,"tok":3,"users":4,"msg":{"role":"user"}}`,
		`{"n":2,"parent":1,"tok":3,"users":4,"msg":{"role":"user"}}`,
	}
	for _, b := range bad {
		t.Run("malformed "+b, func(t *testing.T) {
			if _, _, err := record.DecodeNodeHeader([]byte(b)); !isInvalid(err) {
				t.Errorf("err %v", err)
			}
		})
	}
	t.Run("bad message", func(t *testing.T) {
		if _, err := record.DecodeNode(1, []byte(`{"parent":0,"n":1,"tok":0,"users":0,"msg":{"role":"bot"}}`)); !isInvalid(err) {
			t.Errorf("err %v", err)
		}
	})
}

func nodeMessage(t *testing.T, raw string) session.Message {
	m, err := session.DecodeMessage([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
