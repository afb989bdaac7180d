package kvstore

import (
	"bufio"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
)

// rssFileKB reads how much of this process's resident set is file pages.
func rssFileKB(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "RssFile:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}

// Reading a store maps its tables' pages into the resident set until they
// are released; releasing keeps the data readable.
func TestReleaseTablePages(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	dir := t.TempDir()
	ids := createNoisy(t, dir, rng, 16, 64) // 2 MB each

	s := open(t, dir, Read)
	defer mustClose(t, s)
	readAll := func() {
		for _, id := range ids {
			if got := pathSeqsOf(t, s, id, 64); len(got) != 64 {
				t.Fatalf("path of %d nodes", len(got))
			}
		}
	}
	before := rssFileKB(t)
	readAll()
	read := rssFileKB(t)
	if read-before < 8<<10 {
		t.Skipf("reading 32 MB of tables mapped only %d kB more; nothing to release", read-before)
	}
	// Tables not pinned are paged out, not discarded.
	if n, err := badgerkv.ReleaseTablePages(s.dbDir(), func(uint64) bool { return false }); n == 0 || err != nil {
		t.Fatalf("paged out %d mappings of unpinned tables (%v)", n, err)
	}
	readAll()
	if n := s.releasePages(); n == 0 {
		t.Fatal("no table mapping found to release")
	}
	after := rssFileKB(t)
	t.Logf("RssFile: %d kB before, %d after reading, %d after release", before, read, after)
	if read-after < (read-before)/2 {
		t.Errorf("release dropped %d kB of the %d kB the reads mapped", read-after, read-before)
	}
	readAll() // the data is still there
}
