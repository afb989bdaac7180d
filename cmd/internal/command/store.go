package command

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wctoolkit/wc/cmd/internal/open"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/record"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
	"github.com/wctoolkit/wc/pkg/session/store/storedir"
)

// Default lock wait; see --lock-timeout.
const defaultLockTimeout = 30 * time.Second

func commonFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "store", EnvVars: []string{"WC_STORE"}, Usage: "store `DIR` (default $XDG_DATA_HOME/wc, else ~/.local/share/wc), or a store on etcd: etcd://HOST:PORT[,HOST:PORT…]/PREFIX[?PARAMS]"},
		&cli.DurationFlag{Name: "lock-timeout", EnvVars: []string{"WC_LOCK_TIMEOUT"}, Value: defaultLockTimeout,
			Usage: "how long to wait for other wc commands to release the store, as a Go `DURATION`; 0 waits only the 20 ms a finished command may take to hand the store on"},
		&cli.BoolFlag{Name: "sync", EnvVars: []string{"WC_SYNC"}, Usage: "sync every write to disk, so that it survives a power cut and not only a crash"},
		&cli.StringFlag{Name: "completion", Usage: "print the completion script of every wc command for `SHELL` (bash, zsh or fish), and do nothing else"},
		&cli.BoolFlag{Name: "other-owner", EnvVars: []string{open.OtherOwnerEnv},
			Usage: "read a store that belongs to another user (as root reads a user's): the command only reads, writes nothing there, not even a lock file, and talks to no store process; without it such a store is refused"},
	}
}

// CommonEnv documents the variables every command reads.
var CommonEnv = []EnvVar{
	{"WC_STORE", "The store directory, or the URL of a store on etcd (etcd://HOST:PORT[,HOST:PORT…]/PREFIX[?PARAMS]; docs/etcd.md), as --store. Every command reaches a store on etcd through a wc-store (the resident one of the URL, or with WC_DIRECT=1 a private one), which checks the URL and reports what is wrong with it in one line (status 1). Like ssh's and gpg's files, it is used only when no one else can have put anything in it: it and every entry in it belong to the user the command runs as (see --other-owner) and none is writable by group or others or a symbolic link, and no directory above it is writable by others without the sticky bit or owned by another user than root; anything else is refused (status 1) before anything is read or sent."},
	{"WC_LOCK_TIMEOUT", "How long to wait for the store lock, as --lock-timeout. On a store on etcd it also bounds how long a command waits for the cluster and how long it reads again and re-applies its change when another writer committed to the session first (then status 75)."},
	{"WC_STORE_PASSWORD", "The password of the etcd user a store URL names (user=NAME): never on the command line, never in an error or output. A command passes it to the wc-store it starts through the environment."},
	{"XDG_RUNTIME_DIR", "A store on etcd (--store etcd://…) has no directory: the socket of its resident wc-store, and the lock that makes it the only one for the URL, are in $XDG_RUNTIME_DIR/wc (else /tmp/wc-UID), owner-only and checked as a store directory is, named etcd-HASH.sock and etcd-HASH.lock by a hash of the URL."},
	{"WC_SYNC", "Set to true to sync every write, as --sync."},
	{"WC_OTHER_OWNER", "Set to true to read a store of another user's, as --other-owner."},
	{"WC_RESIDENT", "Commands go through a resident store process, wc-store, that keeps the store open between them, so that they skip its open and close (1, the default); set to 0 for the same as WC_DIRECT=1. The first command starts it, later ones connect to its socket, wcd.sock in the store directory, owner-only. It stops after WC_RESIDENT_IDLE without commands, on SIGTERM or on wc-store --stop, closing the store; at once, without writing anything more, when the store directory is removed, moved or replaced; and once its commands are done when its program file is replaced (go install) or a command of another protocol version connects (a command of another build that speaks its protocol is served). When no resident process can serve the store (a read-only store or file system, another user's store), commands open it directly; a store an older wc wrote must first be moved to the current schema by one command that can write there. Either way a writer's result is synced to disk before it is printed."},
	{"WC_RESIDENT_IDLE", "How long the resident store process waits for a command before it stops, as a Go duration (default 10m). While it waits it holds the store open and locked, in about 18 MiB, waking about once a second."},
	{"WC_DIRECT", "Set to 1 to open the store directly: through a wc-store that serves this command alone and closes the store before the command exits (wc-compact opens it in its own process). A running resident store process stops taking commands as soon as such a command waits for the store, and makes way once those it serves are done; commands that come meanwhile queue for the store's lock in turn, so the command gets the store within its --lock-timeout however busy the resident process was."},
	{"WC_STORE_PROGRAM", "The wc-store program that opens the store; by default the wc-store beside the command, else the one on PATH."},
	{"XDG_DATA_HOME", "The default store is $XDG_DATA_HOME/wc; when it is unset, ~/.local/share/wc."},
}

// onCommandLine reports whether the long flag was given as an argument
// (urfave/cli counts one its environment variable set as set too).
func (c *Ctx) onCommandLine(name string) bool {
	for _, a := range c.args[min(1, len(c.args)):] {
		if a == "--" {
			break
		}
		for _, dash := range []string{"-", "--"} {
			if a == dash+name || strings.HasPrefix(a, dash+name+"=") {
				return true
			}
		}
	}
	return false
}

// StoreDir is the store directory the flags and environment select, or
// the URL of a store on etcd (open.IsSharedURL) as given.
func (c *Ctx) StoreDir() (string, error) {
	if dir := c.String("store"); open.IsSharedURL(dir) {
		return dir, nil
	} else if dir != "" {
		return filepath.Abs(dir)
	}
	// An empty WC_STORE means the default, as for most variables; an empty
	// --store is more likely "$DIR" of an unset variable, and writing to
	// the default store instead would surprise.
	if c.onCommandLine("store") {
		return "", Usagef("--store is empty").WithHint("leave --store out for the default store")
	}
	if xdg := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(xdg) {
		return filepath.Join(xdg, "wc"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", Usagef("no store directory: set --store, WC_STORE or HOME")
	}
	return filepath.Join(home, ".local", "share", "wc"), nil
}

// Open opens the store for reading or writing and closes it when the action
// returns. Call it only after all input has been read and validated. It
// goes through the resident store process, started on demand; when none can
// be had, or with WC_DIRECT=1, the store is opened directly (see Direct).
func (c *Ctx) Open(mode store.Mode) (store.Handle, error) { return c.open(mode, false, firstAsk{}) }

// OpenFor is Open for a command that resolves refs next: the resident
// process answers them with the connection, saving a round trip.
func (c *Ctx) OpenFor(mode store.Mode, refs []string) (store.Handle, error) {
	return c.open(mode, false, firstAsk{refs: refs})
}

// OpenListing is Open(store.Read) for a command whose first request is
// ListInfo(q), or ListJSON(q) when asJSON: the resident process gets it
// with the connection.
func (c *Ctx) OpenListing(q store.ListQuery, asJSON bool) (store.Handle, error) {
	return c.open(store.Read, false, firstAsk{listing: &q, listingJSON: asJSON})
}

// LockTimeout is --lock-timeout, which must not be negative.
func (c *Ctx) LockTimeout() (time.Duration, error) {
	timeout := c.Duration("lock-timeout")
	if timeout < 0 {
		return 0, Usagef("--lock-timeout must not be negative")
	}
	return timeout, nil
}

// firstAsk is what a command asks the resident process first, sent with
// the connection's hello.
type firstAsk struct {
	refs        []string
	listing     *store.ListQuery
	listingJSON bool
}

// OpenBatch opens the store for work over many sessions (wc-compact --all)
// through Spec.Direct, after asking a resident store process to make way
// once its clients are done: a batch gains nothing from the socket (it holds
// the lock throughout) and would leave its memory in a process that
// outlives it. The store is tuned so that memory stays bounded by the
// largest session rather than the store; the caller calls Settle between
// sessions.
func (c *Ctx) OpenBatch(mode store.Mode) (store.Handle, error) {
	if c.Spec.Direct == nil {
		return nil, errors.New("tool: " + c.Spec.Name + " has no Direct opener for batch work")
	}
	return c.open(mode, true, firstAsk{})
}

func (c *Ctx) open(mode store.Mode, batch bool, first firstAsk) (store.Handle, error) {
	dir, err := c.StoreDir()
	if err != nil {
		return nil, err
	}
	timeout, err := c.LockTimeout()
	if err != nil {
		return nil, err
	}
	if open.IsSharedURL(dir) {
		return c.openShared(dir, mode, batch, first, timeout)
	}
	trust := storedir.Trust{OtherOwner: c.Bool("other-owner")}
	if trust.OtherOwner && (mode != store.Read || batch) {
		return nil, Usagef("--other-owner only reads: %s writes to the store", c.Spec.Name).
			WithHint("a command that writes uses a store of its own user's")
	}
	// Before anything is sent to the store's socket or read from it.
	if _, err := storedir.CheckStore(dir, trust); err != nil {
		return nil, err
	}
	if batch {
		limitMemory()
	}
	if !batch && (mode == store.Read || len(first.refs) > 0) {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			// Readers create nothing, nor do writers to sessions that
			// would have to be in it: there is no store to open, nor a
			// process to start to say so.
			return store.Empty{}, nil
		}
	}
	ask := remote.Ask{Mode: mode, LockTimeout: timeout, Refs: first.refs, Listing: first.listing, ListingJSON: first.listingJSON}
	start := time.Now()
	var st store.Handle
	switch {
	case trust.OtherOwner:
		// Its store process is not ours to talk to, nor to stop.
	case batch || open.ForcedDirect():
		// A resident process would hold the store until it idles.
		_, _ = remote.Shutdown(dir, 0)
	case open.Resident(dir, mode):
		st, err = open.DialResident(dir, ask)
	}
	if st == nil && err == nil {
		ask.LockTimeout = max(0, timeout-time.Since(start))
		if c.Spec.Direct != nil {
			st, err = c.Spec.Direct(open.DirectOptions{Dir: dir, Mode: mode, LockTimeout: ask.LockTimeout, Sync: c.Bool("sync"), Bulk: batch,
				OtherOwner: trust.OtherOwner})
		} else {
			st, err = open.OpenPrivate(dir, ask, c.Bool("sync"), trust.OtherOwner)
		}
	}
	return c.opened(st, err, batch)
}

// openShared opens the store on etcd at url: through its resident store
// process (started on demand), else (WC_DIRECT=1, batch work, or when
// none can start) through a private wc-store; never in the command, which
// links no etcd client. wc-store parses the URL and reports what is wrong
// with it as one line, naming no secret.
func (c *Ctx) openShared(url string, mode store.Mode, batch bool, first firstAsk, timeout time.Duration) (store.Handle, error) {
	if c.Bool("other-owner") {
		return nil, Usagef("--other-owner reads another user's store directory; %s is a store on etcd", open.StoreName(url)).
			WithHint("etcd's own users and permissions say who may read it")
	}
	if batch {
		limitMemory()
	}
	ask := remote.Ask{Mode: mode, LockTimeout: timeout, Refs: first.refs, Listing: first.listing, ListingJSON: first.listingJSON}
	start := time.Now()
	var st store.Handle
	var err error
	if !batch && !open.ForcedDirect() {
		st, err = open.DialShared(url, ask)
	}
	if st == nil && err == nil {
		ask.LockTimeout = max(0, timeout-time.Since(start))
		st, err = open.OpenPrivate(url, ask, c.Bool("sync"), false)
	}
	return c.opened(st, err, batch)
}

// OnSharedStore reports whether the store the flags and environment
// select is on etcd: reached through a store process's client, which
// takes one call at a time, never in this process.
func (c *Ctx) OnSharedStore() bool {
	dir, err := c.StoreDir()
	return err == nil && open.IsSharedURL(dir)
}

// RetryChanged runs apply, which reads a session, changes it and commits
// it, again while the commit finds that another writer changed the
// session since it was read (a store on etcd, shared by many machines),
// with backoff, until --lock-timeout has passed; then the changed error,
// which exits 75. On a directory a commit never finds that.
func (c *Ctx) RetryChanged(apply func() error) error {
	timeout, err := c.LockTimeout()
	if err != nil {
		return err
	}
	return store.RetryChanged(time.Now().Add(timeout), apply)
}

// writeGuard is a command's handle: its first write makes the command
// ignore the signals that would otherwise end it (see Ctx.protectWrites).
type writeGuard struct {
	store.Handle
	c *Ctx
}

func (w writeGuard) Commit(meta *session.Meta, nodes []session.Node) error {
	// What any command stores meets the limits wc-append's input does:
	// a summary, a report or a compaction's result too.
	msgs := make([]session.Message, len(nodes))
	for i := range nodes {
		msgs[i] = nodes[i].Msg
	}
	if err := session.CheckSizes(msgs, false); err != nil {
		return DataErrf("%v", err)
	}
	w.c.protectWrites()
	return w.Handle.Commit(meta, nodes)
}

func (w writeGuard) PutBlob(id string, sum [32]byte, data []byte) error {
	w.c.protectWrites()
	return w.Handle.PutBlob(id, sum, data)
}

// DeleteSession and Purge make the guard a store.Remover when the handle
// it guards is one.
func (w writeGuard) DeleteSession(id string) error {
	r, ok := w.Handle.(store.Remover)
	if !ok {
		return errCannotRemove
	}
	w.c.protectWrites()
	return r.DeleteSession(id)
}

func (w writeGuard) Purge() error {
	r, ok := w.Handle.(store.Remover)
	if !ok {
		return errCannotRemove
	}
	w.c.protectWrites()
	return r.Purge()
}

var (
	_ store.Remover = writeGuard{}

	errCannotRemove = errors.New("this store cannot remove sessions")
)

func (w writeGuard) Collect(m *session.Meta, dryRun bool) (store.Freed, error) {
	if !dryRun {
		w.c.protectWrites()
	}
	return w.Handle.Collect(m, dryRun)
}

// bulkMemoryLimit is the Go heap's soft limit in batch work: Badger's
// builders and each session's decoded copies are garbage soon after use,
// and without a limit the heap doubles between collections. A batch keeps
// about 80 MB live (Badger's pooled table builders, its caches, the
// sessions wc-compact holds), so the collector is not kept running.
const bulkMemoryLimit = 128 << 20

// limitMemory sets the soft limit unless GOMEMLIMIT already chose one.
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(bulkMemoryLimit)
	}
}

// NewID returns a random UUID v4.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error()) // never happens on Linux
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ProjectDir is --project as an absolute path, or the working directory.
func (c *Ctx) ProjectDir() (string, error) {
	p := c.String("project")
	if p == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", &Error{Code: ExitFailure, Msg: "cannot tell the current directory: " + pathErrText(err)}
		}
		return wd, nil
	}
	return filepath.Abs(p)
}

// LoadTree reads every node of a session into memory, for the operations
// that need the whole tree.
func LoadTree(st store.Handle, id string) (*session.Tree, error) {
	var nodes []session.Node
	err := st.Nodes(id, func(seq uint64, raw []byte) error {
		n, err := record.DecodeNode(seq, raw)
		nodes = append(nodes, n)
		return err
	})
	return session.NewTree(nodes), err
}

// SessionNodes reads one session's nodes from the store, for the branch
// operations of pkg/session.
func SessionNodes(st store.Handle, id string) session.NodeReader { return sessionNodes{st, id} }

type sessionNodes struct {
	st store.Handle
	id string
}

func (s sessionNodes) ReadNode(seq uint64) (session.Node, error) { return s.st.Node(s.id, seq) }

// errFirstTurn stops a path read at the first user turn.
var errFirstTurn = errors.New("first user turn read")

// UpgradeTitle is whycodes' maybe_upgrade_title_from_history over the
// store: a session still on its placeholder title that holds user
// messages takes the heuristic title of its first user turn. The path is
// read from the root only as far as that turn, and only for such a
// session. It reports whether the title changed.
func UpgradeTitle(st store.Handle, m *session.Meta) (bool, error) {
	if !m.TitleSource.AllowsHeuristic() || m.UserMessageCount == 0 || m.Head == 0 {
		return false, nil
	}
	o := session.Openings{SnippetChars: -1}
	err := st.Path(m.ID, m.Head, func(n *session.Node) error {
		if o.Add(&n.Msg) {
			return errFirstTurn
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFirstTurn) {
		return false, err
	}
	return o.HasUserText && m.ApplyHeuristicTitle(o.UserText), nil
}

// opened is the command's handle on st, which the command closes when it
// ends; a batch's signals are caught from then on.
func (c *Ctx) opened(st store.Handle, err error, batch bool) (store.Handle, error) {
	if err != nil {
		return nil, err
	}
	c.OnClose(st.Close)
	if batch && c.Spec.Signals != "" {
		c.catchSignals()
	}
	return writeGuard{Handle: st, c: c}, nil
}
