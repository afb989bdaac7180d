package store

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// releaseTablePages drops this process's mappings of the pages of the
// table files under dbDir, and returns how many mappings it found. Badger
// maps every table it opens with MAP_SHARED and never unmaps a page it has
// read or written until the table closes, so a batch that reads the whole
// store, or an export of a large session, would end holding all it read in
// its resident set. For a shared file mapping MADV_DONTNEED only removes
// the page-table entries: the data stays in the page cache (dirty pages are
// written back as usual) and a later access faults it in again.
//
// Only the tables in pinned are touched, and the caller must keep them
// open meanwhile: the address range of a table closed between reading the
// maps and the madvise could already hold other memory, which would be
// zeroed.
func releaseTablePages(dbDir string, pinned map[uint64]bool) (int, error) {
	// The maps name files by their real path; the resident process reaches
	// its store through /proc/self/fd.
	if real, err := filepath.EvalSymlinks(dbDir); err == nil {
		dbDir = real
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	prefix := []byte(dbDir + "/")
	released := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := bytes.Fields(sc.Bytes())
		// A deleted file's line ends in " (deleted)": seven fields.
		if len(fields) != 6 || !bytes.HasPrefix(fields[5], prefix) {
			continue
		}
		name, ok := bytes.CutSuffix(fields[5][len(prefix):], []byte(".sst"))
		if !ok {
			continue
		}
		id, err := strconv.ParseUint(string(name), 10, 64)
		if err != nil || !pinned[id] {
			continue
		}
		start, end, ok := bytes.Cut(fields[0], []byte("-"))
		if !ok {
			continue
		}
		lo, err1 := strconv.ParseUint(string(start), 16, 64)
		hi, err2 := strconv.ParseUint(string(end), 16, 64)
		if err1 != nil || err2 != nil || hi <= lo {
			continue
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, uintptr(lo), uintptr(hi-lo), syscall.MADV_DONTNEED); errno != 0 {
			return released, errno
		}
		released++
	}
	return released, sc.Err()
}
