package kvstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
)

// rawNode is node seq of session id as Badger holds it.
func rawNode(t *testing.T, s *Store, id string, seq uint64) []byte {
	t.Helper()
	key, _ := parseID(id)
	var v []byte
	err := s.eng.View(func(txn kv.Txn) error {
		item, err := txn.Get(nodeKey(key, seq))
		if err == nil {
			v, err = bytes.Clone(item), nil
		}
		return err
	})
	if err != nil {
		t.Fatalf("node %d: %v", seq, err)
	}
	return v
}

// refersTo is the node whose message stored node seq refers to, or 0.
func refersTo(t *testing.T, s *Store, id string, seq uint64) uint64 {
	t.Helper()
	h, _, err := record.DecodeNodeHeader(rawNode(t, s, id, seq))
	if err != nil {
		t.Fatalf("node %d: %v", seq, err)
	}
	return h.Same
}

// rewrite replaces m's path as a compaction does: a new first message, then
// the last keep messages of path, as new nodes hinted at the old ones; the
// old head stays as a branch. It returns the new nodes.
func rewrite(t *testing.T, s Handle, m *session.Meta, path []session.Node, keep int) []session.Node {
	t.Helper()
	msgs := []session.Message{userMsg(fmt.Sprintf("summary of %d", m.Head))}
	for _, n := range path[len(path)-keep:] {
		msgs = append(msgs, n.Msg)
	}
	var nodes []session.Node
	var parent *session.Node
	for _, msg := range msgs {
		nodes = append(nodes, session.Child(parent, m.NextSeq, msg))
		m.NextSeq++
		parent = &nodes[len(nodes)-1]
	}
	session.HintRepeats(nodes, path)
	m.Branches = append(m.Branches, session.NamedBranch{Name: fmt.Sprintf("pre-%d", m.Head), Seq: m.Head})
	m.MoveHead(parent, false)
	if err := s.Commit(m, nodes); err != nil {
		t.Fatal(err)
	}
	return nodes
}

// checkReads compares every way of reading the session with want, the
// nodes of its path, and all with EncodeNode's bytes.
func checkReads(t *testing.T, s *Store, id string, head uint64, want []session.Node) {
	t.Helper()
	for i := range want {
		want[i].Same = 0 // a hint; reads never carry one
	}
	var got []session.Node
	if err := s.Path(id, head, func(n *session.Node) error { got = append(got, *n); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("path:\n got %+v\nwant %+v", got, want)
	}
	bySeq := map[uint64][]byte{}
	if err := s.Nodes(id, func(seq uint64, raw []byte) error { bySeq[seq] = bytes.Clone(raw); return nil }); err != nil {
		t.Fatal(err)
	}
	walked := 0
	if err := s.Walk(id, head, 0, func(n *session.Node) bool {
		walked++
		return reflect.DeepEqual(*n, want[len(want)-walked]) || t.Failed()
	}); err != nil || walked != len(want) {
		t.Errorf("walk: %d nodes, %v", walked, err)
	}
	for _, w := range want {
		n, err := s.Node(id, w.Seq)
		if err != nil || !reflect.DeepEqual(n, w) {
			t.Errorf("node %d: %+v, %v", w.Seq, n, err)
		}
		if !bytes.Equal(bySeq[w.Seq], record.EncodeNode(&w)) {
			t.Errorf("nodes: %d is %s", w.Seq, bySeq[w.Seq])
		}
	}
}

// A rewritten path's kept tail is stored as references to the nodes that
// hold its messages, and reads as if it were copied.
func TestRepeatsStoredOnce(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Write)
	id := testID(1, 1)
	path := chain(10, 200)
	m := metaFor(id, path)
	if err := s.Commit(&m, path); err != nil {
		t.Fatal(err)
	}
	first := rewrite(t, s, &m, path, 6)
	if same := refersTo(t, s, id, first[0].Seq); same != 0 {
		t.Errorf("the new first message refers to %d", same)
	}
	for i, n := range first[1:] {
		if same, want := refersTo(t, s, id, n.Seq), path[4+i].Seq; same != want {
			t.Errorf("node %d refers to %d, want %d", n.Seq, same, want)
		}
	}
	checkReads(t, s, id, m.Head, first)
	checkReads(t, s, id, path[9].Seq, path) // the old path, as a branch

	// Rewriting the rewritten path: references name the nodes holding the
	// messages, never another reference.
	second := rewrite(t, s, &m, first, 3)
	for i, n := range second[1:] {
		if same, want := refersTo(t, s, id, n.Seq), path[7+i].Seq; same != want {
			t.Errorf("second rewrite: node %d refers to %d, want %d", n.Seq, same, want)
		}
	}
	checkReads(t, s, id, m.Head, second)
	// A search reads the nodes holding messages, and skips references.
	for text, want := range map[string]int{"m10 ": 1, "summary of 10": 1, "not said": 0} {
		if got := listInfo(t, s, ListQuery{Grep: text}); len(got) != want {
			t.Errorf("a search for %q found %d sessions", text, len(got))
		}
	}
	mustClose(t, s)

	r := open(t, dir, Read)
	defer mustClose(t, r)
	checkReads(t, r, id, m.Head, second)
	checkReads(t, r, id, first[len(first)-1].Seq, first)
}

// Hints are checked, not trusted: a node is a reference only to a visible
// node before the commit's own that holds the same message.
func TestRepeatsHintsChecked(t *testing.T) {
	s := open(t, t.TempDir(), Write)
	defer mustClose(t, s)
	id := testID(1, 1)
	path := chain(4, 50)
	m := metaFor(id, path)
	if err := s.Commit(&m, path); err != nil {
		t.Fatal(err)
	}
	// A leftover of an interrupted commit at next_seq: invisible, and a
	// later commit may overwrite it.
	key, _ := parseID(id)
	orphan := session.Child(&path[3], m.NextSeq, path[0].Msg)
	if err := s.eng.Update(func(txn kv.Txn) error {
		return txn.Set(nodeKey(key, orphan.Seq), record.EncodeNode(&orphan))
	}); err != nil {
		t.Fatal(err)
	}
	m.NextSeq++
	var nodes []session.Node
	parent := &path[3]
	add := func(msg session.Message, same uint64) {
		n := session.Child(parent, m.NextSeq, msg)
		n.Same = same
		m.NextSeq++
		nodes = append(nodes, n)
		parent = &nodes[len(nodes)-1]
	}
	add(path[0].Msg, 2)               // 6: another message
	add(path[0].Msg, orphan.Seq)      // 7: the orphan's
	add(path[0].Msg, 99)              // 8: no such node
	add(path[0].Msg, 6)               // 9: a node of this very commit (and above next_seq)
	add(userMsg("m1 "+"x"), 1)        // 10: not byte for byte m1
	add(path[1].Msg, path[1].Seq)     // 11: a good hint
	add(path[2].Msg, path[2].Seq+100) // 12: beyond next_seq
	m.MoveHead(parent, false)
	if err := s.Commit(&m, nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		want := uint64(0)
		if n.Seq == 11 {
			want = path[1].Seq
		}
		if got := refersTo(t, s, id, n.Seq); got != want {
			t.Errorf("node %d (hint %d) refers to %d, want %d", n.Seq, n.Same, got, want)
		}
	}
	checkReads(t, s, id, m.Head, append(append([]session.Node(nil), path...), nodes...))
}

// Collect writes a kept reference's message into it before deleting the
// node that held it, and keeps the blobs that message names.
func TestRepeatsCollected(t *testing.T) {
	for _, dryFirst := range []bool{false, true} {
		s := open(t, t.TempDir(), Write)
		id := testID(1, 1)
		path := chain(6, 100)
		data := []byte("spilled output")
		sum := sha256.Sum256(data)
		path[4].Msg = userMsg("see " + session.BlobRefPrefix + hex.EncodeToString(sum[:]))
		for i := 4; i < len(path); i++ {
			path[i] = session.Child(&path[i-1], path[i].Seq, path[i].Msg)
		}
		m := metaFor(id, path)
		if err := s.PutBlob(id, sum, data); err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(&m, path); err != nil {
			t.Fatal(err)
		}
		kept := rewrite(t, s, &m, path, 3)
		m.Branches = nil // the old path goes
		if err := s.Commit(&m, nil); err != nil {
			t.Fatal(err)
		}
		if dryFirst {
			freed, err := s.Collect(&m, true)
			if err != nil || freed.Nodes != len(path) || freed.Blobs != 0 {
				t.Errorf("dry run: %+v, %v", freed, err)
			}
		}
		checked := false
		testHookMaterialized = func() {
			// Nothing deleted yet, and no reference left to what goes.
			checked = true
			for _, n := range kept {
				if same := refersTo(t, s, id, n.Seq); same != 0 {
					t.Errorf("node %d still refers to %d", n.Seq, same)
				}
			}
			if raw := rawNode(t, s, id, path[0].Seq); len(raw) == 0 {
				t.Error("a node went before the references were rewritten")
			}
		}
		freed, err := s.Collect(&m, false)
		testHookMaterialized = nil
		if err != nil || freed.Nodes != len(path) || freed.Blobs != 0 || !checked {
			t.Errorf("collect: %+v, %v (hook ran: %v)", freed, err, checked)
		}
		checkReads(t, s, id, m.Head, kept)
		if got, err := s.Blob(id, sum); err != nil || !bytes.Equal(got, data) {
			t.Errorf("the blob a kept message names: %q, %v", got, err)
		}
		key, _ := parseID(id)
		if err := s.eng.View(func(txn kv.Txn) error {
			_, err := txn.Get(nodeKey(key, path[0].Seq))
			return err
		}); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("the old path's first node: %v", err)
		}
		mustClose(t, s)
	}
}

// The hints cross the socket: a commit through the resident process makes
// references too.
func TestResidentRepeats(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	serve(t, dir, time.Minute)
	w := dial(t, dir, Write)
	id := testID(1, 1)
	path := chain(5, 100)
	m := metaFor(id, path)
	if err := w.Commit(&m, path); err != nil {
		t.Fatal(err)
	}
	kept := rewrite(t, w, &m, path, 3)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Shutdown(dir, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	s := open(t, dir, Read)
	defer mustClose(t, s)
	for i, n := range kept[1:] {
		if same, want := refersTo(t, s, id, n.Seq), path[2+i].Seq; same != want {
			t.Errorf("node %d refers to %d, want %d", n.Seq, same, want)
		}
	}
	checkReads(t, s, id, m.Head, kept)
}

// A hint naming a node that gc removed makes no reference, also when the
// node after it holds the same message.
func TestRepeatsHintToRemovedNode(t *testing.T) {
	s := open(t, t.TempDir(), Write)
	defer mustClose(t, s)
	id := testID(1, 1)
	path := chain(4, 50)
	path[3] = session.Child(&path[2], 4, path[2].Msg) // 3 and 4 hold one message
	m := metaFor(id, path)
	if err := s.Commit(&m, path); err != nil {
		t.Fatal(err)
	}
	key, _ := parseID(id)
	if err := s.eng.Update(func(txn kv.Txn) error { return txn.Delete(nodeKey(key, 3)) }); err != nil {
		t.Fatal(err)
	}
	n := session.Child(&path[1], m.NextSeq, path[2].Msg)
	n.Same = 3
	m.NextSeq++
	m.MoveHead(&n, false)
	if err := s.Commit(&m, []session.Node{n}); err != nil {
		t.Fatal(err)
	}
	if got := refersTo(t, s, id, n.Seq); got != 0 {
		t.Errorf("node %d refers to the removed node 3 (%d)", n.Seq, got)
	}
}

// A reference whose holder is missing, or that names itself or a later
// node, is damage every read reports; none reads another message instead.
func TestRepeatsBrokenReference(t *testing.T) {
	for name, same := range map[string]uint64{"missing": 2, "itself": 4, "later": 5} {
		s := open(t, t.TempDir(), Write)
		id := testID(1, 1)
		path := chain(5, 50)
		m := metaFor(id, path)
		if err := s.Commit(&m, path); err != nil {
			t.Fatal(err)
		}
		key, _ := parseID(id)
		if err := s.eng.Update(func(txn kv.Txn) error {
			if name == "missing" {
				if err := txn.Delete(nodeKey(key, 2)); err != nil {
					return err
				}
			}
			return txn.Set(nodeKey(key, 4), record.EncodeNodeRef(&path[3], same))
		}); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("node 4 refers to node %d", same)
		if _, err := s.Node(id, 4); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: node: %v", name, err)
		}
		err := s.Path(id, 5, func(*session.Node) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "is damaged") {
			t.Errorf("%s: path: %v", name, err)
		}
		if err := s.Nodes(id, func(uint64, []byte) error { return nil }); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: nodes: %v", name, err)
		}
		mustClose(t, s)
	}
}

// Collect leaves alone a reference whose holder stays.
func TestRepeatsKeptHolder(t *testing.T) {
	s := open(t, t.TempDir(), Write)
	defer mustClose(t, s)
	id := testID(1, 1)
	path := chain(5, 50)
	m := metaFor(id, path)
	if err := s.Commit(&m, path); err != nil {
		t.Fatal(err)
	}
	kept := rewrite(t, s, &m, path, 3) // the old path stays as a branch
	// Some garbage, so that the collection does its work.
	key, _ := parseID(id)
	leftover := session.Child(nil, m.NextSeq, userMsg("leftover"))
	if err := s.eng.Update(func(txn kv.Txn) error {
		return txn.Set(nodeKey(key, leftover.Seq), record.EncodeNode(&leftover))
	}); err != nil {
		t.Fatal(err)
	}
	if freed, err := s.Collect(&m, false); err != nil || freed.Nodes != 1 {
		t.Fatalf("collect: %+v, %v", freed, err)
	}
	for i, n := range kept[1:] {
		if same := refersTo(t, s, id, n.Seq); same != path[2+i].Seq {
			t.Errorf("node %d refers to %d after a collection, not %d", n.Seq, same, path[2+i].Seq)
		}
	}
	checkReads(t, s, id, m.Head, kept)
	checkReads(t, s, id, path[4].Seq, path)
}

// References survive the move to schema 4 and a rebuild of the store,
// which copy values as they are.
func TestRepeatsMovedAndRebuilt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := open(t, dir, Write)
	id := testID(1, 1)
	path := chain(6, 100)
	m := metaFor(id, path)
	if err := s.Commit(&m, path); err != nil {
		t.Fatal(err)
	}
	kept := rewrite(t, s, &m, path, 4)
	mustClose(t, s)
	toLegacy(t, dir, 3)

	s = open(t, dir, Write) // moves it
	if err := s.rebuild(); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	r := open(t, dir, Read)
	defer mustClose(t, r)
	for i, n := range kept[1:] {
		if same := refersTo(t, r, id, n.Seq); same != path[2+i].Seq {
			t.Errorf("node %d refers to %d, not %d", n.Seq, same, path[2+i].Seq)
		}
	}
	checkReads(t, r, id, m.Head, kept)
	checkReads(t, r, id, path[5].Seq, path)
}
