package store

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
	"github.com/wctoolkit/wc/pkg/session/store/client"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// branched is the tree 1 -> 2 -> {3 -> 6, 4 -> 5}, written in seq order.
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

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	tree := branched()
	idTree, idLin, idEmpty := testID(0x11111111, 1), testID(0x22222222, 2), testID(0x33333333, 3)
	lin := chain(5, 100)
	wantMeta := map[string]session.Meta{}
	w := open(t, dir, Write)
	for id, nodes := range map[string][]session.Node{idTree: tree, idLin: lin, idEmpty: nil} {
		m := metaFor(id, nodes)
		m.Branches = []session.NamedBranch{{Name: "b", Seq: 1}}
		m.Extra = []session.Field{{Key: "turn_context", Value: []byte(`{"a":1}`)}}
		if err := w.Commit(&m, nodes); err != nil {
			t.Fatal(err)
		}
		wantMeta[id] = m
	}
	mustClose(t, w)

	r := open(t, dir, Read)
	defer mustClose(t, r)
	if !r.Exists() {
		t.Fatal("Exists() = false after a write")
	}
	for id, want := range wantMeta {
		got, err := r.Meta(id)
		if err != nil {
			t.Fatalf("meta %s: %v", id, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("meta %s:\n got %+v\nwant %+v", id, got, want)
		}
	}
	for _, want := range tree {
		got, err := r.Node(idTree, want.Seq)
		if err != nil {
			t.Fatalf("node %d: %v", want.Seq, err)
		}
		if got.Seq != want.Seq || got.Header() != want.Header() || got.Msg.Content.Text != want.Msg.Content.Text {
			t.Errorf("node %d = %+v, want %+v", want.Seq, got, want)
		}
	}

	for head, want := range map[uint64][]uint64{5: {1, 2, 4, 5}, 6: {1, 2, 3, 6}, 3: {1, 2, 3}, 1: {1}, 0: nil} {
		if got := pathSeqsOf(t, r, idTree, head); !slices.Equal(got, want) {
			t.Errorf("path to %d = %v, want %v", head, got, want)
		}
	}
	if got := pathSeqsOf(t, r, idLin, 5); !slices.Equal(got, []uint64{1, 2, 3, 4, 5}) {
		t.Errorf("linear path = %v", got)
	}
	var texts []string
	if err := r.Path(idTree, 5, func(n *session.Node) error {
		texts = append(texts, n.Msg.Content.Text)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"root", "two", "four", "five"}; !slices.Equal(texts, want) {
		t.Errorf("path texts = %v, want %v", texts, want)
	}
	stop := errors.New("stop")
	if err := r.Path(idTree, 5, func(*session.Node) error { return stop }); err != stop {
		t.Errorf("Path returned %v, want the callback's error", err)
	}

	var seqs []uint64
	if err := r.Nodes(idTree, func(seq uint64, raw []byte) error {
		n, err := record.DecodeNode(seq, raw)
		if err != nil {
			return err
		}
		if n.Parent != tree[seq-1].Parent {
			t.Errorf("node %d parent %d, want %d", seq, n.Parent, tree[seq-1].Parent)
		}
		seqs = append(seqs, seq)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seqs, []uint64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("Nodes = %v", seqs)
	}

	var walked []uint64
	if err := r.Walk(idTree, 5, 0, func(n *session.Node) bool { walked = append(walked, n.Seq); return true }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(walked, []uint64{5, 4, 2, 1}) {
		t.Errorf("Walk = %v", walked)
	}
	walked = nil
	_ = r.Walk(idTree, 6, 2, func(n *session.Node) bool { walked = append(walked, n.Seq); return true })
	if !slices.Equal(walked, []uint64{6, 3}) {
		t.Errorf("Walk max 2 = %v", walked)
	}
	walked = nil
	_ = r.Walk(idTree, 6, 0, func(n *session.Node) bool { walked = append(walked, n.Seq); return n.Seq != 2 })
	if !slices.Equal(walked, []uint64{6, 3, 2}) {
		t.Errorf("Walk stopped by fn = %v", walked)
	}

	var listed []string
	if err := r.List(func(m *session.Meta) error { listed = append(listed, m.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	if want := []string{idTree, idLin, idEmpty}; !slices.Equal(listed, want) {
		t.Errorf("List = %v, want %v", listed, want)
	}

	for _, err := range []error{
		func() error { _, err := r.Node(idTree, 7); return err }(),
		func() error { _, err := r.Node(idTree, 0); return err }(),
		r.Path(idTree, 7, func(*session.Node) error { return nil }),
		r.Walk(idTree, 9, 0, func(*session.Node) bool { return true }),
		func() error { _, err := r.Meta(testID(0x44444444, 4)); return err }(),
		r.Nodes(testID(0x44444444, 4), func(uint64, []byte) error { return nil }),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("got %v, want ErrNotFound", err)
		}
	}
	_, err := r.Node(idTree, 7)
	if want := "node 7 not found in session " + idTree; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	_, err = r.Meta(testID(0x44444444, 4))
	if want := "session " + testID(0x44444444, 4) + " not found"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// A crash between the transactions of a big Commit leaves nodes at or above
// next_seq; readers must not see them and the next append overwrites them.
func TestOrphansInvisible(t *testing.T) {
	dir := t.TempDir()
	id := testID(0xabcdef01, 1)
	create(t, dir, map[string][]session.Node{id: chain(3, 50)})

	w := open(t, dir, Write)
	key, _ := parseID(id)
	orphans := chain(5, 50)[3:] // seqs 4 and 5, as if from an unfinished commit
	if err := w.eng.Update(func(txn kv.Txn) error {
		for i := range orphans {
			orphans[i].Msg = userMsg("orphan")
			if err := txn.Set(nodeKey(key, orphans[i].Seq), record.EncodeNode(&orphans[i])); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Node(id, 4); !errors.Is(err, ErrNotFound) {
		t.Errorf("orphan node 4 visible: %v", err)
	}
	if err := w.Path(id, 5, func(*session.Node) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Errorf("path to orphan: %v", err)
	}
	n := 0
	_ = w.Nodes(id, func(uint64, []byte) error { n++; return nil })
	if n != 3 {
		t.Errorf("Nodes saw %d nodes, want 3", n)
	}
	if err := appendOne(w, id, "real four"); err != nil {
		t.Fatal(err)
	}
	got, err := w.Node(id, 4)
	if err != nil || got.Msg.Content.Text != "real four" || got.Parent != 3 {
		t.Errorf("node 4 after append = %+v, %v", got, err)
	}
	mustClose(t, w)
}

func TestCommitLarge(t *testing.T) {
	dir := t.TempDir()
	id := testID(0x5e55, 20000)
	nodes := chain(20000, 1024)
	m := metaFor(id, nodes)
	w := open(t, dir, Write)
	if err := w.Commit(&m, nodes); err != nil {
		t.Fatal(err)
	}
	if n := w.lastTxns.Load(); n < 2 {
		t.Errorf("a 20 MB commit used %d transaction(s); the split path was not exercised", n)
	}
	mustClose(t, w)

	r := open(t, dir, Read)
	defer mustClose(t, r)
	got, err := r.Meta(id)
	if err != nil || got.Head != 20000 || got.MessageCount != 20000 {
		t.Fatalf("meta = %+v, %v", got, err)
	}
	want := uint64(1)
	if err := r.Path(id, got.Head, func(n *session.Node) error {
		if n.Seq != want || n.Depth != want {
			return fmt.Errorf("path node %d (depth %d), want %d", n.Seq, n.Depth, want)
		}
		want++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want != 20001 {
		t.Errorf("path had %d nodes", want-1)
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	a := "abcd1234-0000-4000-8000-000000000001"
	b := "abcd1234-0000-4000-8000-000000000002"
	c := "abce0000-0000-4000-8000-000000000003"
	d := "abcd2000-0000-4000-8000-000000000004"
	create(t, dir, map[string][]session.Node{a: chain(3, 10), b: nil, c: chain(1, 10), d: nil})
	s := open(t, dir, Read)
	defer mustClose(t, s)

	for ref, want := range map[string]string{
		a:                                      a,
		strings.ToUpper(a):                     a,
		strings.ReplaceAll(a, "-", ""):         a,
		"abce":                                 c,
		"ABCE0":                                c,
		"abcd-2":                               d,
		"abcd2":                                d,
		"abcd1234-0000-4000-8000-000000000002": b,
	} {
		got, err := s.Resolve(ref)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}

	_, err := s.Resolve("abcd1")
	if !errors.Is(err, ErrAmbiguous) || err.Error() != "session prefix abcd1 is ambiguous (2 sessions match)" {
		t.Errorf("Resolve(abcd1) = %v", err)
	}
	_, err = s.Resolve("abcd")
	if !errors.Is(err, ErrAmbiguous) || err.Error() != "session prefix abcd is ambiguous (3 sessions match)" {
		t.Errorf("Resolve(abcd) = %v", err)
	}
	_, err = s.Resolve("abcd1234-0000-4000-8000-00000000000") // 31 digits, odd
	if !errors.Is(err, ErrAmbiguous) {
		t.Errorf("Resolve(31 digits) = %v", err)
	}
	for _, ref := range []string{"ffff", "abcf", "abcd3", "ffffffff-0000-4000-8000-000000000001"} {
		_, err := s.Resolve(ref)
		if !errors.Is(err, ErrNotFound) || err.Error() != "session "+ref+" not found" {
			t.Errorf("Resolve(%q) = %v, want not found", ref, err)
		}
	}
	for _, ref := range []string{"", "abc", "ab-c", "abcg", "zzzz", "abcd12340000400080000000000000001", "abcd 1234"} {
		_, err := s.Resolve(ref)
		var re *RefError
		if !errors.As(err, &re) || err.Error() != "invalid session reference "+ref {
			t.Errorf("Resolve(%q) = %v, want a RefError", ref, err)
		}
	}
}

func TestDeleteAndBlobs(t *testing.T) {
	dir := t.TempDir()
	keep, gone := testID(1, 1), testID(2, 2)
	create(t, dir, map[string][]session.Node{keep: chain(4, 10), gone: chain(4, 10)})
	w := open(t, dir, Write)
	data := []byte("spilled tool output")
	sum := sha256.Sum256(data)
	for _, id := range []string{keep, gone} {
		if err := w.PutBlob(id, sum, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.PutBlob(keep, sha256.Sum256([]byte("other")), data); err == nil {
		t.Error("PutBlob accepted a wrong checksum")
	}
	if got, err := w.Blob(keep, sum); err != nil || string(got) != string(data) {
		t.Errorf("Blob = %q, %v", got, err)
	}
	if _, err := w.Blob(keep, sha256.Sum256([]byte("x"))); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing blob: %v", err)
	}
	if err := w.DeleteSession(gone); err != nil {
		t.Fatal(err)
	}
	if err := w.DeleteSession(gone); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	mustClose(t, w)

	r := open(t, dir, Read)
	defer mustClose(t, r)
	if _, err := r.Meta(gone); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted meta: %v", err)
	}
	if _, err := r.Blob(gone, sum); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted blob: %v", err)
	}
	key, _ := parseID(gone)
	left := 0
	_ = r.eng.View(func(txn kv.Txn) error {
		it := txn.Iterate(kv.IterOptions{Prefix: sessionPrefix(key)})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			left++
		}
		return nil
	})
	if left != 0 {
		t.Errorf("%d keys of the deleted session remain", left)
	}
	if got := pathSeqsOf(t, r, keep, 4); len(got) != 4 {
		t.Errorf("kept session path = %v", got)
	}
	if got, err := r.Blob(keep, sum); err != nil || string(got) != string(data) {
		t.Errorf("kept blob = %q, %v", got, err)
	}
	m := metaFor(keep, nil)
	for name, err := range map[string]error{
		"Commit": r.Commit(&m, nil), "DeleteSession": r.DeleteSession(keep), "PutBlob": r.PutBlob(keep, sum, data),
	} {
		if err == nil {
			t.Errorf("%s succeeded on a Read store", name)
		}
	}
}

func TestCommitRejects(t *testing.T) {
	w := open(t, t.TempDir(), Write)
	defer mustClose(t, w)
	id := testID(0xabcdef07, 7)
	nodes := chain(3, 10)
	for name, m := range map[string]session.Meta{
		"uppercase id": func() session.Meta { m := metaFor(strings.ToUpper(id), nodes); return m }(),
		"seq >= next":  func() session.Meta { m := metaFor(id, nodes); m.NextSeq = 3; m.Head = 2; return m }(),
		"head >= next": func() session.Meta { m := metaFor(id, nodes); m.Head = 9; return m }(),
		"not an id":    func() session.Meta { m := metaFor(id, nodes); m.ID = "hello"; return m }(),
	} {
		if err := w.Commit(&m, nodes); err == nil {
			t.Errorf("%s: Commit succeeded", name)
		}
	}
	if _, err := w.Meta(id); !errors.Is(err, ErrNotFound) {
		t.Errorf("a rejected commit wrote something: %v", err)
	}
	big := make([]byte, badgerkv.MaxValueBytes+1)
	if err := w.PutBlob(id, sha256.Sum256(big), big); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("oversized blob: %v", err)
	}
}

func TestMapErrDropsValueBytes(t *testing.T) {
	raw := fmt.Errorf("Value with size 70000000 exceeded 67108864 limit. Value:\n%s", "00000000  73 65 63 72 65 74  |secret|")
	err := mapErr("commit", raw)
	if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "\n") {
		t.Errorf("mapErr leaked the value: %q", err)
	}
	if want := "store: commit failed: value too large"; err.Error() != want {
		t.Errorf("mapErr = %q, want %q", err, want)
	}
	if err := mapErr("x", sessionNotFound("abcd")); !errors.Is(err, ErrNotFound) || err.Error() != "session abcd not found" {
		t.Errorf("mapErr changed our own error: %v", err)
	}
}

func TestSchemaNewer(t *testing.T) {
	dir := t.TempDir()
	w := open(t, dir, Write)
	newer := fmt.Sprint(schemaVersion + 1)
	if err := w.eng.Update(func(txn kv.Txn) error { return txn.Set(schemaKey, []byte(`{"schema":`+newer+`}`)) }); err != nil {
		t.Fatal(err)
	}
	mustClose(t, w)
	for _, mode := range []Mode{Read, Write} {
		_, err := Open(Options{Dir: dir}, mode)
		if err == nil || err.Error() != "store schema "+newer+" is newer than this wc understands" {
			t.Errorf("mode %v: %v", mode, err)
		}
	}
}

func TestSchemaStamped(t *testing.T) {
	dir := t.TempDir()
	mustClose(t, open(t, dir, Write))
	if v := schemaOf(t, dir); v != `{"schema":5}` {
		t.Errorf("schema record = %q", v)
	}
}

func TestForeignBadgerRefused(t *testing.T) {
	dir := t.TempDir()
	db, err := badger.Open(badger.DefaultOptions(filepath.Join(dir, "db")).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []Mode{Write, Read} {
		if _, err := Open(Options{Dir: dir}, mode); !errors.Is(err, ErrNotStore) {
			t.Errorf("mode %v: %v, want ErrNotStore", mode, err)
		}
	}
}

func TestRecoverInterruptedRebuild(t *testing.T) {
	id := testID(9, 9)
	for name, setup := range map[string]func(dir string) error{
		// died after db -> db.old, before db.new -> db
		"between renames": func(dir string) error {
			if err := os.Rename(filepath.Join(dir, "db"), filepath.Join(dir, "db.new")); err != nil {
				return err
			}
			return os.MkdirAll(filepath.Join(dir, "db.old", "junk"), 0o700)
		},
		// died while streaming into db.new
		"during stream": func(dir string) error {
			return os.MkdirAll(filepath.Join(dir, "db.new", "junk"), 0o700)
		},
		// died before removing db.old
		"before cleanup": func(dir string) error {
			return os.MkdirAll(filepath.Join(dir, "db.old", "junk"), 0o700)
		},
	} {
		for _, mode := range []Mode{Write, Read} {
			t.Run(fmt.Sprintf("%s/%v", name, mode), func(t *testing.T) {
				dir := t.TempDir()
				create(t, dir, map[string][]session.Node{id: chain(2, 10)})
				if err := setup(dir); err != nil {
					t.Fatal(err)
				}
				s := open(t, dir, mode)
				if _, err := s.Meta(id); err != nil {
					t.Errorf("meta after recovery: %v", err)
				}
				mustClose(t, s)
				if mode == Write || name == "between renames" {
					for _, p := range []string{"db.new", "db.old"} {
						if exists(filepath.Join(dir, p)) {
							t.Errorf("%s left behind", p)
						}
					}
				}
			})
		}
	}
}

// client.Empty, which commands use for a store directory that does not
// exist, answers every read as a store opened for reading there does.
func TestEmptyHandleAnswersAsAMissingStore(t *testing.T) {
	st, err := Open(Options{Dir: filepath.Join(t.TempDir(), "none")}, Read)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, st)
	empty := client.Empty{}
	var sum [32]byte
	id := "0123abcd-0000-4000-8000-000000000000"
	same := func(what string, got, want error) {
		t.Helper()
		if (got == nil) != (want == nil) || got != nil && (got.Error() != want.Error() ||
			errors.Is(got, ErrNotFound) != errors.Is(want, ErrNotFound)) {
			t.Errorf("%s: client.Empty %v, the store %v", what, got, want)
		}
	}
	for _, ref := range []string{"0123", "0123ABCD", id, "012", "zz", id + "0"} {
		_, got := empty.Resolve(ref)
		_, want := st.Resolve(ref)
		same("Resolve "+ref, got, want)
	}
	for _, ref := range []string{id, "not-an-id"} {
		_, got := empty.Meta(ref)
		_, want := st.Meta(ref)
		same("Meta", got, want)
		_, got = empty.Node(ref, 1)
		_, want = st.Node(ref, 1)
		same("Node", got, want)
		same("Walk", empty.Walk(ref, 0, 0, nil), st.Walk(ref, 0, 0, nil))
		same("Nodes", empty.Nodes(ref, nil), st.Nodes(ref, nil))
		same("Path", empty.Path(ref, 1, nil), st.Path(ref, 1, nil))
		_, got = empty.Blob(ref, sum)
		_, want = st.Blob(ref, sum)
		same("Blob", got, want)
	}
	same("ListInfo", empty.ListInfo(ListQuery{}, nil), st.ListInfo(ListQuery{}, nil))
	m := session.Meta{ID: id}
	same("Commit", empty.Commit(&m, nil), st.Commit(&m, nil))
	same("PutBlob", empty.PutBlob(id, sum, nil), st.PutBlob(id, sum, nil))
	for _, dryRun := range []bool{false, true} {
		_, got := empty.Collect(&m, dryRun)
		_, want := st.Collect(&m, dryRun)
		same(fmt.Sprint("Collect, dry run ", dryRun), got, want)
	}
}

// usage_totals_reflect_saved_sessions: whycodes' usage_totals sums the
// saved sessions' usage; wc has no such call, and the listing's usage,
// summed, is the same total (cache fields included, appearing once any
// session reports them).
func TestUsageTotalsReflectSavedSessions(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Write)
	read := uint64(5)
	for i, u := range []session.Usage{{InputTokens: 10, OutputTokens: 1}, {InputTokens: 20, OutputTokens: 2, CacheReadInputTokens: &read}} {
		nodes := chain(2, 40)
		m := metaFor(testID(uint32(i+1), i), nodes)
		if err := m.AddUsage(u, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(&m, nodes); err != nil {
			t.Fatal(err)
		}
	}
	mustClose(t, s)
	r := open(t, dir, Read)
	defer mustClose(t, r)
	var total session.Usage
	count := 0
	err := r.ListInfo(ListQuery{}, func(info *session.Info) error {
		total.Add(info.Usage)
		count++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if count != 2 || total.InputTokens != 30 || total.OutputTokens != 3 || total.CacheReadInputTokens == nil || *total.CacheReadInputTokens != 5 {
		t.Errorf("%d sessions, totals %+v", count, total)
	}
}
