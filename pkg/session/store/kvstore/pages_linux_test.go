package kvstore

import (
	"bufio"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
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
	if n, err := releaseTablePages(s.dbDir(), func(uint64) bool { return false }); n == 0 || err != nil {
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

// The advice given to table mappings nobody pins must be harmless to
// whatever memory their range may hold by then: here, anonymous memory.
func TestPageoutKeepsAnonymousMemory(t *testing.T) {
	const size = 1 << 20
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	for i := range mem {
		mem[i] = byte(i%251 + 1)
	}
	addr := uintptr(unsafe.Pointer(&mem[0]))
	if err := madvise(addr, size, madvPageout); err != nil {
		t.Skipf("MADV_PAGEOUT: %v (kernel before 5.4)", err)
	}
	for i := range mem {
		if mem[i] != byte(i%251+1) {
			t.Fatalf("byte %d is %d after MADV_PAGEOUT: the advice discarded memory", i, mem[i])
		}
	}
	// And the check can fail: MADV_DONTNEED zeroes such memory.
	if err := madvise(addr, size, syscall.MADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	if mem[1] != 0 {
		t.Fatal("MADV_DONTNEED kept anonymous memory; the check above proves nothing")
	}
}
