package kvstore

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
)

// noisyChain is chain with incompressible text, so that tables fill up.
func noisyChain(rng *rand.Rand, n, size int) []session.Node {
	nodes := make([]session.Node, n)
	raw := make([]byte, size/2)
	for i := range nodes {
		for j := range raw {
			raw[j] = byte(rng.Uint32())
		}
		var parent *session.Node
		if i > 0 {
			parent = &nodes[i-1]
		}
		nodes[i] = session.Child(parent, uint64(i+1), userMsg(hex.EncodeToString(raw)))
	}
	return nodes
}

// createNoisy writes n sessions of the given number of 32 KB nodes
// (incompressible) in one writer and returns their ids.
func createNoisy(t *testing.T, dir string, rng *rand.Rand, n, nodes int) []string {
	t.Helper()
	ids := make([]string, n)
	sessions := map[string][]session.Node{}
	for i := range ids {
		ids[i] = testID(uint32(i), i)
		sessions[ids[i]] = noisyChain(rng, nodes, 32<<10)
	}
	create(t, dir, sessions)
	return ids
}

// A store of a few hundred full tables is large, not fragmented: rebuilding
// it would leave as many tables again, and every writer would pay for a
// full copy at close (a 600 MB store did, with 2 GB of RSS).
func TestGrowthNoRebuildOfFullTables(t *testing.T) {
	old := RebuildThreshold
	defer func() { RebuildThreshold = old }()
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	createNoisy(t, dir, rng, 6, 128) // 4 MB each
	r := open(t, dir, Read)
	total, _ := r.Tables()
	estimate := r.rebuiltTables()
	mustClose(t, r)
	t.Logf("%d tables, %d expected after a rebuild", total, estimate)
	if total < 3 || 2*estimate < total+1 {
		t.Fatalf("%d tables for %d after a rebuild: the store is not made of full tables, the test is moot", total, estimate)
	}

	RebuildThreshold = total - 1 // the next writer is past the threshold
	before, err := os.Stat(filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	w := open(t, dir, Write)
	if err := appendOne(w, testID(0, 0), "one more"); err != nil {
		t.Fatal(err)
	}
	mustClose(t, w)
	after, err := os.Stat(filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Errorf("a store of %d full tables was rebuilt", total)
	}
}

// A bulk writer settles between items once enough data went
// through, and nothing it wrote before or after is lost.
func TestBulkSettle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	ids := createNoisy(t, dir, rng, 40, 64) // 2 MB each

	s, err := Open(Options{Dir: dir, LockTimeout: time.Second, Bulk: true}, Write)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		// Read the whole path and append one node, as a batch compaction does.
		m, err := s.Meta(id)
		if err != nil {
			t.Fatal(err)
		}
		if got := pathSeqsOf(t, s, id, m.Head); len(got) != 64 {
			t.Fatalf("session %d: path of %d nodes before", i, len(got))
		}
		if err := appendOne(s, id, fmt.Sprintf("settled %d", i)); err != nil {
			t.Fatal(err)
		}
		if err := s.Settle(); err != nil {
			t.Fatal(err)
		}
	}
	// 40 sessions × 2 MB read: the handle must have settled at least once
	// per settleReleaseBytes.
	if want := 40 * (2 << 20) / settleReleaseBytes; s.settled < want {
		t.Errorf("settled %d times over 80 MB read, want at least %d", s.settled, want)
	}
	mustClose(t, s)
	if err := s.Settle(); err == nil {
		t.Error("Settle after Close succeeded")
	}

	r := open(t, dir, Read)
	defer mustClose(t, r)
	for i, id := range ids {
		m, err := r.Meta(id)
		if err != nil {
			t.Fatal(err)
		}
		if got := pathSeqsOf(t, r, id, m.Head); len(got) != 65 {
			t.Errorf("session %d: path of %d nodes after, want 65", i, len(got))
		}
	}
}

// No writer compacts in the background: level 0 grows with the memtables a
// long-lived writer flushes until tidy (or Close) merges it, and what was
// written stays readable.
func TestTidyMergesLevelZero(t *testing.T) {
	old := residentFlattenL0
	defer func() { residentFlattenL0 = old }()
	residentFlattenL0 = 6 // Flatten leaves a level 0 below Badger's NumLevelZeroTables (5) alone
	rng := rand.New(rand.NewPCG(7, 8))
	dir := t.TempDir()
	s := open(t, dir, Write)
	defer mustClose(t, s)
	var ids []string
	for i := 0; ; i++ {
		if _, l0 := s.Tables(); l0 >= residentFlattenL0 {
			break
		}
		if i == 40 {
			t.Fatal("40 commits of 2 MB left fewer than 6 level-0 tables: memtables are not flushed as expected")
		}
		id := testID(uint32(i), i)
		nodes := noisyChain(rng, 64, 32<<10)
		m := metaFor(id, nodes)
		if err := s.Commit(&m, nodes); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		time.Sleep(20 * time.Millisecond) // let the flush land
	}
	if err := s.tidy(); err != nil {
		t.Fatal(err)
	}
	if _, l0 := s.Tables(); l0 >= residentFlattenL0 {
		t.Errorf("level 0 holds %d tables after tidy", l0)
	}
	for _, id := range ids {
		if got := pathSeqsOf(t, s, id, 64); len(got) != 64 {
			t.Fatalf("%s: path of %d nodes after tidy", id, len(got))
		}
	}
}

// Level 0 merges straight into the store's one level, however large the
// store: with Badger's default base level (ten times below the last level,
// once that passes 10 MB) every merge would write what it merged twice.
func TestMergeIntoTheStoreLevel(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	dir := t.TempDir()
	createNoisy(t, dir, rng, 28, 128) // 112 MB: the old base level would be two levels up
	s := open(t, dir, Write)
	defer mustClose(t, s)
	levels := s.eng.(*badgerkv.Engine).DB().Levels()
	last := levels[len(levels)-1]
	if last.Size < 100<<20 {
		t.Fatalf("the store's level holds %d MB, too little for the test", last.Size>>20)
	}
	for _, l := range levels {
		if l.IsBaseLevel && l.Level != last.Level {
			t.Errorf("level 0 merges into level %d, above the store's level %d", l.Level, last.Level)
		}
	}
}
