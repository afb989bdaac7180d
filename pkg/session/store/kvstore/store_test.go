package kvstore

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// What only the store opened in the process answers (storetest holds what
// every handle does): whether a store exists, and List over all metadata.
func TestExistsAndList(t *testing.T) {
	dir := t.TempDir()
	ids := []string{testID(0x11111111, 1), testID(0x22222222, 2), testID(0x33333333, 3)}
	create(t, dir, map[string][]session.Node{ids[0]: chain(3, 10), ids[1]: chain(5, 100), ids[2]: nil})
	r := open(t, dir, Read)
	defer mustClose(t, r)
	if !r.Exists() {
		t.Fatal("Exists() = false after a write")
	}
	var listed []string
	if err := r.List(func(m *session.Meta) error { listed = append(listed, m.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	if !slices.Equal(listed, ids) {
		t.Errorf("List = %v, want %v", listed, ids)
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

// A removed session leaves no key of its range behind (storetest checks
// that no reader finds it).
func TestDeleteLeavesNoKeys(t *testing.T) {
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
	if err := w.DeleteSession(gone); err != nil {
		t.Fatal(err)
	}
	mustClose(t, w)

	r := open(t, dir, Read)
	defer mustClose(t, r)
	if left := rangeKeys(t, r, gone); left != 0 {
		t.Errorf("%d keys of the deleted session remain", left)
	}
	if n := rangeKeys(t, r, keep); n == 0 {
		t.Errorf("no key of the kept session is left")
	}
}

// A blob over the engine's largest value is refused (storetest checks the
// rejects every handle makes).
func TestPutBlobOverEngineLimit(t *testing.T) {
	w := open(t, t.TempDir(), Write)
	defer mustClose(t, w)
	id := testID(0xabcdef07, 7)
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

// store.Empty, which commands use for a store directory that does not
// exist, answers every read as a store opened for reading there does.
func TestEmptyHandleAnswersAsAMissingStore(t *testing.T) {
	st, err := Open(Options{Dir: filepath.Join(t.TempDir(), "none")}, Read)
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, st)
	empty := store.Empty{}
	var sum [32]byte
	id := "0123abcd-0000-4000-8000-000000000000"
	same := func(what string, got, want error) {
		t.Helper()
		if (got == nil) != (want == nil) || got != nil && (got.Error() != want.Error() ||
			errors.Is(got, ErrNotFound) != errors.Is(want, ErrNotFound)) {
			t.Errorf("%s: store.Empty %v, the store %v", what, got, want)
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
