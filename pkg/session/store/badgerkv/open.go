package badgerkv

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// Config says how to open a store's database.
type Config struct {
	Dir      string // the database directory (a store's Dir/db)
	ReadOnly bool
	Sync     bool // every commit synced (badger WithSyncWrites)
	Bulk     bool // tuned for a batch over the whole store (bulkOptions)
	// Rebuild: the target of a rebuild, written through a StreamWriter,
	// which sizes tables as BaseTableSize×multiplier^(levels-2): 64 MB
	// tables by default, which every later append would rewrite.
	Rebuild bool
}

var (
	// ErrLocked is an open refused because another process (the badger
	// CLI, a debugger) holds Badger's own directory lock.
	ErrLocked = errors.New("badgerkv: the database directory is locked by another process")
	// ErrForeign is an open of a Badger directory that is not a wc
	// store's (its external magic differs).
	ErrForeign = errors.New("badgerkv: not a wc store's database")
)

// Open opens the database of c. A refused open is ErrLocked, ErrForeign,
// or Badger's own error (which IsDamage and Message read).
func Open(c Config) (*Engine, error) {
	opt := Options(c.Dir, c.ReadOnly, c.Sync)
	if c.Bulk {
		opt = bulkOptions(opt)
	}
	if c.Rebuild {
		opt.TableSizeMultiplier = 1
	}
	db, err := badger.Open(opt)
	if err != nil {
		msg := err.Error()
		switch {
		case strings.Contains(msg, "Cannot acquire directory lock"):
			return nil, fmt.Errorf("%w (%s)", ErrLocked, Message(err))
		case strings.Contains(msg, "external magic number doesn't match"):
			return nil, ErrForeign
		}
		return nil, err
	}
	return New(db), nil
}
