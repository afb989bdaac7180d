package kvstore

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// dirEngine is what an engine in a store directory does besides
// transactions: the maintenance only Badger has (badgerkv.Engine). The
// store type-asserts it (maint); an engine without it is never merged,
// rebuilt, paged out or checked table by table.
type dirEngine interface {
	kv.Engine
	Tables() (total, level0 int)
	Size() int64
	Flatten() error
	Sync() error
	VerifyChecksum() error
	PinTables() (pinned func(id uint64) bool, unpin func())
	CopyTo(dst kv.Engine, keep func(key []byte) bool) error
}

// dir is the handle's engine as a dirEngine; nil without one.
func (s *Store) maint() dirEngine {
	d, _ := s.eng.(dirEngine)
	return d
}

// errNoMaintenance is a maintenance asked of an engine without it.
var errNoMaintenance = errors.New("store: the engine has no such maintenance")

// maintain runs before a read-write Close, under the exclusive lock, so that
// the cost of a command does not grow with the number of commands before it.
func (s *Store) maintain() error {
	if !s.roomToMerge() {
		return nil // merged later, when the file system has room
	}
	total, l0 := s.Tables()
	if l0 >= flattenL0 {
		if err := s.flatten(); err != nil {
			return err
		}
		total, _ = s.Tables()
	}
	if s.wrote.Load() {
		total++ // the memtable Close is about to flush
	}
	if s.rebuildAt > 0 && total > s.rebuildAt && total > 2*s.rebuiltTables() {
		return s.rebuild()
	}
	return nil
}

// rebuiltTables estimates the tables a rebuild would leave: the store's
// bytes in tables of bulkTableSize, the smaller size a writer leaves. A
// store of a few hundred full tables is simply large (its open cost grows
// with its size, not with the number of commands run), and rebuilding it
// would only give as many tables again, at every writer's close.
func (s *Store) rebuiltTables() int {
	d := s.maint()
	if d == nil {
		return 0
	}
	return int(d.Size()/badgerkv.BulkTableSize) + 1
}

// residentFlattenL0 is the level-0 table count at which the resident store
// process merges level 0 between two writers: it may go long without the
// idle close that would merge it, and every read checks level 0's tables.
// A variable so that tests can lower it.
var residentFlattenL0 = 4 * flattenL0

// tidy merges level 0 once it holds residentFlattenL0 tables. The resident
// process calls it after a writer's last answer, under the writer's lock.
func (s *Store) tidy() error {
	if s.closed || s.eng == nil || !s.rw {
		return nil
	}
	if _, l0 := s.Tables(); l0 >= residentFlattenL0 && s.roomToMerge() {
		return s.flatten()
	}
	return nil
}

// rebuild streams the store into Dir/db.new and swaps it in (badger.md
// §2.5). It closes s.eng. A crash at any step leaves a state recoverRebuild
// repairs.
func (s *Store) rebuild() error { return s.rebuildKeeping(nil) }

// rebuildKeeping is rebuild of the keys keep takes (nil: all of them).
func (s *Store) rebuildKeeping(keep func(key []byte) bool) error {
	d := s.maint()
	if d == nil {
		return errNoMaintenance
	}
	s.mapMu.Lock() // s.eng closes
	defer s.mapMu.Unlock()
	newDir := filepath.Join(s.dir, "db.new")
	if err := os.RemoveAll(newDir); err != nil {
		return mapErr("rebuild", err)
	}
	dst, err := badgerkv.Open(badgerkv.Config{Dir: newDir, Sync: s.sync, Rebuild: true})
	if err != nil {
		return mapErr("rebuild", err)
	}
	// The copy maps every table it reads and writes: a purge of a 158 MB
	// store peaked at 817 MiB, mostly those pages. Page them out as it goes.
	err = releasing(func() error { return d.CopyTo(dst, keep) }, func() {
		for _, dir := range []string{s.dbDir(), newDir} {
			_, _ = badgerkv.ReleaseTablePages(dir, func(uint64) bool { return false })
		}
	})
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.RemoveAll(newDir)
		return mapErr("rebuild", err)
	}
	err = s.eng.Close()
	s.setEngine(nil)
	if err != nil {
		_ = os.RemoveAll(newDir)
		return mapErr("close", err)
	}
	return mapErr("rebuild", swapRebuilt(s.dir))
}

// swapRebuilt moves db.new into place: db -> db.old, db.new -> db, fsync,
// remove db.old.
func swapRebuilt(dir string) error {
	db, newDir, old := filepath.Join(dir, "db"), filepath.Join(dir, "db.new"), filepath.Join(dir, "db.old")
	if err := os.RemoveAll(old); err != nil {
		return err
	}
	if err := os.Rename(db, old); err != nil {
		return err
	}
	if err := os.Rename(newDir, db); err != nil {
		_ = os.Rename(old, db)
		return err
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

// recoverRebuild finishes or undoes a rebuild that a crash interrupted. It
// runs under the exclusive lock before Badger opens.
func recoverRebuild(dir string) error {
	db, newDir, old := filepath.Join(dir, "db"), filepath.Join(dir, "db.new"), filepath.Join(dir, "db.old")
	if !exists(db) {
		switch {
		case exists(old) && exists(newDir):
			// Died between the renames: db.new was complete (both stores
			// were closed before the first rename).
			if err := os.Rename(newDir, db); err != nil {
				return mapErr("recover rebuild", err)
			}
		case exists(old):
			if err := os.Rename(old, db); err != nil {
				return mapErr("recover rebuild", err)
			}
		default:
			return nil
		}
		if err := syncDir(dir); err != nil {
			return mapErr("recover rebuild", err)
		}
	}
	// With db in place, db.new is an unfinished copy and db.old a finished
	// swap's leftover.
	for _, p := range []string{newDir, old} {
		if exists(p) {
			if err := os.RemoveAll(p); err != nil {
				return mapErr("recover rebuild", err)
			}
		}
	}
	return nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
