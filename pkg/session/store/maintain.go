package store

import (
	"context"
	"os"
	"path/filepath"

	"github.com/dgraph-io/badger/v4"
)

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
	var size int64
	for _, l := range s.db.Levels() {
		size += l.Size
	}
	return int(size/bulkTableSize) + 1
}

// residentFlattenL0 is the level-0 table count at which the resident store
// process merges level 0 between two writers: it may go long without the
// idle close that would merge it, and every read checks level 0's tables.
// A variable so that tests can lower it.
var residentFlattenL0 = 4 * flattenL0

// tidy merges level 0 once it holds residentFlattenL0 tables. The resident
// process calls it after a writer's last answer, under the writer's lock.
func (s *Store) tidy() error {
	if s.closed || s.db == nil || !s.rw {
		return nil
	}
	if _, l0 := s.Tables(); l0 >= residentFlattenL0 && s.roomToMerge() {
		return s.flatten()
	}
	return nil
}

// rebuild streams the store into Dir/db.new and swaps it in (badger.md
// §2.5). It closes s.db. A crash at any step leaves a state recoverRebuild
// repairs.
func (s *Store) rebuild() error {
	s.mapMu.Lock() // s.db closes
	defer s.mapMu.Unlock()
	newDir := filepath.Join(s.dir, "db.new")
	if err := os.RemoveAll(newDir); err != nil {
		return mapErr("rebuild", err)
	}
	opt := badgerOptions(newDir, false, s.sync)
	// StreamWriter sizes tables as BaseTableSize×multiplier^(levels-2):
	// 64 MB tables by default, which every later append would rewrite.
	opt.TableSizeMultiplier = 1
	dst, err := badger.Open(opt)
	if err != nil {
		return mapErr("rebuild", err)
	}
	err = copyStore(s.db, dst)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.RemoveAll(newDir)
		return mapErr("rebuild", err)
	}
	err = s.db.Close()
	s.db = nil
	if err != nil {
		_ = os.RemoveAll(newDir)
		return mapErr("close", err)
	}
	return mapErr("rebuild", swapRebuilt(s.dir))
}

func copyStore(src, dst *badger.DB) error {
	sw := dst.NewStreamWriter()
	if err := sw.Prepare(); err != nil {
		return err
	}
	st := src.NewStream()
	st.NumGo = 2 // the default 8 peaked at 400-500 MB RSS
	st.LogPrefix = "wc: rebuild"
	st.Send = sw.Write
	if err := st.Orchestrate(context.Background()); err != nil {
		sw.Cancel()
		return err
	}
	return sw.Flush()
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
