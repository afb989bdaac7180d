package badgerkv

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// madvPageout is MADV_PAGEOUT (Linux 5.4), which package syscall lacks.
const madvPageout = 21

// ReleaseTablePages drops this process's mappings of the pages of the
// table files under dbDir, and returns how many mappings it found. Badger
// maps every table it opens with MAP_SHARED and never unmaps a page it has
// read or written until the table closes, so a batch that reads the whole
// store, or an export of a large session, would end holding all it read in
// its resident set.
//
// For the tables pinned says the caller keeps open meanwhile, it uses
// MADV_DONTNEED: on a shared file mapping that only removes the page-table
// entries, the data stays in the page cache and a later access faults it
// in again. Any other table mapping (a merge's output, not live until the
// merge ends) could be unmapped between reading the maps and the madvise,
// and its range reused by other memory, which MADV_DONTNEED would zero. For
// those it uses MADV_PAGEOUT, which reclaims but never discards: a clean
// file page leaves the page cache, an anonymous page goes to swap or stays.
// Kernels before 5.4 refuse it, and those mappings are left as they are.
func ReleaseTablePages(dbDir string, pinned func(id uint64) bool) (int, error) {
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
		if err != nil {
			continue
		}
		safe := pinned(id)
		start, end, ok := bytes.Cut(fields[0], []byte("-"))
		if !ok {
			continue
		}
		lo, err1 := strconv.ParseUint(string(start), 16, 64)
		hi, err2 := strconv.ParseUint(string(end), 16, 64)
		if err1 != nil || err2 != nil || hi <= lo {
			continue
		}
		if !safe {
			// Best effort: the range may be gone already (ENOMEM).
			if madvise(uintptr(lo), uintptr(hi-lo), madvPageout) == nil {
				released++
			}
			continue
		}
		if err := madvise(uintptr(lo), uintptr(hi-lo), syscall.MADV_DONTNEED); err != nil {
			return released, err
		}
		released++
	}
	return released, sc.Err()
}

func madvise(addr, length uintptr, advice int) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, addr, length, uintptr(advice)); errno != 0 {
		return errno
	}
	return nil
}
