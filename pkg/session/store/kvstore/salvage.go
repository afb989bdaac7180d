package kvstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
	"github.com/wctoolkit/wc/pkg/session/store/storedir"
)

// SalvageReport is what Salvage did: wc-store --salvage prints it.
type SalvageReport struct {
	Store string `json:"store"`
	Into  string `json:"into"`
	OK    bool   `json:"ok"` // every session was copied, and verified
	// Salvaged sessions were copied, every record of theirs verified.
	Salvaged []string `json:"salvaged"`
	// Unverified sessions were copied whole and consistent, but a table
	// left out whose keys nothing tells may have held later versions of
	// their records: compare them with what you remember.
	Unverified []string  `json:"unverified"`
	Lost       []Problem `json:"lost"`
	// DamagedTables were left out.
	DamagedTables []DamagedTable `json:"damaged_tables"`
}

// DamagedTable is a table Salvage left out.
type DamagedTable struct {
	Table   string `json:"table"`
	Problem string `json:"problem"`
	// From and To bound the sessions whose records it may hold (To empty:
	// to the end of the store); both are empty when nothing tells.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// Salvage copies every intact session of the store in opts.Dir, damaged
// or not, into a new store at into, and never writes to the store it
// reads. It reads the store's tables whether or not its MANIFEST lists
// them (or exists), leaving out those that fail their checksums, through
// a MANIFEST of its own in a scratch directory beside into (the tables
// linked or copied there, the value logs copied). A session is copied
// when all of its records read back and check as wc-store --check checks
// them, and none of its keys falls in a damaged table; it keeps its id,
// its whole tree and its spilled blobs.
func Salvage(opts Options, into string) (*SalvageReport, error) {
	src := filepath.Clean(opts.Dir)
	into = filepath.Clean(into)
	r := &SalvageReport{Store: src, Into: into, Salvaged: []string{}, Unverified: []string{}, Lost: []Problem{}, DamagedTables: []DamagedTable{}}
	owner, err := storedir.CheckStore(src, storedir.Trust{OtherOwner: opts.OtherOwner})
	if err != nil {
		return nil, err
	}
	if err := emptyTarget(into); err != nil {
		return nil, err
	}
	lock, err := sharedLock(src, opts)
	if err != nil {
		return nil, err
	}
	defer storedir.Unlock(lock)
	files, err := listDB(filepath.Join(src, "db"), owner)
	if err != nil {
		return nil, err
	}

	scratch, err := os.MkdirTemp(filepath.Dir(into), ".wc-salvage-")
	if err != nil {
		return nil, mapErr("salvage", err)
	}
	defer os.RemoveAll(scratch)
	ranges, err := scratchCopy(src, scratch, files, r)
	if err != nil {
		return nil, err
	}
	if err := keepSchema(scratch); err != nil {
		return nil, err
	}
	from, err := Open(Options{Dir: scratch, LockTimeout: opts.LockTimeout}, Read)
	if err != nil {
		return nil, err
	}
	defer from.Close()
	to, err := Open(Options{Dir: into, LockTimeout: opts.LockTimeout}, Write)
	if err != nil {
		return nil, err
	}
	if from.eng != nil {
		err = from.salvageInto(to, ranges, r)
	}
	if cerr := to.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	r.OK = len(r.Lost) == 0 && len(r.Unverified) == 0 && len(r.DamagedTables) == 0
	return r, nil
}

// emptyTarget refuses a salvage into anything but a new or empty directory.
func emptyTarget(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return mapErr("salvage", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("store: %s is not empty: salvage into a new directory", dir)
	}
	return nil
}

// keyRange is the keys of a damaged table, as far as its index tells.
type keyRange struct{ first, last []byte }

// scratchCopy makes the scratch store: a fresh Badger directory whose
// MANIFEST lists every table of src that verifies, all in level 0 (where
// Badger takes the newest version of a key from any table), with src's
// value logs and memtable files. It returns the key ranges of the tables
// that do not verify.
func scratchCopy(src, scratch string, files dbFiles, r *SalvageReport) ([]keyRange, error) {
	dbDir, to := filepath.Join(src, "db"), filepath.Join(scratch, "db")
	fresh, err := badgerkv.Open(badgerkv.Config{Dir: to})
	if err != nil {
		return nil, mapErr("salvage", err)
	}
	if err := fresh.Close(); err != nil {
		return nil, mapErr("salvage", err)
	}
	// Its own empty value log would stand for one of src's.
	logs, _ := filepath.Glob(filepath.Join(to, "*.vlog"))
	for _, l := range logs {
		_ = os.Remove(l)
	}
	compression := map[uint64]badgerkv.Compression{}
	m, err := readManifest(src)
	if err == nil {
		for id, c := range m {
			compression[id] = c
			if _, ok := files.tables[id]; !ok {
				r.DamagedTables = append(r.DamagedTables, DamagedTable{Table: fmt.Sprintf("db/%06d.sst", id), Problem: "missing"})
			}
		}
	}
	var ranges []keyRange
	var copied []uint64
	for _, id := range slices.Sorted(maps.Keys(files.tables)) {
		comp, ok := compression[id]
		if !ok {
			comp = badgerkv.Snappy // what every wc writes
			compression[id] = comp
		}
		path := tablePath(dbDir, id)
		if err := badgerkv.VerifyTable(path, comp); err != nil {
			dt := DamagedTable{Table: fmt.Sprintf("db/%06d.sst", id), Problem: err.Error()}
			if kr, ok := damagedRange(path, comp); ok {
				ranges = append(ranges, kr)
				dt.From, dt.To = keySession(kr.first), keySession(kr.last)
			}
			r.DamagedTables = append(r.DamagedTables, dt)
			continue
		}
		if err := linkOrCopy(path, tablePath(to, id)); err != nil {
			return nil, mapErr("salvage", err)
		}
		copied = append(copied, id)
	}
	for fid := range files.vlogs {
		name := fmt.Sprintf("%06d.vlog", fid)
		if err := copyFile(filepath.Join(dbDir, name), filepath.Join(to, name)); err != nil {
			return nil, mapErr("salvage", err)
		}
	}
	mems, _ := filepath.Glob(filepath.Join(dbDir, "*.mem"))
	for _, m := range mems {
		if err := copyFile(m, filepath.Join(to, filepath.Base(m))); err != nil {
			return nil, mapErr("salvage", err)
		}
	}
	return ranges, mapErr("salvage", badgerkv.AppendManifest(filepath.Join(to, "MANIFEST"), copied, compression))
}

// keepSchema stamps the scratch store with this wc's schema when its
// schema record was in a damaged table (it sorts first, so the first
// table holds it). Without it the scratch store reads as one of schema 1,
// whose move to this layout would take every session's keys for old ones.
// A store this wc salvages is of its schema: an older one is moved at the
// first command that opens it.
func keepSchema(scratch string) error {
	eng, err := badgerkv.Open(badgerkv.Config{Dir: filepath.Join(scratch, "db")})
	if err != nil {
		return mapErr("salvage", err)
	}
	err = eng.Update(func(txn kv.Txn) error {
		_, err := txn.Get(schemaKey)
		if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		it := txn.Iterate(kv.IterOptions{KeysOnly: true})
		defer it.Close()
		if it.Seek(nil); !it.Valid() {
			return nil // empty: the first writer stamps it
		}
		return txn.Set(schemaKey, schemaRecord(false))
	})
	if cerr := eng.Close(); err == nil {
		err = cerr
	}
	return mapErr("salvage", err)
}

// keySession is the id of the session whose range holds key ("" for a
// key of no session: the schema record, or none).
func keySession(key []byte) string {
	if len(key) < sessionKeyLen || key[0] != tagSession {
		return ""
	}
	return sid(key[1:sessionKeyLen]).String()
}

// damagedRange is the keys a damaged table holds (badgerkv.TableRange).
func damagedRange(path string, comp badgerkv.Compression) (kr keyRange, ok bool) {
	kr.first, kr.last, ok = badgerkv.TableRange(path, comp)
	return kr, ok
}

// linkOrCopy links a table (Badger never writes a table again), or copies
// it to another file system.
func linkOrCopy(from, to string) error {
	if err := os.Link(from, to); err == nil {
		return nil
	}
	return copyFile(from, to)
}

func copyFile(from, to string) error {
	in, err := os.OpenFile(from, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// salvageInto copies every intact session of s into to: every session a
// range or a listing entry names.
func (s *Store) salvageInto(to *Store, damaged []keyRange, r *SalvageReport) error {
	listed := map[sid]bool{}
	ids := map[sid]bool{}
	err := s.view(func(txn kv.Txn) error {
		err := eachListingKey(txn, func(key []byte) error {
			if len(key) == listingKeyLen {
				listed[listingKeyID(key)] = true
			}
			return nil
		})
		if err != nil {
			return err
		}
		return eachRange(txn, []byte{tagSession}, nil, func(id sid, it kv.Iterator) error {
			if !reservedID(id) {
				ids[id] = true
			}
			it.Seek(append(sessionPrefix(id), 0xff))
			return nil
		})
	})
	if err != nil {
		return err
	}
	for id := range listed {
		ids[id] = true
	}
	unknown := false
	for _, dt := range r.DamagedTables {
		unknown = unknown || dt.From == "" && dt.To == ""
	}
	lose := func(id sid, why string) { r.Lost = append(r.Lost, Problem{Session: id.String(), What: why}) }
	for _, id := range slices.SortedFunc(maps.Keys(ids), func(a, b sid) int { return bytes.Compare(a[:], b[:]) }) {
		if why := inDamaged(id, damaged); why != "" {
			lose(id, why)
			continue
		}
		var problems []string
		var meta bool
		err := s.view(func(txn kv.Txn) error {
			var c sessionCounts
			c, problems = checkSessionRange(txn, id)
			meta = c.meta
			return nil
		})
		switch {
		case err != nil:
			problems = append(problems, err.Error())
		case !meta && listed[id]:
			problems = append(problems, "its records are missing")
		case !meta:
			continue // leftovers of a killed commit: no session
		}
		if len(problems) > 0 {
			lose(id, strings.Join(problems, "; "))
			continue
		}
		if err := s.copySession(to, id); err != nil {
			if errors.Is(err, ErrDamaged) {
				lose(id, err.Error())
				continue
			}
			return err
		}
		if unknown {
			r.Unverified = append(r.Unverified, id.String())
		} else {
			r.Salvaged = append(r.Salvaged, id.String())
		}
	}
	return nil
}

// inDamaged tells why a session's records may be in a damaged table.
func inDamaged(id sid, damaged []keyRange) string {
	prefix := sessionPrefix(id)
	for _, kr := range damaged {
		// Keys in a table are versioned (8 bytes after the key); comparing
		// prefixes of the session's range is enough.
		lo, hi := kr.first, kr.last
		if len(lo) > len(prefix) {
			lo = lo[:len(prefix)]
		}
		if len(hi) > len(prefix) {
			hi = hi[:len(prefix)]
		}
		if bytes.Compare(prefix, lo) >= 0 && (hi == nil || bytes.Compare(prefix, hi) <= 0) {
			return "some of its records may be in a damaged table"
		}
	}
	return ""
}

// copySession writes every key of session id from s into to, and its
// listing entry: the blobs and nodes first, then, in one transaction, the
// metadata and the listing entry, so that a salvage cut short leaves no
// half session behind.
func (s *Store) copySession(to *Store, id sid) error {
	b := &keyBatch{s: to}
	var metaVal []byte
	err := s.view(func(txn kv.Txn) error {
		it := txn.Iterate(kv.IterOptions{Prefix: sessionPrefix(id)})
		defer it.Close()
		for it.Seek(sessionPrefix(id)); it.Valid(); it.Next() {
			key := bytes.Clone(it.Key())
			v, err := iterValueCopy(it)
			if err != nil {
				return err
			}
			if bytes.Equal(key, metaKey(id)) {
				metaVal = v
				continue
			}
			if err := b.set(key, v); err != nil {
				return err
			}
		}
		return b.flush()
	})
	if err != nil {
		return mapErr("salvage", err)
	}
	m, err := record.DecodeMeta(metaVal)
	if err != nil {
		return corrupt(id, "its metadata is malformed")
	}
	summary, err := summaryOf(&m, metaVal)
	if err != nil {
		return corrupt(id, "its metadata does not read back")
	}
	err = to.eng.Update(func(txn kv.Txn) error { return putMeta(txn, id, &m, metaVal, summary) })
	if err == nil {
		to.wrote.Store(true)
	}
	return mapErr("salvage", err)
}
