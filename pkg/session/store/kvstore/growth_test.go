package kvstore

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// Each writing process leaves one L0 table; without the Flatten policy 200
// appends would leave 200.
func TestGrowthLevel0Bounded(t *testing.T) {
	dir := t.TempDir()
	id := testID(0x6000, 1)
	create(t, dir, map[string][]session.Node{id: chain(1, 100)})
	const cycles = 200
	maxL0 := 0
	for i := 0; i < cycles; i++ {
		s, err := Open(Options{Dir: dir}, Write)
		if err != nil {
			t.Fatal(err)
		}
		_, l0 := s.Tables() // what the previous Close left
		maxL0 = max(maxL0, l0)
		if err := appendOne(s, id, fmt.Sprintf("append %d", i)); err != nil {
			t.Fatal(err)
		}
		mustClose(t, s)
	}
	r := open(t, dir, Read)
	defer mustClose(t, r)
	_, l0 := r.Tables()
	maxL0 = max(maxL0, l0)
	if maxL0 > flattenL0 {
		t.Errorf("level 0 reached %d tables, want <= %d", maxL0, flattenL0)
	}
	m, err := r.Meta(id)
	if err != nil || m.MessageCount != cycles+1 {
		t.Fatalf("meta = %+v, %v", m, err)
	}
	if got := pathSeqsOf(t, r, id, m.Head); len(got) != cycles+1 {
		t.Errorf("path has %d nodes, want %d", len(got), cycles+1)
	}
}

// Writes to disjoint key ranges leave tables that never merge; past the
// threshold a writer rebuilds the store. A Commit also writes the listing
// range, which every writer shares, so the writers here store blobs, which
// touch one session's range only, after one session made by a Commit whose
// range, and its listing shard's (the first, at its end), are disjoint
// from theirs (in another shard).
func TestGrowthRebuild(t *testing.T) {
	old := RebuildThreshold
	defer func() { RebuildThreshold = old }()
	const threshold, sessions = 20, 60
	blob := func(i int) []byte { return []byte(fmt.Sprintf("blob %d", i)) }

	writeSessions := func(dir string) {
		create(t, dir, map[string][]session.Node{testID(0, 0): chain(3, 200)})
		for i := 1; i <= sessions; i++ {
			w := open(t, dir, Write)
			if err := w.PutBlob(testID(0x80000000+uint32(i), i), sha256.Sum256(blob(i)), blob(i)); err != nil {
				t.Fatal(err)
			}
			mustClose(t, w)
		}
	}

	// Control: with rebuilds off, the tables pile up (or the test below
	// proves nothing).
	RebuildThreshold = 0
	control := t.TempDir()
	writeSessions(control)
	r := open(t, control, Read)
	controlTotal, _ := r.Tables()
	mustClose(t, r)
	if controlTotal <= threshold {
		t.Fatalf("without rebuilds %d writers left only %d tables; the rebuild test is moot", sessions, controlTotal)
	}

	RebuildThreshold = threshold
	dir := t.TempDir()
	writeSessions(dir)
	r = open(t, dir, Read)
	total, l0 := r.Tables()
	t.Logf("tables after %d writers: %d (L0 %d); %d without rebuilds", sessions, total, l0, controlTotal)
	if total > threshold {
		t.Errorf("%d tables after rebuilds, want <= %d", total, threshold)
	}
	for _, p := range []string{"db.new", "db.old"} {
		if exists(filepath.Join(dir, p)) {
			t.Errorf("%s left behind", p)
		}
	}
	for i := 1; i <= sessions; i++ {
		if got, err := r.Blob(testID(0x80000000+uint32(i), i), sha256.Sum256(blob(i))); err != nil || string(got) != string(blob(i)) {
			t.Errorf("blob %d after rebuilds: %q, %v", i, got, err)
		}
	}
	if got := pathSeqsOf(t, r, testID(0, 0), 3); len(got) != 3 {
		t.Errorf("session path after rebuilds: %v", got)
	}
	if err := r.CheckListing(); err != nil {
		t.Error(err)
	}
	if err := r.eng.View(func(txn kv.Txn) error { _, err := txn.Get(schemaKey); return err }); err != nil {
		t.Errorf("schema record lost in the rebuild: %v", err)
	}
	mustClose(t, r)

	// The rebuilt store takes writes.
	w, err := Open(Options{Dir: dir, LockTimeout: time.Second}, Write)
	if err != nil {
		t.Fatal(err)
	}
	if err := appendOne(w, testID(0, 0), "after rebuild"); err != nil {
		t.Fatal(err)
	}
	mustClose(t, w)
}
