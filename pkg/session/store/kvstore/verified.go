package kvstore

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The tables a writer verified (or made) are recorded in Dir/lock, whose
// content no wc before this one reads (it only locks the file): a line per
// table with its stamp, then a CRC-32C of the lines. An open verifies only
// the tables the record does not name with their present stamp, so that a
// store is read whole once after it was copied or restored, not at every
// command. A record cut short or damaged is ignored: every table is then
// verified again.

const verifiedHeader = "wc-verified-tables 1\n"

// maxVerifiedRecord bounds what is read of the lock file.
const maxVerifiedRecord = 4 << 20

// verifiedRecord is the record: the tables verified, and the CRC-32C of
// the bytes of Badger's files that no checksum of Badger's covers and that
// never change once written, which wc-store --check compares: the key
// registry (whose IV wc, which never encrypts, never uses) and each value
// log's header.
type verifiedRecord struct {
	tables map[uint64]tableStamp
	files  map[string]uint32
}

// readVerified reads the record from the lock file; empty when there is
// none that verifies.
func readVerified(lock *os.File) verifiedRecord {
	rec := verifiedRecord{files: map[string]uint32{}}
	if lock == nil {
		return rec
	}
	buf := make([]byte, maxVerifiedRecord)
	n, _ := lock.ReadAt(buf, 0)
	data := buf[:n]
	if !bytes.HasPrefix(data, []byte(verifiedHeader)) {
		return rec
	}
	end := bytes.LastIndex(data, []byte("crc "))
	if end < 0 {
		return rec
	}
	sum, err := strconv.ParseUint(strings.TrimSpace(string(data[end+4:])), 16, 32)
	if err != nil || uint32(sum) != crc32.Checksum(data[:end], castagnoli) {
		return rec
	}
	tables := map[uint64]tableStamp{}
	sc := bufio.NewScanner(bytes.NewReader(data[len(verifiedHeader):end]))
	for sc.Scan() {
		var id uint64
		var t tableStamp
		var name string
		var crc uint32
		if _, err := fmt.Sscanf(sc.Text(), "file %s %x", &name, &crc); err == nil {
			rec.files[name] = crc
			continue
		}
		if _, err := fmt.Sscanf(sc.Text(), "%d %d %d %d %d", &id, &t.size, &t.ino, &t.ctime, &t.mtime); err != nil {
			return verifiedRecord{files: map[string]uint32{}}
		}
		tables[id] = t
	}
	rec.tables = tables
	return rec
}

// unverifiedBytes is the CRC-32C of the bytes of db/ that the record
// keeps (see verifiedRecord), by name: KEYREGISTRY, and NNNNNN.vlog for
// the header of each value log.
func unverifiedBytes(dbDir string) map[string]uint32 {
	out := map[string]uint32{}
	if data, err := os.ReadFile(filepath.Join(dbDir, "KEYREGISTRY")); err == nil {
		out["KEYREGISTRY"] = crc32.Checksum(data, castagnoli)
	}
	logs, _ := filepath.Glob(filepath.Join(dbDir, "*.vlog"))
	for _, path := range logs {
		f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
		if err != nil {
			continue
		}
		var head [vlogHeaderSize]byte
		if _, err := io.ReadFull(f, head[:]); err == nil {
			out[filepath.Base(path)] = crc32.Checksum(head[:], castagnoli)
		}
		f.Close()
	}
	return out
}

// recordVerified writes the record of the tables db/ holds now, once the
// store is closed: those this handle found verified at its open, and those
// Badger made since (from verified tables and this process's writes). A
// table listed at the open with another stamp is left out.
func (s *Store) recordVerified() {
	if s.lock == nil || !s.rw {
		return
	}
	dbDir := s.dbDir()
	files, err := listDB(dbDir, s.owner)
	if err != nil || !files.manifest {
		return
	}
	m, err := readManifest(s.dir)
	if err != nil {
		return
	}
	var b strings.Builder
	b.WriteString(verifiedHeader)
	for id := range m {
		stamp, ok := files.tables[id]
		was, seen := s.verified[id]
		if !ok || seen && was != stamp {
			continue
		}
		fmt.Fprintf(&b, "%d %d %d %d %d\n", id, stamp.size, stamp.ino, stamp.ctime, stamp.mtime)
	}
	crcs := unverifiedBytes(dbDir)
	for _, name := range slices.Sorted(maps.Keys(crcs)) {
		fmt.Fprintf(&b, "file %s %08x\n", name, crcs[name])
	}
	rec := b.String()
	rec += fmt.Sprintf("crc %08x\n", crc32.Checksum([]byte(rec), castagnoli))
	if len(rec) > maxVerifiedRecord {
		return
	}
	if _, err := s.lock.WriteAt([]byte(rec), 0); err == nil {
		_ = s.lock.Truncate(int64(len(rec)))
	}
}
