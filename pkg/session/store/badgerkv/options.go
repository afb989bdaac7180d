package badgerkv

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

const (
	// The read-write open cost is dominated by allocating the memtable
	// arena, and one transaction may hold 15% of it: 4 MB keeps opens
	// cheap and still fits hundreds of typical messages per transaction.
	MemTableSize = 4 << 20
	// Values above this go to the value log; must stay <= 15% of the
	// memtable. Typical messages (tool output is capped at 32 KB) stay
	// inline in the SSTs and never need value-log GC.
	valueThreshold = 64 << 10
	// Also Badger's largest value; the sparse vlog mmap is twice this.
	vlogFileSize = 64 << 20
	// Compression (Snappy, the default) needs a block cache; a short
	// process gets few hits, so keep it small. A reader gets fewer still:
	// an export reads each block once, and a cache it cannot use is heap
	// (and peak RSS) all the same.
	blockCacheSize = 8 << 20
	// A table builder grows a block by doubling and keeps every smaller
	// copy until the table is done: with Badger's 4 KB blocks a 2 MB table
	// of messages of up to 32 KB took 28 MB of builder, and a merge holds
	// up to 13 builders. Most messages fit in 16 KB.
	BlockSize            = 16 << 10
	readerBlockCacheSize = 1 << 20
	ExternalMagic        = 0x7763 // "wc": a foreign Badger directory refuses to open
)

// MaxValueBytes is the largest value: Badger's limit minus headroom for
// the value-log entry header. Checked here because Badger's own error
// embeds a hex dump of the value.
const MaxValueBytes = vlogFileSize - valueHeadroom

// Options is the one place Badger is configured; every open (reader,
// writer, rebuild target, a test's) must agree on the magic and the sizes.
func Options(dir string, readOnly, sync bool) badger.Options {
	cache := int64(blockCacheSize)
	if readOnly {
		cache = readerBlockCacheSize
	}
	return badger.DefaultOptions(dir).
		WithReadOnly(readOnly).
		WithSyncWrites(sync).
		WithLogger(warnLogger{w: os.Stderr}).
		WithMemTableSize(MemTableSize).
		WithValueThreshold(valueThreshold).
		WithValueLogFileSize(vlogFileSize).
		WithNumMemtables(2).
		// Background compactions run up to 13 table builders at once and
		// spread the store over several levels, which the next Flatten
		// must then merge whole (hundreds of MB in a command). Short commands never lived long enough to run them;
		// now no writer does, and level 0 is merged by flatten alone. No
		// compactor would ever end a write stall, so there is none.
		WithNumCompactors(0).
		// Badger merges level 0 into a "base level" ten times smaller than
		// the level below it, once that one passes its 10 MB BaseLevelSize,
		// and Flatten then merges it down level by level: each level between
		// rewrote all that was merged once more (1,795 against 1,282 tables
		// for a batch over a 530 MB store). A base level target above any
		// store's size makes level 0 merge straight into the store's one
		// level. Its tables are then BaseTableSize at every store size, not
		// twice that per level below the base: more tables for an open to
		// read, smaller table builders in a merge.
		WithBaseLevelSize(1 << 50).
		WithNumLevelZeroTablesStall(1 << 20).
		WithBlockCacheSize(cache).
		WithBlockSize(BlockSize).
		WithMetricsEnabled(false).
		WithCompactL0OnClose(false).
		WithExternalMagic(ExternalMagic).
		// Every block read from a table, and every value read from the
		// value log, is checked against its checksum, so that a damaged
		// file is an error and never an answer (BenchmarkChecksums).
		WithChecksumVerificationMode(checksumMode()).
		WithVerifyValueChecksum(VerifyReads)
}

// VerifyReads turns off every checksum check, Badger's and the store's
// verification of tables at an open, for BenchmarkChecksums alone.
var VerifyReads = true

func checksumMode() options.ChecksumVerificationMode {
	if VerifyReads {
		return options.OnBlockRead
	}
	return options.NoVerification
}

// bulkOptions suit a batch over the whole store. Its merges keep up to 13
// table builders in memory at once and Badger pools 8 more for reuse, each
// buffering about twice the table it builds, so the tables are small
// (BulkTableSize, at every level: deeper levels' tables would otherwise
// grow by TableSizeMultiplier). Table indexes go through a bounded cache
// rather than all in memory, whose size would follow the store's.
func bulkOptions(opt badger.Options) badger.Options {
	opt.TableSizeMultiplier = 1
	opt.BaseTableSize = BulkTableSize
	opt.MemTableSize = bulkMemTableSize
	return opt.WithIndexCacheSize(16 << 20)
}

const (
	BulkTableSize = 1 << 20
	// A memtable flush's builder is about twice the memtable, and stays
	// in Badger's pool of 8 once done.
	bulkMemTableSize = 2 << 20
)

// warnLogger passes on Badger's warnings only, each on one line; its INFO
// lines (about 14 per run) would drown a CLI's stderr, and the errors it
// logs it also returns, which wc maps to its own messages.
type warnLogger struct{ w io.Writer }

func (warnLogger) Errorf(string, ...any)         {}
func (l warnLogger) Warningf(f string, a ...any) { l.line("", f, a) }
func (warnLogger) Infof(string, ...any)          {}
func (warnLogger) Debugf(string, ...any)         {}

func (l warnLogger) line(level, f string, a []any) {
	// Badger's minutely advice when its caches get few hits: a batch that
	// reads each session once gets few by design.
	if strings.HasPrefix(f, "%s might be too small") || strings.HasPrefix(f, "Cache life expectancy") {
		return
	}
	msg := strings.Join(strings.Fields(fmt.Sprintf(f, a...)), " ")
	fmt.Fprintf(l.w, "wc: badger: %s%s\n", level, msg)
}
