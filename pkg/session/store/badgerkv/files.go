package badgerkv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"strings"
	"syscall"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/fb"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/dgraph-io/ristretto/v2/z"
	"google.golang.org/protobuf/proto"
)

// The store's integrity checks and salvage read Badger's files without
// opening the database: its MANIFEST and its tables.

// Compression is a table's compression, as its MANIFEST records it.
type Compression = options.CompressionType

// Snappy is the compression every wc writes.
const Snappy = options.Snappy

const noFollow = syscall.O_NOFOLLOW

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// ReplayManifest reads a MANIFEST (with wc's magic) as Badger does,
// without writing it: the tables it lists, with their compression.
func ReplayManifest(fp *os.File) (map[uint64]Compression, error) {
	m, _, err := badger.ReplayManifestFile(fp, ExternalMagic, badger.DefaultOptions("").WithLogger(nil))
	if err != nil {
		return nil, err
	}
	tables := make(map[uint64]Compression, len(m.Tables))
	for id, t := range m.Tables {
		tables[id] = t.Compression
	}
	return tables, nil
}

// AppendManifest adds to a MANIFEST, as Badger writes one (its length and
// CRC-32C, then the protobuf), the creation in level 0 of the tables ids.
func AppendManifest(path string, ids []uint64, compression map[uint64]Compression) error {
	set := &pb.ManifestChangeSet{}
	for _, id := range ids {
		set.Changes = append(set.Changes, &pb.ManifestChange{Id: id, Op: pb.ManifestChange_CREATE, Level: 0, Compression: uint32(compression[id])})
	}
	buf, err := proto.Marshal(set)
	if err != nil {
		return err
	}
	rec := binary.BigEndian.AppendUint32(nil, uint32(len(buf)))
	rec = binary.BigEndian.AppendUint32(rec, crc32.Checksum(buf, castagnoli))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|noFollow, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(rec, buf...)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// VerifyTable reads a whole table as Badger does, checking its index and
// every block against their checksums. Badger's table code panics on some
// damage before its checks; here, on this goroutine, that is recovered.
func VerifyTable(path string, compression Compression) (err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if _, _, err := tableFooter(f, fi.Size()); err != nil {
		f.Close()
		return err
	}
	mf, err := z.OpenMmapFileUsing(f, 0, false)
	if err != nil {
		f.Close()
		return err
	}
	// On a failure Badger may or may not have unmapped the table; the
	// mapping is left then rather than unmapped twice.
	defer func() {
		if r := recover(); r != nil {
			err = errors.New(firstLine(fmt.Sprint(r)))
		}
	}()
	if _, err := table.OpenTable(mf, table.Options{ChkMode: options.OnTableAndBlockRead, BlockSize: BlockSize, Compression: compression}); err != nil {
		return errors.New(firstLine(err.Error()))
	}
	return mf.Close(-1)
}

// maxChecksumLen bounds a table's encoded checksum (an algorithm and a
// uint64: a dozen bytes).
const maxChecksumLen = 64

// tableFooter reads a table's index and checksum positions.
func tableFooter(f *os.File, size int64) (indexStart int64, cksum []byte, err error) {
	if size < 8 {
		return 0, nil, errors.New("too short")
	}
	var n [4]byte
	if _, err := f.ReadAt(n[:], size-4); err != nil {
		return 0, nil, err
	}
	cl := int64(binary.BigEndian.Uint32(n[:]))
	if cl == 0 || cl > maxChecksumLen || cl > size-8 {
		return 0, nil, errors.New("bad checksum length")
	}
	cksum = make([]byte, cl)
	if _, err := f.ReadAt(cksum, size-4-cl); err != nil {
		return 0, nil, err
	}
	if _, err := f.ReadAt(n[:], size-8-cl); err != nil {
		return 0, nil, err
	}
	il := int64(binary.BigEndian.Uint32(n[:]))
	if il == 0 || il > size-8-cl {
		return 0, nil, errors.New("bad index length")
	}
	return size - 8 - cl - il, cksum, nil
}

// tableIndex reads and verifies a table's index.
func tableIndex(path string) (*fb.TableIndex, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	start, raw, err := tableFooter(f, fi.Size())
	if err != nil {
		return nil, err
	}
	var sum pb.Checksum
	if err := proto.Unmarshal(raw, &sum); err != nil {
		return nil, errors.New("bad checksum")
	}
	data := make([]byte, fi.Size()-8-int64(len(raw))-start)
	if _, err := f.ReadAt(data, start); err != nil {
		return nil, err
	}
	if err := y.VerifyChecksum(data, &sum); err != nil {
		return nil, errors.New("its index fails its checksum")
	}
	return fb.GetRootAsTableIndex(data, 0), nil
}

// TableMaxVersion is the newest version a table holds, from its index,
// which it verifies.
func TableMaxVersion(path string) (uint64, error) {
	idx, err := tableIndex(path)
	if err != nil {
		return 0, err
	}
	return idx.MaxVersion(), nil
}

// TableRange is the keys a damaged table holds, from its first block's
// first key to its biggest (nil, unbounded, when its last block is the
// damaged one); ok is false when its index is damaged too.
func TableRange(path string, compression Compression) (first, last []byte, ok bool) {
	idx, err := tableIndex(path)
	if err != nil || idx.OffsetsLength() == 0 {
		return nil, nil, false
	}
	var bo fb.BlockOffset
	if idx.Offsets(&bo, 0) {
		first = bytes.Clone(bo.KeyBytes())
	}
	func() {
		defer func() { _ = recover() }()
		mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
		if err != nil {
			return
		}
		t, err := table.OpenTable(mf, table.Options{ChkMode: options.OnBlockRead, BlockSize: BlockSize, Compression: compression})
		if err == nil {
			last = bytes.Clone(t.Biggest())
			_ = mf.Close(-1)
		}
	}()
	return first, last, true
}
