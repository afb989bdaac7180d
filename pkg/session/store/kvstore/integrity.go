package kvstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
	"github.com/wctoolkit/wc/pkg/session/store/storedir"
)

// Badger trusts its files: a MANIFEST it cannot find is created afresh
// (and every table it does not list is then deleted, by readers too), a
// MANIFEST cut short is taken for a torn write and truncated, a table whose
// footer is damaged panics the goroutine that opens it, and a read-write
// open truncates the last value log at its first bad entry. So before
// Badger opens the store, wc looks at the files itself, and refuses a
// store whose files cannot be what Badger wrote; what wc reads afterwards
// Badger verifies (block and value checksums, see badgerOptions).

// dbFiles is what db/ holds, by kind.
type dbFiles struct {
	manifest bool
	tables   map[uint64]tableStamp // by id
	vlogs    map[uint32]int64      // fid: size
	mems     int                   // memtable files: a writer was killed
}

// tableStamp tells a table file's content changed: a table is never
// written again once made, and any write changes its ctime, which no one
// can set.
type tableStamp struct {
	size, ino, ctime, mtime int64
}

func stampOf(fi fs.FileInfo) tableStamp {
	t := tableStamp{size: fi.Size()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		t.ino, t.ctime, t.mtime = int64(st.Ino), st.Ctim.Nano(), st.Mtim.Nano()
	}
	return t
}

// noFollow opens a store's files only if they are no symbolic link.
const noFollow = syscall.O_NOFOLLOW

// listDB lists db/, refusing what Badger would follow or mistake: only
// regular files (never a symlink) of the store's owner, which only the
// owner may write.
func listDB(dbDir string, owner int) (dbFiles, error) {
	f := dbFiles{tables: map[uint64]tableStamp{}, vlogs: map[uint32]int64{}}
	entries, err := os.ReadDir(dbDir)
	if err != nil {
		return f, mapErr("open", err)
	}
	for _, e := range entries {
		name := e.Name()
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return f, mapErr("open", err)
		}
		if err := storedir.CheckEntry(filepath.Join(dbDir, name), info, owner, 0); err != nil {
			return f, err
		}
		switch {
		case name == "MANIFEST":
			f.manifest = true
		case strings.HasSuffix(name, ".sst"):
			if id, err := strconv.ParseUint(strings.TrimSuffix(name, ".sst"), 10, 64); err == nil {
				f.tables[id] = stampOf(info)
			}
		case strings.HasSuffix(name, ".vlog"):
			if fid, err := strconv.ParseUint(strings.TrimSuffix(name, ".vlog"), 10, 32); err == nil {
				f.vlogs[uint32(fid)] = info.Size()
			}
		case strings.HasSuffix(name, ".mem"):
			f.mems++
		}
	}
	return f, nil
}

// holdsData reports whether Badger has written anything but the files it
// creates first.
func (f *dbFiles) holdsData() bool {
	if len(f.tables) > 0 || f.mems > 0 {
		return true
	}
	for _, size := range f.vlogs {
		if size > vlogHeaderSize {
			return true
		}
	}
	return false
}

const vlogHeaderSize = 20 // a value log's key id and IV

// inspection is what inspectDB found that the open must act on.
type inspection struct {
	// leftovers: tables no MANIFEST lists, which a killed writer left and
	// Badger deletes at its next open, a reader's included: a reader must
	// recover the store as a writer instead.
	leftovers bool
	// verified: the tables the MANIFEST lists, each verified whole, now or
	// by a writer before (see verifiedRecord).
	verified map[uint64]tableStamp
}

// inspectDB refuses a db/ whose files cannot be what Badger wrote. Every
// table the MANIFEST lists is verified whole, block by block, unless a
// writer recorded it verified since it last changed (known): Badger's
// reads check each block too, but a block that fails ends an iteration
// or a lookup as if there were no more keys, and a damaged table can
// panic the goroutine that opens it. With write, the open is read-write
// and also checks the value log Badger would truncate.
func inspectDB(storeDir string, owner int, write bool, known map[uint64]tableStamp) (inspection, error) {
	var in inspection
	dbDir := filepath.Join(storeDir, "db")
	files, err := listDB(dbDir, owner)
	if err != nil {
		return in, err
	}
	damaged := func(format string, args ...any) error {
		return store.DamagedStore(storeDir, fmt.Sprintf(format, args...))
	}
	if !files.manifest {
		if files.holdsData() {
			return in, damaged("its db/MANIFEST, which lists its tables, is missing")
		}
		return in, nil // a store Badger is creating, or has just created
	}
	m, err := readManifest(storeDir)
	if err != nil {
		return in, err
	}
	in.verified = make(map[uint64]tableStamp, len(m))
	for _, id := range slices.Sorted(maps.Keys(m)) {
		stamp, ok := files.tables[id]
		if !ok {
			return in, damaged("its table db/%06d.sst is missing", id)
		}
		if known[id] != stamp && badgerkv.VerifyReads {
			if err := badgerkv.VerifyTable(tablePath(dbDir, id), m[id]); err != nil {
				return in, damaged("its table db/%06d.sst is damaged (%v)", id, err)
			}
		}
		in.verified[id] = stamp
	}
	var unlisted []uint64
	for id := range files.tables {
		if _, ok := m[id]; !ok {
			unlisted = append(unlisted, id)
		}
	}
	if len(unlisted) > 0 {
		in.leftovers = true
		// A killed memtable flush leaves its table and its memtable file;
		// a killed merge leaves tables of data the listed ones still hold.
		// A table of newer data than every listed one, with no memtable
		// file, is one the MANIFEST lost.
		if files.mems == 0 {
			if err := checkUnlisted(storeDir, m, unlisted); err != nil {
				return in, err
			}
		}
	}
	if write && len(files.vlogs) > 0 {
		last := slices.Max(slices.Collect(maps.Keys(files.vlogs)))
		if off, err := scanValueLog(filepath.Join(dbDir, fmt.Sprintf("%06d.vlog", last)), true); err != nil {
			return in, damaged("its value log db/%06d.vlog is damaged at byte %d", last, off)
		}
	}
	return in, nil
}

func tablePath(dbDir string, id uint64) string {
	return filepath.Join(dbDir, fmt.Sprintf("%06d.sst", id))
}

// readManifest replays db/MANIFEST as Badger does, without writing it.
func readManifest(storeDir string) (map[uint64]badgerkv.Compression, error) {
	path := filepath.Join(storeDir, "db", "MANIFEST")
	fp, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, mapErr("open", err)
	}
	defer fp.Close()
	damaged := func(what string) error {
		return store.DamagedStore(storeDir, "its db/MANIFEST, which lists its tables, "+what)
	}
	var head [8]byte
	if _, err := io.ReadFull(fp, head[:]); err != nil || string(head[:4]) != "Bdgr" {
		return nil, damaged("is damaged (no Badger header)")
	}
	switch ext := binary.BigEndian.Uint16(head[4:6]); {
	case ext == badgerkv.ExternalMagic:
	case ext == 0:
		return nil, notStoreError(storeDir, false) // Badger's, not wc's
	default:
		return nil, damaged("is damaged (its header)")
	}
	if _, err := fp.Seek(0, io.SeekStart); err != nil {
		return nil, mapErr("open", err)
	}
	m, err := badgerkv.ReplayManifest(fp)
	if err != nil {
		return nil, damaged("is damaged (" + firstLineOf(err.Error()) + ")")
	}
	return m, nil
}

// checkUnlisted refuses the store when a table the MANIFEST does not list
// holds data newer than every table it lists: the MANIFEST lost it (cut
// short at a record's end, which Badger takes for a clean end), and Badger
// would delete it. A leftover of a killed merge holds older data; one
// whose index does not verify was being written when its writer died.
func checkUnlisted(storeDir string, m map[uint64]badgerkv.Compression, unlisted []uint64) error {
	dbDir := filepath.Join(storeDir, "db")
	var listedMax uint64
	for id := range m {
		v, err := badgerkv.TableMaxVersion(tablePath(dbDir, id))
		if err != nil {
			return store.DamagedStore(storeDir, fmt.Sprintf("its table db/%06d.sst is damaged (%v)", id, err))
		}
		listedMax = max(listedMax, v)
	}
	for _, id := range unlisted {
		v, err := badgerkv.TableMaxVersion(tablePath(dbDir, id))
		if err == nil && v > listedMax {
			return store.DamagedStore(storeDir, fmt.Sprintf("its db/MANIFEST does not list db/%06d.sst, which holds its latest writes", id))
		}
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// scanValueLog checks every entry of a value log (a header of varints, the
// key, the value, a CRC-32C of them) and returns the offset of the first
// bad one. With tailOK, a bad entry followed only by zeros ends the log
// cleanly: a killed writer's, which Badger truncates there, as it does at
// any bad entry of the last log at a read-write open.
func scanValueLog(path string, tailOK bool) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	off := int64(vlogHeaderSize)
	if len(data) < vlogHeaderSize {
		return 0, errors.New("shorter than its header")
	}
	for off < int64(len(data)) {
		n := entryLen(data[off:])
		if n == 0 {
			if tailOK && allZero(data[off:]) {
				return off, nil
			}
			return off, errors.New("bad entry")
		}
		off += n
	}
	return off, nil
}

// entryLen is the length of the value-log entry at the start of b, or 0
// when it is not a whole entry with its checksum (value.go, structs.go).
func entryLen(b []byte) int64 {
	if len(b) < 2 {
		return 0
	}
	pos := 2
	var lens [3]uint64
	for i := range lens {
		v, n := binary.Uvarint(b[pos:])
		if n <= 0 {
			return 0
		}
		lens[i] = v
		pos += n
	}
	klen, vlen := lens[0], lens[1]
	if klen == 0 || klen > uint64(len(b)) || vlen > uint64(len(b)) {
		return 0
	}
	end := uint64(pos) + klen + vlen
	if end+4 > uint64(len(b)) {
		return 0
	}
	if crc32.Checksum(b[:end], castagnoli) != binary.BigEndian.Uint32(b[end:]) {
		return 0
	}
	return int64(end + 4)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
