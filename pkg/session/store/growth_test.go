package store

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wctoolkit/wc/pkg/session"
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

// Sessions have disjoint key ranges, so their tables never merge; past the
// threshold a writer rebuilds the store.
func TestGrowthRebuild(t *testing.T) {
	old := RebuildThreshold
	defer func() { RebuildThreshold = old }()
	const threshold, sessions = 20, 60

	writeSessions := func(dir string) {
		for i := 0; i < sessions; i++ {
			create(t, dir, map[string][]session.Node{testID(uint32(i), i): chain(3, 200)})
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
		t.Fatalf("without rebuilds %d sessions left only %d tables; the rebuild test is moot", sessions, controlTotal)
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
	n := 0
	if err := r.List(func(m *session.Meta) error {
		n++
		if got := pathSeqsOf(t, r, m.ID, m.Head); len(got) != 3 {
			return fmt.Errorf("session %s path %v", m.ID, got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != sessions {
		t.Errorf("%d sessions after rebuilds, want %d", n, sessions)
	}
	if err := r.db.View(func(txn *badger.Txn) error { _, err := txn.Get(schemaKey); return err }); err != nil {
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
