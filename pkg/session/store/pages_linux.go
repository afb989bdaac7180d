package store

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// releaseTablePages drops this process's mappings of the pages of the
// table files under dbDir. Badger maps every table it opens with
// MAP_SHARED and never unmaps a page it has read or written until the
// table closes, so a batch that reads the whole store would end holding it
// all in its resident set. For a shared file mapping MADV_DONTNEED only
// removes the page-table entries: the data stays in the page cache (dirty
// pages are written back as usual) and a later access faults it in again.
func releaseTablePages(dbDir string) error {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return err
	}
	defer f.Close()
	prefix := []byte(dbDir + "/")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 6 || !bytes.HasPrefix(fields[5], prefix) || !bytes.HasSuffix(fields[5], []byte(".sst")) {
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
			return errno
		}
	}
	return sc.Err()
}
