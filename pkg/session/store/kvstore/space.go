package kvstore

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
)

// Badger writes its memtable, its value log and the tables it builds
// through memory maps. On a full file system a write to a mapped page
// that has no block yet is not an error but SIGBUS, which kills the
// process, leaves its write-ahead log to recover, and makes every later
// open (readers recover what a killed writer left) die the same way. So
// a writer looks at the free space before it writes: before a read-write
// open, before each write (twice its size, for the memtable and the log,
// and the reserve), and before each merge of tables (as much as the store
// holds); it refuses a write it has no room for, store unchanged, and
// leaves a merge for later. And while the store is open for writing, the
// lock file holds a reserve of blocks that Close gives back just before
// Badger flushes its memtable: a file system filled meanwhile by someone
// else still has room for that flush. What fills the file system between
// a check and Badger's write is not covered (see RELIABILITY.md).

// spaceReserve is the room a writer keeps beyond its writes: what an open
// writes (a memtable file, a value log, Badger's discard statistics) and
// a memtable's flush into a table.
const spaceReserve = 4 * badgerkv.MemTableSize

// closeReserve is the lock file's reserve: a memtable's table and the
// MANIFEST's record of it.
const closeReserve = 2 * badgerkv.MemTableSize

// ErrNoSpace is the kind of the error of a write the store's file system
// has no room for.
var ErrNoSpace = store.ErrNoSpace

// freeSpace is what dir's file system has free for this user; ok is false
// when it cannot tell.
func freeSpace(dir string) (uint64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return st.Bavail * uint64(st.Bsize), true
}

// noSpaceError is the error of a write the file system has no room for.
func noSpaceError(dir string, need uint64) error {
	return &store.KindError{Msg: fmt.Sprintf("no space left on the device of store %s (store unchanged)", dir), Kind: ErrNoSpace,
		Hints: []string{fmt.Sprintf("free at least %d MiB on that file system and try again", need>>20+1)}}
}

// roomFor refuses a write of n bytes the file system has no room for.
func (s *Store) roomFor(n int) error {
	if s.shared != nil {
		return nil // no file system of ours: the engine answers a full database
	}
	need := 2*uint64(n) + spaceReserve
	if free, ok := freeSpace(s.dir); ok && free < need {
		return noSpaceError(s.dir, need-free)
	}
	return nil
}

// roomToMerge reports whether the file system has room for a merge of the
// store's tables, which may rewrite all of them.
func (s *Store) roomToMerge() bool {
	var size uint64
	if d := s.maint(); d != nil {
		size = uint64(d.Size())
	}
	free, ok := freeSpace(s.dir)
	return !ok || free >= size+spaceReserve
}

// holdCloseReserve gives the lock file closeReserve bytes of blocks past
// its end (where the verified record never reaches), where the file
// system lets it: fallocate is not everywhere, and this is best effort.
func (s *Store) holdCloseReserve() {
	if s.lock == nil || !s.rw {
		return
	}
	if err := unix.Fallocate(int(s.lock.Fd()), unix.FALLOC_FL_KEEP_SIZE, maxVerifiedRecord, closeReserve); err == nil {
		s.reserved = true
	}
}

// releaseCloseReserve gives the reserve back to the file system.
func (s *Store) releaseCloseReserve() {
	if s.reserved {
		s.reserved = false
		_ = unix.Fallocate(int(s.lock.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, maxVerifiedRecord, closeReserve)
	}
}

// isNoSpace tells an error of a full file system.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		strings.Contains(err.Error(), "no space left on device") || strings.Contains(err.Error(), "disk quota exceeded")
}
