package storetest

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// Target is a way of opening the store that the suite tests.
type Target struct {
	// Open opens the store in dir (created by its first Write open) for
	// mode, failing t when it cannot. The suite closes what it opens.
	Open func(t *testing.T, dir string, mode store.Mode) store.Handle
	// Shared: the handle is a client of the resident store process, which
	// serves other commands too and so refuses Purge.
	Shared bool
}

// Run runs the contract of store.Handle over the handles target opens.
func Run(t *testing.T, target Target) {
	h := harness{Target: target}
	for _, c := range []struct {
		name string
		fn   func(*testing.T, harness)
	}{
		{"RoundTrip", testRoundTrip},
		{"LongPath", testLongPath},
		{"Missing", testMissing},
		{"Resolve", testResolve},
		{"CommitRejects", testCommitRejects},
		{"CommitUpdates", testCommitUpdates},
		{"ListOrder", testListOrder},
		{"ListFilters", testListFilters},
		{"ListShard", testListShard},
		{"ListJSON", testListJSON},
		{"Blobs", testBlobs},
		{"Remove", testRemove},
		{"ReadOnly", testReadOnly},
		{"Collect", testCollect},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, h) })
	}
}

type harness struct{ Target }

// with opens the store in dir for mode, runs fn and closes the handle.
func (h harness) with(t *testing.T, dir string, mode store.Mode, fn func(store.Handle)) {
	t.Helper()
	s := h.Open(t, dir, mode)
	fn(s)
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// create commits sessions in one write open.
func (h harness) create(t *testing.T, dir string, metas ...sessionData) {
	t.Helper()
	h.with(t, dir, store.Write, func(s store.Handle) {
		for _, d := range metas {
			m := d.meta
			if err := s.Commit(&m, d.nodes); err != nil {
				t.Fatalf("commit %s: %v", m.ID, err)
			}
		}
	})
}

type sessionData struct {
	meta  session.Meta
	nodes []session.Node
}

// testID is a canonical id whose first 8 hex digits are head.
func testID(head uint32, n int) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", head, n)
}

func userMsg(text string) session.Message {
	return session.Message{Role: session.RoleUser, Content: session.TextContent(text)}
}

// chain is n nodes 1..n, each the child of the one before.
func chain(n int) []session.Node {
	nodes := make([]session.Node, n)
	for i := range nodes {
		var parent *session.Node
		if i > 0 {
			parent = &nodes[i-1]
		}
		nodes[i] = session.Child(parent, uint64(i+1), userMsg(fmt.Sprintf("m%d", i+1)))
	}
	return nodes
}

// branched is the tree 1 -> 2 -> {3 -> 6, 4 -> 5}, in seq order.
func branched() []session.Node {
	nodes := make([]session.Node, 0, 6)
	add := func(parentIdx int, text string) {
		var p *session.Node
		if parentIdx >= 0 {
			p = &nodes[parentIdx]
		}
		nodes = append(nodes, session.Child(p, uint64(len(nodes)+1), userMsg(text)))
	}
	add(-1, "root")
	add(0, "two")
	add(1, "three")
	add(1, "four")
	add(3, "five")
	add(2, "six")
	return nodes
}

const stamp = "2026-01-02T03:04:05Z"

// spilled is a blob, a tool's output stored apart.
var (
	spilled    = []byte("spilled tool output")
	spilledSum = sha256.Sum256(spilled)
)

// data describes session id whose head is the last node.
func data(id string, nodes []session.Node) sessionData {
	m := session.Meta{
		ID: id, Title: "title " + id[:8], TitleSource: session.TitleManual,
		CreatedAt: stamp, UpdatedAt: stamp, NextSeq: 1,
	}
	if len(nodes) > 0 {
		last := nodes[len(nodes)-1]
		m.Head, m.NextSeq = last.Seq, last.Seq+1
		m.MessageCount, m.UserMessageCount, m.Tokens = last.Depth, last.Users, last.Tokens
	}
	return sessionData{meta: m, nodes: nodes}
}

// PathSeqs is the seqs of the path from the root of session id to head.
func PathSeqs(t testing.TB, s store.Handle, id string, head uint64) []uint64 {
	t.Helper()
	var got []uint64
	if err := s.Path(id, head, func(n *session.Node) error {
		got = append(got, n.Seq)
		return nil
	}); err != nil {
		t.Fatalf("path %s@%d: %v", id, head, err)
	}
	return got
}

func listIDs(t *testing.T, s store.Handle, q store.ListQuery) []string {
	t.Helper()
	var ids []string
	if err := s.ListInfo(q, func(in *session.Info) error { ids = append(ids, in.ID); return nil }); err != nil {
		t.Fatalf("list %+v: %v", q, err)
	}
	return ids
}

// What is committed reads back whole: metadata, nodes, paths of every
// branch, raw nodes, walks.
func testRoundTrip(t *testing.T, h harness) {
	dir := t.TempDir()
	tree := branched()
	idTree, idLin, idEmpty := testID(0x11111111, 1), testID(0x22222222, 2), testID(0x33333333, 3)
	want := map[string]session.Meta{}
	var all []sessionData
	for id, nodes := range map[string][]session.Node{idTree: tree, idLin: chain(5), idEmpty: nil} {
		d := data(id, nodes)
		d.meta.Branches = []session.NamedBranch{{Name: "b", Seq: 1}}
		d.meta.Extra = []session.Field{{Key: "turn_context", Value: []byte(`{"a":1}`)}}
		d.meta.ProjectPath = "/src/" + id[:4]
		all = append(all, d)
		want[id] = d.meta
	}
	h.create(t, dir, all...)

	h.with(t, dir, store.Read, func(r store.Handle) {
		for id, w := range want {
			got, err := r.Meta(id)
			if err != nil {
				t.Fatalf("meta %s: %v", id, err)
			}
			got.Revision = 0 // a shared store's mark of the record read
			if !reflect.DeepEqual(got, w) {
				t.Errorf("meta %s:\n got %+v\nwant %+v", id, got, w)
			}
		}
		for _, w := range tree {
			got, err := r.Node(idTree, w.Seq)
			if err != nil {
				t.Fatalf("node %d: %v", w.Seq, err)
			}
			if got.Seq != w.Seq || got.Header() != w.Header() || got.Msg.Content.Text != w.Msg.Content.Text {
				t.Errorf("node %d = %+v, want %+v", w.Seq, got, w)
			}
		}
		for head, w := range map[uint64][]uint64{5: {1, 2, 4, 5}, 6: {1, 2, 3, 6}, 3: {1, 2, 3}, 1: {1}, 0: nil} {
			if got := PathSeqs(t, r, idTree, head); !slices.Equal(got, w) {
				t.Errorf("path to %d = %v, want %v", head, got, w)
			}
		}
		if got := PathSeqs(t, r, idLin, 5); !slices.Equal(got, []uint64{1, 2, 3, 4, 5}) {
			t.Errorf("linear path = %v", got)
		}
		var texts []string
		if err := r.Path(idTree, 5, func(n *session.Node) error {
			texts = append(texts, n.Msg.Content.Text)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if w := []string{"root", "two", "four", "five"}; !slices.Equal(texts, w) {
			t.Errorf("path texts = %v, want %v", texts, w)
		}
		stop := errors.New("stop")
		if err := r.Path(idTree, 5, func(*session.Node) error { return stop }); err != stop {
			t.Errorf("Path returned %v, want the callback's error", err)
		}
		// The handle is still usable after a stopped path.
		if m, err := r.Meta(idTree); err != nil || m.Head != 6 {
			t.Errorf("meta after a stopped path: head %d, %v", m.Head, err)
		}

		var seqs []uint64
		if err := r.Nodes(idTree, func(seq uint64, raw []byte) error {
			n, err := record.DecodeNode(seq, raw)
			if err != nil {
				return err
			}
			if n.Parent != tree[seq-1].Parent || n.Msg.Content.Text != tree[seq-1].Msg.Content.Text {
				t.Errorf("raw node %d = parent %d %q, want %d %q", seq, n.Parent, n.Msg.Content.Text, tree[seq-1].Parent, tree[seq-1].Msg.Content.Text)
			}
			seqs = append(seqs, seq)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seqs, []uint64{1, 2, 3, 4, 5, 6}) {
			t.Errorf("Nodes = %v", seqs)
		}

		walk := func(from uint64, max int, fn func(*session.Node) bool) []uint64 {
			var walked []uint64
			if err := r.Walk(idTree, from, max, func(n *session.Node) bool { walked = append(walked, n.Seq); return fn(n) }); err != nil {
				t.Fatalf("walk from %d: %v", from, err)
			}
			return walked
		}
		all := func(*session.Node) bool { return true }
		if got := walk(5, 0, all); !slices.Equal(got, []uint64{5, 4, 2, 1}) {
			t.Errorf("Walk = %v", got)
		}
		if got := walk(6, 2, all); !slices.Equal(got, []uint64{6, 3}) {
			t.Errorf("Walk max 2 = %v", got)
		}
		if got := walk(6, 0, func(n *session.Node) bool { return n.Seq != 2 }); !slices.Equal(got, []uint64{6, 3, 2}) {
			t.Errorf("Walk stopped by fn = %v", got)
		}

		listed := listIDs(t, r, store.ListQuery{})
		slices.Sort(listed)
		if w := []string{idTree, idLin, idEmpty}; !slices.Equal(listed, w) {
			t.Errorf("listed %v, want %v", listed, w)
		}
	})
}

// A path longer than many read-ahead batches arrives whole and in order,
// and a callback that stops it midway gets its error back and leaves the
// handle usable.
func testLongPath(t *testing.T, h harness) {
	dir := t.TempDir()
	id := testID(0x9a7b, 1)
	const n = 3000
	nodes := make([]session.Node, n)
	pad := strings.Repeat("x", 1000) // about 12 batches and 12 chunks
	for i := range nodes {
		var parent *session.Node
		if i > 0 {
			parent = &nodes[i-1]
		}
		nodes[i] = session.Child(parent, uint64(i+1), userMsg(fmt.Sprintf("m%d %s", i+1, pad)))
	}
	h.create(t, dir, data(id, nodes))
	h.with(t, dir, store.Read, func(r store.Handle) {
		i := 0
		err := r.Path(id, n, func(got *session.Node) error {
			if got.Seq != nodes[i].Seq || got.Parent != nodes[i].Parent || got.Msg.Content.Text != nodes[i].Msg.Content.Text {
				return fmt.Errorf("node %d of the path is %d %q", i+1, got.Seq, got.Msg.Content.Text[:8])
			}
			i++
			return nil
		})
		if err != nil || i != n {
			t.Fatalf("path: %d nodes, %v", i, err)
		}
		stop := errors.New("enough")
		count := 0
		err = r.Path(id, n, func(*session.Node) error {
			if count++; count == n/2 {
				return stop
			}
			return nil
		})
		if err != stop || count != n/2 {
			t.Fatalf("stopped path: %d nodes, %v", count, err)
		}
		if m, err := r.Meta(id); err != nil || m.Head != n {
			t.Fatalf("after a stopped path: %+v, %v", m, err)
		}
		count = 0
		if err := r.Path(id, 2000, func(*session.Node) error { count++; return nil }); err != nil || count != 2000 {
			t.Fatalf("path to 2000: %d nodes, %v", count, err)
		}
	})
}

// Whatever names nothing is store.ErrNotFound, with the text commands print.
func testMissing(t *testing.T, h harness) {
	dir := t.TempDir()
	id, absent := testID(0x11111111, 1), testID(0x44444444, 4)
	h.create(t, dir, data(id, branched()))
	h.with(t, dir, store.Read, func(r store.Handle) {
		for name, err := range map[string]error{
			"node past the end": func() error { _, err := r.Node(id, 7); return err }(),
			"node 0":            func() error { _, err := r.Node(id, 0); return err }(),
			"path past the end": r.Path(id, 7, func(*session.Node) error { return nil }),
			"walk past the end": r.Walk(id, 9, 0, func(*session.Node) bool { return true }),
			"meta":              func() error { _, err := r.Meta(absent); return err }(),
			"nodes":             r.Nodes(absent, func(uint64, []byte) error { return nil }),
			"resolve":           func() error { _, err := r.Resolve(absent); return err }(),
		} {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: %v, want ErrNotFound", name, err)
			}
		}
		if _, err := r.Node(id, 7); err == nil || err.Error() != "node 7 not found in session "+id {
			t.Errorf("missing node: %v", err)
		}
		if _, err := r.Meta(absent); err == nil || err.Error() != "session "+absent+" not found" {
			t.Errorf("missing session: %v", err)
		}
	})
}

// A reference is a full id in any case, with or without dashes, or a prefix
// of at least store.MinPrefix digits naming one session.
func testResolve(t *testing.T, h harness) {
	dir := t.TempDir()
	a := "abcd1234-0000-4000-8000-000000000001"
	b := "abcd1234-0000-4000-8000-000000000002"
	c := "abce0000-0000-4000-8000-000000000003"
	d := "abcd2000-0000-4000-8000-000000000004"
	h.create(t, dir, data(a, chain(3)), data(b, nil), data(c, chain(1)), data(d, nil))
	h.with(t, dir, store.Read, func(s store.Handle) {
		for ref, want := range map[string]string{
			a:                              a,
			strings.ToUpper(a):             a,
			strings.ReplaceAll(a, "-", ""): a,
			"abce":                         c,
			"ABCE0":                        c,
			"abcd-2":                       d,
			"abcd2":                        d,
			b:                              b,
		} {
			got, err := s.Resolve(ref)
			if err != nil || got != want {
				t.Errorf("Resolve(%q) = %q, %v; want %q", ref, got, err, want)
			}
		}
		for ref, msg := range map[string]string{
			"abcd1": "session prefix abcd1 is ambiguous (2 sessions match)",
			"abcd":  "session prefix abcd is ambiguous (3 sessions match)",
		} {
			if _, err := s.Resolve(ref); !errors.Is(err, store.ErrAmbiguous) || err.Error() != msg {
				t.Errorf("Resolve(%s) = %v, want %q", ref, err, msg)
			}
		}
		if _, err := s.Resolve("abcd1234-0000-4000-8000-00000000000"); !errors.Is(err, store.ErrAmbiguous) { // 31 digits
			t.Errorf("Resolve(31 digits) = %v", err)
		}
		for _, ref := range []string{"ffff", "abcf", "abcd3", "ffffffff-0000-4000-8000-000000000001"} {
			if _, err := s.Resolve(ref); !errors.Is(err, store.ErrNotFound) || err.Error() != "session "+ref+" not found" {
				t.Errorf("Resolve(%q) = %v, want not found", ref, err)
			}
		}
		for _, ref := range []string{"", "abc", "ab-c", "abcg", "zzzz", "abcd12340000400080000000000000001", "abcd 1234"} {
			_, err := s.Resolve(ref)
			var re *store.RefError
			if !errors.As(err, &re) || err.Error() != "invalid session reference "+ref {
				t.Errorf("Resolve(%q) = %v, want a RefError", ref, err)
			}
		}
	})
}

// A commit whose metadata contradicts its nodes or names no id writes
// nothing.
func testCommitRejects(t *testing.T, h harness) {
	id := testID(0xabcdef07, 7)
	nodes := chain(3)
	h.with(t, t.TempDir(), store.Write, func(w store.Handle) {
		for name, change := range map[string]func(m *session.Meta){
			"uppercase id": func(m *session.Meta) { m.ID = strings.ToUpper(id) },
			"seq >= next":  func(m *session.Meta) { m.NextSeq, m.Head = 3, 2 },
			"head >= next": func(m *session.Meta) { m.Head = 9 },
			"not an id":    func(m *session.Meta) { m.ID = "hello" },
		} {
			m := data(id, nodes).meta
			change(&m)
			if err := w.Commit(&m, nodes); err == nil {
				t.Errorf("%s: Commit succeeded", name)
			}
		}
		if _, err := w.Meta(id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a rejected commit wrote something: %v", err)
		}
	})
}

// Later commits append nodes, move the head, and replace the metadata
// (title, branches), in the same open and across opens.
func testCommitUpdates(t *testing.T, h harness) {
	dir := t.TempDir()
	id := testID(0x5e550001, 1)
	nodes := chain(3)
	h.create(t, dir, data(id, nodes))
	more := []session.Node{session.Child(&nodes[1], 4, userMsg("fork"))}
	h.with(t, dir, store.Write, func(w store.Handle) {
		m, err := w.Meta(id)
		if err != nil {
			t.Fatal(err)
		}
		m.Head, m.NextSeq, m.Title = 4, 5, "renamed"
		m.Branches = []session.NamedBranch{{Name: "main", Seq: 3}}
		if err := w.Commit(&m, more); err != nil {
			t.Fatal(err)
		}
		if got := PathSeqs(t, w, id, 4); !slices.Equal(got, []uint64{1, 2, 4}) {
			t.Errorf("path in the writer = %v", got)
		}
		// Metadata alone: the branch is renamed, no node is added.
		m.Branches = []session.NamedBranch{{Name: "trunk", Seq: 3}}
		if err := w.Commit(&m, nil); err != nil {
			t.Fatal(err)
		}
	})
	h.with(t, dir, store.Read, func(r store.Handle) {
		m, err := r.Meta(id)
		if err != nil {
			t.Fatal(err)
		}
		if m.Head != 4 || m.NextSeq != 5 || m.Title != "renamed" || !slices.Equal(m.Branches, []session.NamedBranch{{Name: "trunk", Seq: 3}}) {
			t.Errorf("meta after updates: %+v", m)
		}
		if got := PathSeqs(t, r, id, 3); !slices.Equal(got, []uint64{1, 2, 3}) {
			t.Errorf("old branch path = %v", got)
		}
		if got := PathSeqs(t, r, id, 4); !slices.Equal(got, []uint64{1, 2, 4}) {
			t.Errorf("new branch path = %v", got)
		}
		if n, err := r.Node(id, 4); err != nil || n.Msg.Content.Text != "fork" || n.Parent != 2 {
			t.Errorf("node 4 = %+v, %v", n, err)
		}
		var infos []session.Info
		if err := r.ListInfo(store.ListQuery{}, func(in *session.Info) error { infos = append(infos, *in); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(infos) != 1 || infos[0].Title != "renamed" || infos[0].Head != 4 || infos[0].Branches != 1 {
			t.Errorf("listing after updates: %+v", infos)
		}
	})
}

// timed is session n updated at minute n of the day.
func timed(n int, project, title string) sessionData {
	d := data(testID(0x7100_0000+uint32(n), n), chain(1))
	d.meta.UpdatedAt = time.Date(2026, 3, 4, 10, n, 0, 0, time.UTC).Format(time.RFC3339)
	d.meta.ProjectPath, d.meta.Title = project, title
	return d
}

// listing is a query and the sessions it lists, in order.
type listing struct {
	q    store.ListQuery
	want []string
}

// checkListings runs each query on the store in dir.
func (h harness) checkListings(t *testing.T, dir string, cases []listing) {
	t.Helper()
	h.with(t, dir, store.Read, func(r store.Handle) {
		for _, c := range cases {
			if got := listIDs(t, r, c.q); !slices.Equal(got, c.want) {
				t.Errorf("list %+v = %v, want %v", c.q, got, c.want)
			}
		}
	})
}

func at(n int) time.Time { return time.Date(2026, 3, 4, 10, n, 0, 0, time.UTC) }

// Listings come most recently updated first (Oldest: last), ties in id
// order, cut at Limit.
func testListOrder(t *testing.T, h harness) {
	dir := t.TempDir()
	s1, s2, s3 := timed(1, "/a", "one"), timed(2, "/a", "two"), timed(3, "/a", "three")
	tie := timed(2, "/a", "tie") // updated with s2; its id sorts after s2's
	tie.meta.ID = testID(0x7200_0000, 9)
	h.create(t, dir, s3, tie, s1, s2)
	id := func(d sessionData) string { return d.meta.ID }
	h.checkListings(t, dir, []listing{
		{store.ListQuery{}, []string{id(s3), id(s2), id(tie), id(s1)}},
		{store.ListQuery{Oldest: true}, []string{id(s1), id(s2), id(tie), id(s3)}},
		{store.ListQuery{Limit: 2}, []string{id(s3), id(s2)}},
		{store.ListQuery{Oldest: true, Limit: 1}, []string{id(s1)}},
	})
}

// Project, Title (Fold), Grep, Since and Until select sessions.
func testListFilters(t *testing.T, h harness) {
	dir := t.TempDir()
	s1, s2, s3, s4 := timed(1, "/src/app", "Fix the Build"), timed(2, "/src/app/sub", "refactor"), timed(3, "/src/apple", "build docs"), timed(4, "/home", "notes")
	s4.nodes = []session.Node{session.Child(nil, 1, userMsg("the needle is here"))}
	h.create(t, dir, s1, s2, s3, s4)
	id := func(d sessionData) string { return d.meta.ID }
	h.checkListings(t, dir, []listing{
		{store.ListQuery{Project: "/src/app"}, []string{id(s2), id(s1)}},
		{store.ListQuery{Project: "/"}, []string{id(s4), id(s3), id(s2), id(s1)}},
		{store.ListQuery{Project: "/nowhere"}, nil},
		{store.ListQuery{Title: "build"}, []string{id(s3)}},
		{store.ListQuery{Title: "build", Fold: true}, []string{id(s3), id(s1)}},
		{store.ListQuery{Grep: "needle"}, []string{id(s4)}},
		{store.ListQuery{Grep: "NEEDLE", Fold: true}, []string{id(s4)}},
		{store.ListQuery{Grep: "NEEDLE"}, nil},
		{store.ListQuery{Since: at(2)}, []string{id(s4), id(s3), id(s2)}},
		{store.ListQuery{Until: at(2)}, []string{id(s1)}},
		{store.ListQuery{Since: at(2), Until: at(4)}, []string{id(s3), id(s2)}},
		{store.ListQuery{Project: "/src", Since: at(2), Limit: 1}, []string{id(s3)}},
	})
}

// Shard keeps the sessions of one part, with the other filters and before
// Limit; for a given Count the parts are disjoint and cover the store.
func testListShard(t *testing.T, h harness) {
	dir := t.TempDir()
	var ds []sessionData
	for n := 1; n <= 12; n++ {
		ds = append(ds, timed(n, []string{"/a", "/b"}[n%2], fmt.Sprint("s", n)))
	}
	h.create(t, dir, ds...)
	var all []string // newest first
	project := map[string]string{}
	for _, d := range slices.Backward(ds) {
		all = append(all, d.meta.ID)
		project[d.meta.ID] = d.meta.ProjectPath
	}
	part := func(i, n int, keep func(id string) bool) []string {
		var ids []string
		for _, id := range all {
			sid, err := store.ParseID(id)
			if err != nil {
				t.Fatal(err)
			}
			if store.ShardNumber(sid, n) == i && keep(id) {
				ids = append(ids, id)
			}
		}
		return ids
	}
	any := func(string) bool { return true }
	inB := func(id string) bool { return project[id] == "/b" }
	sh := func(i, n int) store.Shard { return store.Shard{Index: i, Count: n} }
	cases := []listing{
		{store.ListQuery{}, all}, // fills a resident process's cache first
		{store.ListQuery{Shard: sh(1, 1)}, all},
	}
	for i := 1; i <= 3; i++ {
		p := part(i, 3, any)
		if len(p) == 0 || len(p) == len(all) {
			t.Fatalf("part %d of 3 holds %d of %d sessions: pick other ids", i, len(p), len(all))
		}
		oldest := slices.Clone(p)
		slices.Reverse(oldest)
		cases = append(cases,
			listing{store.ListQuery{Shard: sh(i, 3)}, p},
			listing{store.ListQuery{Shard: sh(i, 3), Limit: 1}, p[:1]},
			listing{store.ListQuery{Shard: sh(i, 3), Oldest: true, Limit: 2}, oldest[:min(2, len(oldest))]},
			listing{store.ListQuery{Shard: sh(i, 3), Project: "/b"}, part(i, 3, inB)},
			listing{store.ListQuery{Shard: sh(i, 3), Since: at(7)}, part(i, 3, func(id string) bool { return slices.Index(all, id) < 6 })},
		)
	}
	h.checkListings(t, dir, cases)
	// Disjoint and covering, for another N.
	h.with(t, dir, store.Read, func(r store.Handle) {
		var union []string
		for i := 1; i <= 4; i++ {
			union = append(union, listIDs(t, r, store.ListQuery{Shard: sh(i, 4)})...)
		}
		slices.Sort(union)
		want := slices.Sorted(slices.Values(all))
		if !slices.Equal(union, want) {
			t.Errorf("the 4 parts list %v, want each of %v once", union, want)
		}
	})
}

// ListJSON gives each session's summary as JSON that decodes to what
// ListInfo gives, in the same order.
func testListJSON(t *testing.T, h harness) {
	dir := t.TempDir()
	s1, s2 := timed(1, "/a", "one"), timed(2, "/b", `quote " and \ slash`)
	h.create(t, dir, s1, s2)
	h.with(t, dir, store.Read, func(r store.Handle) {
		var want []session.Info
		if err := r.ListInfo(store.ListQuery{}, func(in *session.Info) error { want = append(want, *in); return nil }); err != nil {
			t.Fatal(err)
		}
		var got []session.Info
		if err := r.ListJSON(store.ListQuery{}, func(line []byte) error {
			var in session.Info
			if err := json.Unmarshal(line, &in); err != nil {
				return fmt.Errorf("line %s: %v", line, err)
			}
			got = append(got, in)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || !reflect.DeepEqual(got, want) {
			t.Errorf("ListJSON = %+v, want %+v", got, want)
		}
		if got[0].ID != s2.meta.ID || got[0].Title != s2.meta.Title || got[0].ProjectPath != "/b" {
			t.Errorf("first line %+v, want session %s", got[0], s2.meta.ID)
		}
	})
}

// Blobs are stored per session under their checksum.
func testBlobs(t *testing.T, h harness) {
	dir := t.TempDir()
	a, b := testID(1, 1), testID(2, 2)
	h.create(t, dir, data(a, chain(1)), data(b, chain(1)))
	blob, sum := spilled, spilledSum
	h.with(t, dir, store.Write, func(w store.Handle) {
		if err := w.PutBlob(a, sum, blob); err != nil {
			t.Fatal(err)
		}
		if err := w.PutBlob(a, sha256.Sum256([]byte("other")), blob); err == nil {
			t.Error("PutBlob accepted a wrong checksum")
		}
		if got, err := w.Blob(a, sum); err != nil || string(got) != string(blob) {
			t.Errorf("Blob in the writer = %q, %v", got, err)
		}
	})
	h.with(t, dir, store.Read, func(r store.Handle) {
		if got, err := r.Blob(a, sum); err != nil || string(got) != string(blob) {
			t.Errorf("Blob = %q, %v", got, err)
		}
		if _, err := r.Blob(a, sha256.Sum256([]byte("x"))); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("missing blob: %v", err)
		}
		if _, err := r.Blob(b, sum); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("another session's blob: %v", err)
		}
	})
}

// A removed session is gone for every reader, its blobs with it; others
// stay whole, also after a purge.
func testRemove(t *testing.T, h harness) {
	dir := t.TempDir()
	keep, gone := testID(1, 1), testID(2, 2)
	h.create(t, dir, data(keep, chain(4)), data(gone, chain(4)))
	blob, sum := spilled, spilledSum
	h.with(t, dir, store.Write, func(w store.Handle) {
		rm, ok := w.(store.Remover)
		if !ok {
			t.Fatalf("%T is not a store.Remover", w)
		}
		for _, id := range []string{keep, gone} {
			if err := w.PutBlob(id, sum, blob); err != nil {
				t.Fatal(err)
			}
		}
		if err := rm.DeleteSession(gone); err != nil {
			t.Fatal(err)
		}
		if err := rm.DeleteSession(gone); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
		if _, err := w.Resolve(gone[:8]); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("resolve of the removed session in the writer: %v", err)
		}
	})
	check := func(r store.Handle) {
		if _, err := r.Meta(gone); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("removed meta: %v", err)
		}
		if _, err := r.Blob(gone, sum); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("removed blob: %v", err)
		}
		if err := r.Nodes(gone, func(uint64, []byte) error { return nil }); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("removed nodes: %v", err)
		}
		if _, err := r.Resolve(gone); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("resolve of the removed session: %v", err)
		}
		if got := listIDs(t, r, store.ListQuery{}); !slices.Equal(got, []string{keep}) {
			t.Errorf("listed %v, want only %s", got, keep)
		}
		if got := PathSeqs(t, r, keep, 4); !slices.Equal(got, []uint64{1, 2, 3, 4}) {
			t.Errorf("kept path = %v", got)
		}
		if got, err := r.Blob(keep, sum); err != nil || string(got) != string(blob) {
			t.Errorf("kept blob = %q, %v", got, err)
		}
	}
	h.with(t, dir, store.Read, check)
	h.with(t, dir, store.Write, func(w store.Handle) {
		err := w.(store.Remover).Purge()
		switch {
		case h.Shared && (err == nil || !strings.Contains(err.Error(), "needs the store to itself")):
			t.Errorf("purge through the resident store process: %v, want it refused", err)
		case !h.Shared && err != nil:
			t.Fatalf("purge: %v", err)
		}
	})
	h.with(t, dir, store.Read, check)
}

// A handle opened for reading refuses every write and changes nothing.
func testReadOnly(t *testing.T, h harness) {
	dir := t.TempDir()
	id := testID(3, 3)
	h.create(t, dir, data(id, chain(2)))
	blob := []byte("blob")
	sum := sha256.Sum256(blob)
	h.with(t, dir, store.Read, func(r store.Handle) {
		m := data(id, chain(3)).meta
		writes := map[string]error{
			"Commit":  r.Commit(&m, chain(3)[2:]),
			"PutBlob": r.PutBlob(id, sum, blob),
			"Collect": func() error { _, err := r.Collect(&m, false); return err }(),
		}
		if rm, ok := r.(store.Remover); ok {
			writes["DeleteSession"] = rm.DeleteSession(id)
		}
		for name, err := range writes {
			if !errors.Is(err, store.ErrReadOnly) || err.Error() != store.ErrReadOnly.Error() {
				t.Errorf("%s on a handle opened for reading: %v, want %q", name, err, store.ErrReadOnly)
			}
		}
	})
	h.with(t, dir, store.Read, func(r store.Handle) {
		if m, err := r.Meta(id); err != nil || m.Head != 2 {
			t.Errorf("meta after refused writes: head %d, %v", m.Head, err)
		}
		if _, err := r.Blob(id, sum); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a refused PutBlob stored the blob: %v", err)
		}
	})
}

// Collect frees the nodes no branch reaches, and a dry run only counts them.
func testCollect(t *testing.T, h harness) {
	dir := t.TempDir()
	id := testID(4, 4)
	tree := branched() // 1 -> 2 -> {3 -> 6, 4 -> 5}
	d := data(id, tree)
	d.meta.Head, d.meta.NextSeq = 6, 7
	h.create(t, dir, d) // no branch names 5: nodes 4 and 5 are unreachable
	h.with(t, dir, store.Write, func(w store.Handle) {
		m, err := w.Meta(id)
		if err != nil {
			t.Fatal(err)
		}
		dry, err := w.Collect(&m, true)
		if err != nil || dry.Nodes != 2 {
			t.Fatalf("dry run: %+v, %v; want 2 nodes", dry, err)
		}
		if _, err := w.Node(id, 5); err != nil {
			t.Fatalf("a dry run freed node 5: %v", err)
		}
		freed, err := w.Collect(&m, false)
		if err != nil || freed != dry {
			t.Fatalf("collect: %+v, %v; want %+v", freed, err, dry)
		}
	})
	h.with(t, dir, store.Read, func(r store.Handle) {
		for _, seq := range []uint64{4, 5} {
			if _, err := r.Node(id, seq); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("node %d after collect: %v", seq, err)
			}
		}
		if got := PathSeqs(t, r, id, 6); !slices.Equal(got, []uint64{1, 2, 3, 6}) {
			t.Errorf("path after collect = %v", got)
		}
	})
}
