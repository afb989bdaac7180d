package store

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
)

// Handle is what commands do with an open store: a store opened in the
// process (package store), or a *Client of a store process.
type Handle interface {
	Resolve(ref string) (string, error)
	Meta(id string) (session.Meta, error)
	Node(id string, seq uint64) (session.Node, error)
	Walk(id string, from uint64, max int, fn func(*session.Node) bool) error
	Nodes(id string, fn func(seq uint64, raw []byte) error) error
	Path(id string, head uint64, fn func(*session.Node) error) error
	ListInfo(q ListQuery, fn func(*session.Info) error) error
	// ListJSON is ListInfo with each session's info as one line of JSON
	// (AppendSummaryJSON, without the newline), valid only during fn.
	ListJSON(q ListQuery, fn func(line []byte) error) error
	Commit(meta *session.Meta, nodes []session.Node) error
	PutBlob(id string, sum [32]byte, data []byte) error
	Blob(id string, sum [32]byte) ([]byte, error)
	Collect(m *session.Meta, dryRun bool) (Freed, error)
	// Settle marks a point between the items of a batch (see store.Settle).
	Settle() error
	Close() error
}

// Mode selects the lock a handle holds and the kind of open.
type Mode int

const (
	Read  Mode = iota // shared lock, Badger ReadOnly
	Write             // exclusive lock, Badger read-write
)

// ListQuery selects and orders sessions as wc-ls does. The zero value
// lists every session, most recently updated first; sessions updated at the
// same instant come in id order.
type ListQuery struct {
	Project string    // an absolute directory: its sessions and those below it ("/": all)
	Since   time.Time // updated at or after (zero: no bound)
	Until   time.Time // updated before (zero: no bound)
	Title   string    // a substring of the title
	Grep    string    // a substring of any stored message, of any branch
	Search  string    // a search (words, "phrases", prefix*): ranked, best first
	Fold    bool      // Title and Grep ignore case
	Oldest  bool      // least recently updated first
	Limit   int       // at most this many sessions (0: all)
	Shard   Shard     // only the sessions of this part (zero: all)
}

// Freed is what a collection removed (or would remove).
type Freed struct {
	Nodes int   `json:"nodes_freed"`
	Blobs int   `json:"blobs_freed"`
	Bytes int64 `json:"bytes_freed"`
}

// Sentinels for errors.Is. The errors returned carry their own text (commands
// print err.Error() verbatim), so these are only matched, never printed.
var (
	ErrBusy      = errors.New("store is busy")
	ErrNotFound  = errors.New("not found")
	ErrAmbiguous = errors.New("ambiguous session prefix")
	ErrNotStore  = errors.New("not a wc store directory")
	// ErrDamaged: the store's files do not hold what wc wrote (a changed
	// byte, a file cut short or missing); nothing was changed.
	ErrDamaged = errors.New("store is damaged")
	// ErrNoSpace: the store's file system has no room for a write.
	ErrNoSpace = errors.New("no space left for the store")
	// ErrUnsafe is the kind of a store refused for its owner or mode.
	ErrUnsafe = errors.New("store is not safe to use")
)

// KindError carries the message the user sees and the sentinel it matches,
// and hints the command prints after it.
type KindError struct {
	Msg   string
	Kind  error
	Hints []string
}

func (e *KindError) Error() string        { return e.Msg }
func (e *KindError) Is(target error) bool { return target == e.Kind }

// ErrReadOnly is returned by the writes of a handle opened for reading.
var ErrReadOnly = errors.New("store: opened for reading; cannot write")

// SessionNotFound is the error of a reference that names no session.
func SessionNotFound(ref string) error {
	return &KindError{Msg: fmt.Sprintf("session %s not found", ref), Kind: ErrNotFound}
}

// MinPrefix is the fewest hex digits a session prefix may have.
const MinPrefix = 4

// RefError is a session reference that cannot name a session at all (too
// short, not hex). Commands treat it as a usage error.
type RefError struct{ Ref string }

func (e *RefError) Error() string {
	ref := e.Ref
	if len(ref) > 256 { // an argument may be megabytes long
		ref = strings.ToValidUTF8(ref[:256], "") + "…"
	}
	return "invalid session reference " + ref
}
