package kvstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/storedir"
)

// Mode selects the lock and the kind of Badger open.
type Mode = store.Mode

const (
	Read  = store.Read  // shared lock, Badger ReadOnly
	Write = store.Write // exclusive lock, Badger read-write
)

// Handle is what commands do with an open store: a *Store, or a
// *remote.Client of the resident store process.
type Handle = store.Handle

var _ Handle = (*Store)(nil)

// Options locate and tune a store.
type Options struct {
	Dir         string        // store directory; Badger lives in Dir/db, our flock in Dir/lock
	LockTimeout time.Duration // how long to wait for Dir/lock; 0 = try once
	Sync        bool          // badger WithSyncWrites
	// Bulk tunes a writer for batch work over the whole store (wc-compact
	// --all): memory stays bounded by the largest session, not the store.
	// Such a handle must be used from one goroutine, and Settle called
	// between items.
	Bulk bool
	// OtherOwner reads a store another user owns (see storedir.Trust): only
	// for Read, and nothing is written there, not even the lock file.
	OtherOwner bool
	// Engine opens the store on an engine shared by many machines (etcd)
	// instead of a directory: no lock, no Badger maintenance; each session's
	// commits are checked against what the handle read (shared.go).
	// Dir is then unused, and Name names the store in errors.
	Engine kv.Engine
	Name   string
	// resident: the resident store process opens it, and leaves the
	// turnstile to the commands that open the store themselves.
	resident bool
}

// RebuildThreshold is the table count above which a writer rebuilds the
// store before closing: per-session key ranges never overlap, so compaction
// never merges their tables and open time grows with the count
// (badger.md §2.5). A variable so that tests can lower it.
var RebuildThreshold = 256

// flattenL0 is the level-0 table count at which a writer flattens before
// closing; each writer adds one L0 table and never lives long enough for
// Badger's compactors to start (badger.md §2.4).
const flattenL0 = 8

// 2: the listing exists and every metadata write keeps it (a wc that
// does not would leave it stale, so it must refuse the store). 3: nodes
// may be references to others (repeats.go). 4: the metadata sorts last
// in its session and each listing shard after its sessions (keys.go);
// every writer moves an older store to it (layout.go). 5: listing
// summaries carry the import source (record.summaryVersion 2); a
// writer rewrites the listing of a store of schema 4.
const schemaVersion = 5

// Store is an open store. Its methods may be called from several goroutines,
// except Close.
type Store struct {
	dir       string
	mode      Mode
	sync      bool
	rebuildAt int

	lock       *os.File
	turnstile  *os.File              // see holdTurnstile
	owner      int                   // the uid the store belongs to
	otherOwner bool                  // another user's store, only read (Options.OtherOwner)
	eng        kv.Engine             // the database (badgerkv); nil when a reader found no store
	verified   map[uint64]tableStamp // the tables found verified at the open
	reserved   bool                  // the lock file holds closeReserve (see space.go)
	// poisoned: Badger panicked on damaged data and may hold its locks;
	// the handle answers nothing more and Close leaves Badger as a crash
	// would.
	poisoned atomic.Bool
	rw       bool        // db is read-write (a writer, or a reader that recovered a crash)
	wrote    atomic.Bool // this handle committed something, so Close flushes one more table

	closed   bool
	lastTxns atomic.Int64 // transactions the last Commit used (tests)

	bulk       bool
	moved      atomic.Int64 // bytes read and written since the last settle (bulk)
	settled    int          // times Settle did its work (tests)
	sinceMerge int          // Settle's releases since it last merged level 0
	// mapMu is held shared while table pages are released and exclusively
	// while the database closes.
	mapMu sync.RWMutex
	// shared: opened on Options.Engine, without a lock (shared.go).
	shared *sharedState
	// segments: the search index's decoded segments (textcache.go).
	segments *segmentCache
}

func (s *Store) dbDir() string { return filepath.Join(s.dir, "db") }

// setEngine makes e the handle's database.
func (s *Store) setEngine(e kv.Engine) { s.eng = e }

// Open opens the store in Dir. A writer creates Dir (0700) when missing; a
// reader never creates anything and sees an empty store instead.
func Open(opts Options, mode Mode) (*Store, error) {
	if opts.Engine != nil {
		return openShared(opts, mode)
	}
	if opts.Dir == "" {
		return nil, errors.New("store: no store directory given")
	}
	deadline := time.Now().Add(opts.LockTimeout)
	s := &Store{dir: filepath.Clean(opts.Dir), mode: mode, sync: opts.Sync, rebuildAt: RebuildThreshold, bulk: opts.Bulk,
		otherOwner: opts.OtherOwner, segments: newSegmentCache(segmentCacheChunks)}
	if s.otherOwner && mode != Read {
		return nil, errors.New("store: another user's store can only be read")
	}
	owner, err := storedir.CheckStore(s.dir, storedir.Trust{OtherOwner: s.otherOwner})
	if err != nil {
		return nil, err
	}
	s.owner = owner

	fi, err := os.Stat(s.dir)
	switch {
	case err == nil && !fi.IsDir():
		return nil, notStoreError(s.dir, true)
	case err == nil:
		if err := checkOurs(s.dir); err != nil {
			return nil, err
		}
	case errors.Is(err, fs.ErrNotExist):
		if mode == Read {
			return s, nil
		}
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			return nil, mapErr("create store", err)
		}
		// MkdirAll's mode is filtered by the umask; the store holds
		// transcripts, so make it private whatever the umask.
		if err := os.Chmod(s.dir, 0o700); err != nil {
			return nil, mapErr("create store", err)
		}
	default:
		return nil, mapErr("open", err)
	}

	if mode == Read && !exists(filepath.Join(s.dir, "lock")) && !exists(s.dbDir()) {
		return s, nil
	}
	if !opts.resident {
		if s.turnstile, err = holdTurnstile(s.dir); err != nil {
			return nil, err
		}
	}
	if err := s.openLock(); err != nil {
		s.releaseTurnstile()
		return nil, err
	}
	if mode == Write {
		err = s.openWrite(deadline)
	} else {
		err = s.openRead(deadline)
	}
	if err != nil {
		s.unlock()
		s.releaseTurnstile()
		return nil, err
	}
	if s.bulk {
		s.releasePages() // what opening mapped since the last tick
	}
	return s, nil
}

// checkOurs refuses a non-empty directory that holds neither our lock nor a
// db, so that a mistyped --store never scribbles into a user's directory.
func checkOurs(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return mapErr("open", err)
	}
	defer f.Close()
	empty := true
	for {
		names, err := f.Readdirnames(256)
		for _, n := range names {
			empty = false
			if !storeEntries[n] {
				return foreignDirError(dir, n)
			}
		}
		if err == io.EOF || len(names) == 0 {
			break
		}
		if err != nil {
			return mapErr("open", err)
		}
	}
	if empty {
		return nil
	}
	// db, when there, must be Badger's directory, holding nothing but
	// Badger's files (another command may be creating them right now). A
	// project's own db/ folder is not ours to write in.
	fi, err := os.Stat(filepath.Join(dir, "db"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return mapErr("open", err)
	case !fi.IsDir():
		return foreignDirError(dir, "db, a file")
	}
	entries, err := os.ReadDir(filepath.Join(dir, "db"))
	if err != nil {
		return mapErr("open", err)
	}
	for _, e := range entries {
		if !isBadgerFile(e.Name()) {
			return foreignDirError(dir, filepath.Join("db", e.Name()))
		}
	}
	return nil
}

// isBadgerFile reports whether name is one of the files Badger keeps.
func isBadgerFile(name string) bool {
	switch name {
	case "MANIFEST", "MANIFEST-REWRITE", "KEYREGISTRY", "REWRITE-KEYREGISTRY", "LOCK", "DISCARD":
		return true
	}
	for _, ext := range []string{".sst", ".vlog", ".mem"} {
		if base, ok := strings.CutSuffix(name, ext); ok && base != "" && strings.Trim(base, "0123456789") == "" {
			return true
		}
	}
	return false
}

// storeEntries are the only names a store directory holds.
var storeEntries = map[string]bool{"lock": true, "db": true, "db.new": true, "db.old": true, "wcd.sock": true}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// openLock opens Dir/lock, never through a symbolic link, creating it
// only in a store of this user's.
func (s *Store) openLock() error {
	path := filepath.Join(s.dir, "lock")
	var f *os.File
	err := fs.ErrPermission
	if !s.otherOwner {
		f, err = os.OpenFile(path, os.O_CREATE|os.O_RDWR|noFollow, 0o600)
	}
	if err != nil && s.mode == Read && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)) {
		f, err = os.OpenFile(path, os.O_RDONLY|noFollow, 0) // a read-only store can still be read
		if errors.Is(err, fs.ErrNotExist) && s.otherOwner {
			return nil // Badger's own lock keeps its writers out
		}
	}
	if err != nil {
		return mapErr("open lock", err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = storedir.CheckEntry(path, fi, s.owner, 0)
	}
	if err != nil {
		f.Close()
		return err
	}
	if fi.Mode().Perm() != 0o600 && !s.otherOwner {
		_ = f.Chmod(0o600)
	}
	s.lock = f
	return nil
}

func (s *Store) openWrite(deadline time.Time) error {
	if err := s.flock(syscall.LOCK_EX, deadline); err != nil {
		return err
	}
	if err := recoverRebuild(s.dir); err != nil {
		return err
	}
	if err := removeEmptyLogs(s.dbDir()); err != nil {
		return err
	}
	if exists(s.dbDir()) {
		in, err := inspectDB(s.dir, s.owner, true, readVerified(s.lock).tables)
		if err != nil {
			return err
		}
		s.verified = in.verified
	}
	if err := s.roomFor(0); err != nil {
		return err // a read-write open writes, through maps (space.go)
	}
	db, err := s.openBadger(false, deadline)
	if err != nil {
		return err
	}
	s.setEngine(db)
	s.rw = true
	s.holdCloseReserve()
	if err := s.checkSchema(); err != nil {
		_ = db.Close()
		s.setEngine(nil)
		return err
	}
	return nil
}

func (s *Store) openRead(deadline time.Time) error {
	if err := s.flock(syscall.LOCK_SH, deadline); err != nil {
		return err
	}
	// Checked under the lock: a rebuild swaps db only under the exclusive one.
	if !exists(s.dbDir()) {
		if exists(filepath.Join(s.dir, "db.old")) {
			return s.recoverFirst(deadline) // a rebuild died mid-swap
		}
		s.unlock()
		return nil
	}
	in, err := inspectDB(s.dir, s.owner, false, readVerified(s.lock).tables)
	if err != nil {
		return err
	}
	s.verified = in.verified
	// Badger's open would write to what a killed writer left (and delete
	// the tables it left): recover it first, as a writer.
	if in.leftovers || killedWriterLeft(s.dbDir()) {
		return s.recoverFirst(deadline)
	}
	db, err := s.openBadger(true, deadline)
	if err != nil {
		// After a writer crashed, ReadOnly refuses until a read-write
		// open replays the WAL; an empty db has no manifest yet.
		msg := err.Error()
		if strings.Contains(msg, "Log truncate required") || strings.Contains(msg, "no manifest found") {
			return s.recoverFirst(deadline)
		}
		return err
	}
	s.setEngine(db)
	if err := s.checkSchema(); err != nil {
		_ = db.Close()
		s.setEngine(nil)
		if errors.Is(err, errMigrate) {
			return s.upgradeToMove(deadline)
		}
		return err
	}
	return nil
}

// recoverFirst upgrades a reader to recover what a killed writer left. One
// that cannot write there (another user's store, a read-only file system)
// says that the store needs a writer.
func (s *Store) recoverFirst(deadline time.Time) error {
	const needs = "store %s needs a writer to recover it: a wc command that writes, run by its owner where the store can be written (a writer was killed while it wrote)"
	if s.otherOwner {
		return fmt.Errorf(needs, s.dir)
	}
	err := s.upgrade(deadline)
	if errors.Is(err, ErrNoSpace) {
		return &store.KindError{Msg: fmt.Sprintf("store %s needs a writer to recover it (a writer was killed while it wrote), and there is no space left on its device", s.dir),
			Kind: ErrNoSpace, Hints: []string{"free space on that file system; the next command recovers it"}}
	}
	if err == nil || !cannotWrite(err) {
		return err
	}
	return fmt.Errorf(needs, s.dir)
}

// upgrade trades the shared lock for the exclusive one and opens read-write
// once; the handle then serves the reader (badger.md §1.6).
// emptyLogs lists zero-length value-log and memtable files: a writer killed
// between creating one and sizing it leaves it behind, and Badger then
// refuses every open. Empty, they hold nothing any table can point into.
func emptyLogs(dbDir string) []string {
	var out []string
	for _, pattern := range []string{"*.vlog", "*.mem"} {
		matches, _ := filepath.Glob(filepath.Join(dbDir, pattern))
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
				out = append(out, m)
			}
		}
	}
	return out
}

// killedWriterLeft reports, from one read of the directory, what only a
// writer killed mid-command leaves for a reader: a zero-length value log
// (see emptyLogs), or any memtable file. Badger removes each memtable file
// at a clean close; a ReadOnly open that replays one empty (a recovery
// killed after cutting it to its header) tries to remove it through its
// read-only descriptor, and logs the failure at every reader's open.
func killedWriterLeft(dbDir string) bool {
	entries, _ := os.ReadDir(dbDir)
	for _, e := range entries {
		switch name := e.Name(); {
		case strings.HasSuffix(name, ".mem"):
			return true
		case strings.HasSuffix(name, ".vlog"):
			if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
				return true
			}
		}
	}
	return false
}

// removeEmptyLogs clears what a killed writer left; called only under the
// exclusive lock, before a read-write open.
func removeEmptyLogs(dbDir string) error {
	for _, f := range emptyLogs(dbDir) {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return mapErr("recover", err)
		}
	}
	return nil
}

// upgradeToMove upgrades a reader to move a store of an older schema. One
// that cannot write there (another user's store, a read-only file system)
// says what the store needs.
func (s *Store) upgradeToMove(deadline time.Time) error {
	err := errors.New("permission denied")
	if !s.otherOwner {
		err = s.upgrade(deadline)
	}
	if err == nil || !cannotWrite(err) {
		return err
	}
	return fmt.Errorf("store %s was written by an older wc: run a wc command that can write there once, to move it to schema %d (%v)", s.dir, schemaVersion, err)
}

// writeDenied is a read-write open the file system refused.
type writeDenied struct{ msg string }

func (e *writeDenied) Error() string        { return e.msg }
func (e *writeDenied) Is(target error) bool { return target == fs.ErrPermission }

// cannotWrite tells a refused write access (Badger words its own).
func cannotWrite(err error) bool {
	msg := err.Error()
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) ||
		strings.Contains(msg, "permission denied") || strings.Contains(msg, "read-only file system")
}

func (s *Store) upgrade(deadline time.Time) error {
	if err := storedir.Flock(s.lock, syscall.LOCK_UN); err != nil {
		return mapErr("lock", err)
	}
	return s.openWrite(deadline)
}

// openBadger retries while a foreign process (the badger CLI, a debugger)
// holds Badger's own non-blocking directory lock.
func (s *Store) openBadger(readOnly bool, deadline time.Time) (kv.Engine, error) {
	opt := badgerkv.Config{Dir: s.dbDir(), ReadOnly: readOnly, Sync: s.sync, Bulk: s.bulk}
	delay := 5 * time.Millisecond
	for {
		db, err := s.tryOpenBadger(opt)
		if err == nil {
			return db, nil
		}
		switch {
		case errors.Is(err, badgerkv.ErrLocked):
			if time.Until(deadline) < delay {
				return nil, busyError(s.dir)
			}
			time.Sleep(delay)
			delay = min(2*delay, 100*time.Millisecond)
			continue
		case errors.Is(err, badgerkv.ErrForeign):
			return nil, notStoreError(s.dir, false)
		case errors.Is(err, ErrDamaged):
			return nil, err
		case badgerkv.IsDamage(err):
			return nil, store.DamagedStore(s.dir, "Badger's open found "+badgerkv.Message(err))
		case cannotWrite(err):
			return nil, &writeDenied{fmt.Sprintf("store %s cannot be written: %s", s.dir, badgerkv.Message(err))}
		}
		return nil, mapErr("open", err)
	}
}

// openEngine is badgerkv.Open as a kv.Engine: a nil *badgerkv.Engine is
// no engine.
func openEngine(c badgerkv.Config) (kv.Engine, error) {
	e, err := badgerkv.Open(c)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// tryOpenBadger opens Badger once. A panic on its goroutine, on damaged
// data, is the error of a damaged store.
func (s *Store) tryOpenBadger(opt badgerkv.Config) (e kv.Engine, err error) {
	defer s.panicked("opening it", &err)
	if s.poisoned.Load() {
		return nil, errPoisoned
	}
	if s.bulk {
		// Opening reads the index and last block of every table, which
		// maps about 70 KB of each: 134 MB for a 1.6 GB store. No table
		// is pinned yet, so they are paged out (see badgerkv.ReleaseTablePages).
		dir := s.dbDir()
		err = releasing(func() (err error) { e, err = openEngine(opt); return err },
			func() { _, _ = badgerkv.ReleaseTablePages(dir, func(uint64) bool { return false }) })
		return e, err
	}
	return openEngine(opt)
}

// checkSchema refuses stores written by a newer format, stamps new ones, and
// has a writer move a store of an older one to this layout (layout.go). A
// reader of such a store gets errMigrate, and upgrades to do it.
func (s *Store) checkSchema() error {
	var raw []byte
	err := s.eng.View(func(txn kv.Txn) error {
		item, err := txn.Get(schemaKey)
		if err != nil {
			return err
		}
		raw, err = copyValue(item)
		return err
	})
	var v schemaRecordJSON
	switch {
	case errors.Is(err, kv.ErrNotFound):
		empty, err := s.empty()
		if err != nil {
			return mapErr("open", err)
		}
		if empty {
			if !s.rw {
				return nil // a reader cannot stamp; the first writer will
			}
			return mapErr("create store", s.stampSchema(false))
		}
		v.Schema = 1 // a wc before the listing wrote it
	case err != nil:
		return mapErr("open", err)
	default:
		if err := json.Unmarshal(raw, &v); err != nil {
			return errors.New("store: schema record is corrupt")
		}
	}
	switch {
	case v.Schema > schemaVersion:
		return fmt.Errorf("store schema %d is newer than this wc understands", v.Schema)
	case v.Schema == schemaVersion && !v.Legacy:
	case !s.rw:
		return errMigrate
	case v.Schema == schemaVersion:
		if err := s.dropLegacy(); err != nil {
			return mapErr("move the store to schema 4", err)
		}
	case v.Schema == 4:
		// The layout of schema 5, with the summaries of schema 4.
		err := s.relist()
		if err == nil && v.Legacy {
			err = s.dropLegacy() // stamps the schema
		} else if err == nil {
			err = s.stampSchema(false)
		}
		if err != nil {
			return mapErr("move the store to schema 5", err)
		}
	default:
		if err := s.migrate(); err != nil {
			return err
		}
	}
	return nil
}

// errMigrate tells a reader that the store must be moved to this schema.
var errMigrate = errors.New("store: written by an older wc")

// empty reports whether the store holds no key at all.
func (s *Store) empty() (bool, error) {
	empty := true
	err := s.eng.View(func(txn kv.Txn) error {
		it := txn.Iterate(kv.IterOptions{})
		defer it.Close()
		it.Seek(nil)
		empty = !it.Valid()
		return nil
	})
	return empty, err
}

// Exists is false when a reader opened a store that does not exist yet.
func (s *Store) Exists() bool { return s.eng != nil }

// Tables counts Badger's tables: all of them, and those in level 0.
func (s *Store) Tables() (total, level0 int) {
	d := s.maint()
	if d == nil {
		return 0, 0
	}
	return d.Tables()
}

// Close keeps the table count bounded (writers only), closes Badger and only
// then releases the lock. It returns the first error.
func (s *Store) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var first error
	if s.poisoned.Load() {
		// As a crash leaves it: Badger's next open recovers what it wrote.
		s.setEngine(nil)
		s.unlock()
		return errPoisoned
	}
	if s.eng != nil {
		if s.rw {
			first = s.maintainGuarded()
		}
		if s.poisoned.Load() {
			s.setEngine(nil) // left as a crash leaves it
		}
		if s.eng != nil {
			s.mapMu.Lock()
			s.releaseCloseReserve() // room for the memtable's flush
			err := s.eng.Close()
			if first == nil {
				first = mapErr("close", err)
			}
			s.setEngine(nil)
			s.mapMu.Unlock()
			if err == nil {
				s.recordVerified()
			}
		}
		if s.bulk && s.rw && s.shared == nil {
			warmTableEnds(s.dbDir())
		}
	}
	s.unlock()
	return first
}

// maintainGuarded is maintain, whose merges read every table they merge:
// a panic there on damaged data poisons the handle.
func (s *Store) maintainGuarded() (err error) {
	defer s.panicked("merging its tables", &err)
	return s.maintain()
}

// warmTableEnds reads the end of every table back into the page cache: a
// bulk handle paged its tables out, and the next open reads each table's
// index and last block, from disk, several times slower than warm
// (BenchmarkOpenCloseLarge). Reading puts them in the cache without mapping them.
func warmTableEnds(dbDir string) {
	names, _ := filepath.Glob(filepath.Join(dbDir, "*.sst"))
	buf := make([]byte, 128<<10)
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		if fi, err := f.Stat(); err == nil {
			_, _ = f.ReadAt(buf, max(0, fi.Size()-int64(len(buf))))
		}
		f.Close()
	}
}

func (s *Store) writable() error {
	switch {
	case s.closed:
		return errClosed
	case s.mode != Write:
		return errReadOnly
	}
	return nil
}

var (
	errClosed  = errors.New("store: used after close")
	errNoStore = errors.New("store: no store") // a reader's store does not exist yet
)

// view runs fn in a read transaction.
func (s *Store) view(fn func(txn kv.Txn) error) (err error) {
	switch {
	case s.closed:
		return errClosed
	case s.poisoned.Load():
		return errPoisoned
	case s.eng == nil:
		return errNoStore
	}
	defer s.panicked("a read", &err)
	return s.eng.View(fn)
}

// errPoisoned answers every use of a handle after a panic.
var errPoisoned = &store.KindError{Msg: "store: the store is damaged: an earlier read failed", Kind: store.ErrDamaged}

// A bulk handle releases the table pages it mapped each time it has read
// and written settleReleaseBytes, and merges level 0 each settleMergeBytes:
// the tables its writes create are mapped as they are written.
const (
	settleReleaseBytes = 16 << 20
	settleMergeBytes   = 64 << 20
)

// Settle is called by a batch between its items. It keeps memory bounded
// by the largest item rather than by the store: once a bulk handle has
// moved settleReleaseBytes since the last time, it releases the table
// pages it mapped, and once it has moved settleMergeBytes it first merges
// level 0 into the store's level.
func (s *Store) Settle() error {
	if s.closed {
		return errClosed
	}
	if !s.bulk || s.eng == nil || s.moved.Load() < settleReleaseBytes {
		return nil
	}
	s.moved.Store(0)
	s.settled++
	if s.sinceMerge++; s.sinceMerge >= settleMergeBytes/settleReleaseBytes {
		s.sinceMerge = 0
		if _, l0 := s.Tables(); s.rw && l0 >= flattenL0 && s.roomToMerge() {
			if err := s.flatten(); err != nil {
				return err
			}
		}
	}
	s.releasePages()
	return nil
}

// flatten merges level 0 into the store's one level (badger.md §2.4). No
// writer runs Badger's background compactors, so a store written by wc
// alone has a single level and this rewrites the tables level 0 overlaps:
// few, unless a level-0 table spans the store (an import of many sessions,
// a resident process's memtable). Table pages are released while it runs,
// or such a merge would map all it reads and writes.
func (s *Store) flatten() error {
	d := s.maint()
	if d == nil {
		return nil
	}
	return mapErr("flatten", releasing(d.Flatten, func() { s.releasePages() }))
}

// releasing runs fn, and release every 100 ms until fn returns.
func releasing(fn func() error, release func()) error {
	done := make(chan struct{})
	released := make(chan struct{})
	go func() {
		defer close(released)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				release()
			}
		}
	}()
	err := fn()
	close(done)
	<-released
	return err
}

// listReleaseEvery is how many sessions List reads between releases of the
// table pages it touched.
const listReleaseEvery = 128

// releaseEvery is how much a long read takes in before it releases the
// table pages it touched; a variable so that tests can lower it.
var releaseEvery = 4 << 20

// releasePages drops from this process the table pages it has touched (see
// badgerkv.ReleaseTablePages), best effort, and returns how many mappings it found.
// Discarding a table's pages is safe only while the table stays open: one
// closed meanwhile (a merge's input) is unmapped, and its range could hold
// other memory by the time of the madvise. So:
//   - a read-only handle closes no table before Close, which waits for
//     mapMu: all are safe;
//   - a bulk handle's merges run while it reads, on another goroutine:
//     none is pinned, all are paged out. Pinning needs db.Tables, which
//     reads every table's index and maps 64 KB of each (fault-around):
//     140 MB for a 2 GB store, at each release;
//   - a read-write handle pins the tables live before and after an
//     iterator was made, which holds them open.
func (s *Store) releasePages() int {
	s.mapMu.RLock() // s.eng stays open
	defer s.mapMu.RUnlock()
	d := s.maint()
	if d == nil {
		return 0
	}
	var pinned func(uint64) bool
	switch {
	case !s.rw:
		pinned = func(uint64) bool { return true }
	case s.bulk:
		pinned = func(uint64) bool { return false }
	default:
		var unpin func()
		pinned, unpin = d.PinTables()
		defer unpin()
	}
	n, _ := badgerkv.ReleaseTablePages(s.dbDir(), pinned)
	return n
}

// syncNow makes what was committed durable without closing: the resident
// store process does it before a writer's result is printed.
func (s *Store) syncNow() error {
	d := s.maint()
	if d == nil {
		return nil
	}
	return mapErr("sync", d.Sync())
}
