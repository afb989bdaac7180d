package store

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// releaseEvery is how much a long read takes in before releasePages; a
// variable so that tests can lower it.
var releaseEvery = 4 << 20

// releasePages drops from this process the pages it has touched of the
// store's tables and value logs. Badger maps those files read-only and
// shared, so the pages stay in the kernel's page cache and come back on the
// next touch; but until dropped they count in the process's memory, and a
// reader's peak RSS would grow with all it read (some 25 MB for an export
// of a 45 MB session). It is best effort: without /proc, or with Badger
// reading its files some other way, it does nothing. It returns how many
// mappings it released.
func (s *Store) releasePages() int {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0
	}
	released := 0
	dir := []byte(s.dbDir() + string(filepath.Separator))
	for line := range bytes.Lines(maps) {
		// start-end perms offset dev inode path
		i := bytes.Index(line, dir)
		if i < 0 {
			continue
		}
		name := bytes.TrimRight(line[i+len(dir):], "\n")
		if !bytes.HasSuffix(name, []byte(".sst")) && !bytes.HasSuffix(name, []byte(".vlog")) {
			continue
		}
		span, _, _ := bytes.Cut(line, []byte(" "))
		from, to, ok := bytes.Cut(span, []byte("-"))
		start, err1 := strconv.ParseUint(string(from), 16, 64)
		end, err2 := strconv.ParseUint(string(to), 16, 64)
		if !ok || err1 != nil || err2 != nil || end <= start {
			continue
		}
		// madvise on the raw addresses: the mapping is Badger's, not a
		// slice of ours.
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), syscall.MADV_DONTNEED); errno == 0 {
			released++
		}
	}
	return released
}
