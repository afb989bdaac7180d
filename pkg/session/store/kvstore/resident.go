package kvstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/record"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
	"github.com/wctoolkit/wc/pkg/session/store/storedir"
	"github.com/wctoolkit/wc/pkg/session/store/wire"
)

// A streamed result is sent in chunks of at most this many items or about
// this many bytes, each pulled by the client, so that neither side holds a
// whole session.
const (
	chunkItems = 256
	chunkBytes = 256 << 10
)

// sessionLock is the resident process's stand-in for Dir/lock: writers
// exclusive, readers shared, a wait bounded by the client's lock timeout.
type sessionLock struct {
	mu      sync.Mutex
	readers int
	writer  bool
	changed chan struct{}
}

// releaseGrace is the least a client waits for the lock. A client that
// has gone releases its lock when the server reads the end of its
// connection, a moment after the client's process exited: the command
// after it must not find the store busy for that moment, even with
// --lock-timeout 0.
const releaseGrace = 20 * time.Millisecond

func (l *sessionLock) acquire(mode Mode, timeout time.Duration, dir string) error {
	deadline := time.Now().Add(max(timeout, releaseGrace))
	for {
		l.mu.Lock()
		if !l.writer && (mode == Read || l.readers == 0) {
			if mode == Write {
				l.writer = true
			} else {
				l.readers++
			}
			l.mu.Unlock()
			return nil
		}
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		ch := l.changed
		l.mu.Unlock()
		wait := time.Until(deadline)
		if wait <= 0 {
			return &store.KindError{Msg: fmt.Sprintf("store %s is busy (timed out waiting for the other commands its store process serves)", dir), Kind: ErrBusy}
		}
		timer := time.NewTimer(wait)
		select {
		case <-ch:
		case <-timer.C:
		}
		timer.Stop()
	}
}

func (l *sessionLock) release(mode Mode) {
	l.mu.Lock()
	if mode == Write {
		l.writer = false
	} else {
		l.readers--
	}
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	l.mu.Unlock()
}

// ServeConfig tunes a resident store process.
type ServeConfig struct {
	// Idle is how long the process waits for a client before it stops.
	Idle time.Duration
	// Wait bounds how long it waits for Dir/lock while another process
	// holds the store; it gives up at once when another resident process
	// answers instead.
	Wait time.Duration
	// Ready, when set, is called once clients can connect.
	Ready func()
	// Stale, when set, reports whether the program this process runs has
	// been replaced on disk; a stale process serves no new client.
	Stale func() bool
	// Stop, when closed, stops the process as when it idles (on SIGTERM).
	Stop <-chan struct{}
	// Reach names the path the process reaches the store directory d by
	// (info is d's); the store is opened and its socket made there. The
	// process may reach it through d itself, so that nothing is ever
	// written into whatever takes the directory's path later. Nil: its path.
	Reach func(d *os.File, info os.FileInfo) string
	// Listen makes the socket at path and listens on it, owner-only; the
	// listener must not remove it on Close: the server does, while it is
	// still its own. Required.
	Listen func(path string) (net.Listener, error)
	// Socket is where ServeShared listens (a store on a shared engine has
	// no directory to hold it); Serve ignores it.
	Socket string
}

// ErrStoreGone is returned by Serve when the store directory was removed,
// moved or replaced while it was served. The process must then exit at
// once, without closing the store: Badger's close would flush into a
// directory that is gone (retrying forever) or being removed. What it
// committed survives as after a kill -9, wherever the directory went.
var ErrStoreGone = errors.New("store: the store directory was removed, moved or replaced")

// watchInterval is how often a resident process checks that its store
// directory and socket are still where it serves them, and whether a
// command that opens the store itself waits at the turnstile. Once no
// client has come for quietAfter, the process lingers on quietWatchInterval
// instead, having given back the memory it can: a lingering process wakes a
// few times a second, not dozens (docs/resident.md), and such a command waits
// up to that long more.
const (
	watchInterval      = 50 * time.Millisecond
	quietWatchInterval = time.Second
	quietAfter         = 2 * time.Second
)

// Serve runs the resident store process: it opens the store in opts.Dir for
// writing, which takes Dir/lock for as long as it runs (commands that open
// the store themselves queue behind it), and serves clients on the socket
// until no client has come for cfg.Idle. It then closes the store the way
// any writer does. A second server finds the lock taken and returns
// ErrBusy. On ErrStoreGone the store is left open: exit.
func Serve(opts Options, cfg ServeConfig) error {
	dir := filepath.Clean(opts.Dir)
	if opts.Dir == "" {
		return errors.New("store: no store directory given")
	}
	if cfg.Listen == nil {
		return errors.New("store: no way to listen for commands given")
	}
	if _, err := storedir.CheckStore(dir, storedir.Trust{}); err != nil {
		return err
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return mapErr("create store", err)
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			return mapErr("create store", err)
		}
	}
	d, err := os.Open(dir)
	if err != nil {
		return mapErr("open", err)
	}
	dirInfo, err := d.Stat()
	if err != nil || !dirInfo.IsDir() {
		d.Close()
		return notStoreError(dir, true)
	}
	root := dir
	if cfg.Reach != nil {
		root = cfg.Reach(d, dirInfo)
	}
	st, err := openServed(opts, dir, root, d, cfg.Wait)
	if err != nil {
		d.Close()
		return err
	}
	sock := remote.SocketPath(root)
	_ = os.Remove(sock) // left by a server that died; we hold the lock now
	ln, err := cfg.Listen(sock)
	if err != nil {
		st.Close()
		d.Close()
		return mapErr("listen", err)
	}
	sockInfo, err := os.Lstat(sock)
	if err != nil {
		st.Close()
		d.Close()
		return mapErr("listen", err)
	}
	srv := &server{st: st, dir: dir, root: root, dirFile: d, dirInfo: dirInfo, sock: sock, sockInfo: sockInfo,
		stale: cfg.Stale, activity: make(chan struct{}, 1), quit: make(chan struct{})}
	return srv.serve(ln, cfg)
}

// ServeShared runs the resident store process of st, a store open for
// writing on a shared engine (etcd), which it closes when it stops. It is
// Serve without a directory: no lock (the caller holds whatever makes it
// the only resident process of the store on this machine), no turnstile,
// and the socket at cfg.Socket, which it watches as Serve does. Its
// sessions change under it (other machines write), so it keeps no listing
// cache.
func ServeShared(st *Store, cfg ServeConfig) error {
	if st.shared == nil || cfg.Socket == "" || cfg.Listen == nil {
		st.Close()
		return errors.New("store: ServeShared needs a store on a shared engine, a socket and a way to listen")
	}
	_ = os.Remove(cfg.Socket) // left by a server that died; the caller holds its lock
	ln, err := cfg.Listen(cfg.Socket)
	if err != nil {
		st.Close()
		return fmt.Errorf("store %s: cannot listen on %s: %v", st.shared.name, cfg.Socket, err)
	}
	sockInfo, err := os.Lstat(cfg.Socket)
	if err != nil {
		ln.Close()
		st.Close()
		return fmt.Errorf("store %s: cannot listen on %s: %v", st.shared.name, cfg.Socket, err)
	}
	srv := &server{st: st, dir: st.shared.name, root: st.shared.name, sock: cfg.Socket, sockInfo: sockInfo, shared: true,
		stale: cfg.Stale, activity: make(chan struct{}, 1), quit: make(chan struct{})}
	return srv.serve(ln, cfg)
}

// serve accepts clients on ln until the process stops (see Serve), then
// closes the store.
func (srv *server) serve(ln net.Listener, cfg ServeConfig) error {
	st, d, sock := srv.st, srv.dirFile, srv.sock
	go srv.accept(ln)
	if cfg.Ready != nil {
		cfg.Ready()
	}
	idle := time.NewTimer(cfg.Idle)
	defer idle.Stop()
	watch := time.NewTicker(watchInterval)
	defer watch.Stop()
	lastActive, quiet := time.Now(), false
wait:
	for {
		select {
		case <-srv.activity:
			lastActive = time.Now()
			if quiet {
				quiet = false
				watch.Reset(watchInterval)
			}
		case <-srv.quit:
			srv.stopAccepting()
			break wait
		case <-cfg.Stop:
			srv.stopAccepting()
			break wait
		case <-idle.C:
			if srv.stopIfIdle() {
				break wait
			}
		case <-watch.C:
			if srv.gone() {
				return ErrStoreGone
			}
			if d != nil && turnstileHeld(d) {
				srv.stopAccepting()
				break wait
			}
			if !quiet && time.Since(lastActive) >= quietAfter && srv.idle() {
				quiet = true
				watch.Reset(quietWatchInterval)
				st.releasePages()
				debug.FreeOSMemory()
			}
			continue
		}
		if !idle.Stop() {
			select {
			case <-idle.C:
			default:
			}
		}
		idle.Reset(cfg.Idle)
	}
	// A client that connects from now on finds no socket and starts a
	// resident process of its own, which waits for our lock.
	_ = os.Remove(sock)
	srv.sockInfo = nil
	_ = ln.Close()
	if !srv.watchWhile(srv.conns.Wait) {
		return ErrStoreGone
	}
	var closeErr error
	if !srv.watchWhile(func() { closeErr = st.Close() }) {
		return ErrStoreGone
	}
	if d != nil {
		d.Close()
	}
	return closeErr
}

// openServed opens the store for the resident process. While another
// process holds it, it retries until wait has passed, and gives up early
// when a resident process answers on the socket: that one serves it.
func openServed(opts Options, dir, root string, d *os.File, wait time.Duration) (*Store, error) {
	deadline := time.Now().Add(wait)
	for delay := time.Millisecond; ; delay = min(2*delay, 25*time.Millisecond) {
		if turnstileHeld(d) {
			// A command opening the store itself waits: it goes first,
			// and the commands after it queue behind it directly.
			return nil, busyError(dir)
		}
		// Trying once at a time (LockTimeout 0): a waiting flock would
		// leave a blocked thread behind at every retry.
		st, err := Open(Options{Dir: root, Sync: opts.Sync, resident: true}, Write)
		if err == nil || !errors.Is(err, ErrBusy) {
			return st, err
		}
		if time.Now().After(deadline) || serverAnswers(dir) {
			return nil, busyError(dir)
		}
		time.Sleep(delay)
	}
}

// serverAnswers reports whether a resident process listens for dir.
func serverAnswers(dir string) bool {
	conn, err := remote.DialSocket(dir)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

type server struct {
	st       *Store
	dir      string   // the store's path, for messages and the watch
	root     string   // the directory as Badger and the socket reach it
	dirFile  *os.File // the store directory, held open for the process's life
	dirInfo  os.FileInfo
	sock     string
	sockInfo os.FileInfo // nil once we removed the socket ourselves
	stale    func() bool
	private  bool // serves one client, with a store of its own (ServePrivate)
	shared   bool // a store on a shared engine (ServeShared): no directory, no listing cache
	lock     sessionLock
	listed   listCache
	conns    sync.WaitGroup
	mu       sync.Mutex
	active   int
	closing  bool
	activity chan struct{}
	quit     chan struct{}
	quitOnce sync.Once
}

// gone reports whether the store directory was removed or no longer sits
// at its path, or our socket was removed or replaced: the signs of rm -rf
// $WC_STORE, mv, or a fresh store in its place.
func (s *server) gone() bool {
	if s.dirFile == nil {
		return s.sockInfo != nil && s.socketReplaced()
	}
	fi, err := s.dirFile.Stat()
	if err != nil {
		return true
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink == 0 {
		return true
	}
	if cur, err := os.Stat(s.dir); err != nil || !os.SameFile(cur, s.dirInfo) {
		return true
	}
	return s.sockInfo != nil && s.socketReplaced()
}

func (s *server) socketReplaced() bool {
	cur, err := os.Lstat(s.sock)
	return err != nil || !os.SameFile(cur, s.sockInfo)
}

// watchWhile runs f (waiting for clients, closing the store) and reports
// false as soon as the store is gone, leaving f to the process's exit.
func (s *server) watchWhile(f func()) bool {
	done := make(chan struct{})
	go func() {
		f()
		close(done)
	}()
	tick := time.NewTicker(watchInterval)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return true
		case <-tick.C:
			if s.gone() {
				return false
			}
		}
	}
}

// stopIfIdle stops taking clients if none is connected, atomically with
// the check, so that no client slips in between.
// idle reports whether no client is connected.
func (s *server) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active == 0
}

func (s *server) stopIfIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = s.active == 0
	return s.closing
}

func (s *server) stopAccepting() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
}

// shutdown stops the server once its clients are done.
func (s *server) shutdown() { s.quitOnce.Do(func() { close(s.quit) }) }

func (s *server) accept(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closing { // the client starts a resident process of its own
			s.mu.Unlock()
			conn.Close()
			continue
		}
		s.active++
		s.conns.Add(1)
		s.mu.Unlock()
		s.touch()
		go func() {
			defer func() {
				s.mu.Lock()
				s.active--
				s.mu.Unlock()
				s.touch()
				s.conns.Done()
			}()
			s.serveConn(conn)
		}()
	}
}

func (s *server) touch() {
	select {
	case s.activity <- struct{}{}:
	default:
	}
}

// serveConn serves one command: hello (take the lock), operations, and the
// end of the connection. A client that disappears releases its lock with
// its connection; what it committed stays committed, as when a command is
// killed.
func (s *server) serveConn(conn net.Conn) {
	defer conn.Close()
	wc := wire.NewConn(conn)
	var hello wire.Hello
	if err := wc.Recv(&hello); err != nil {
		return
	}
	welcome := wire.Welcome{Proto: wire.ProtocolVersion, Build: wire.BuildID()}
	switch {
	case hello.Op == "shutdown":
		s.shutdown()
		_ = wc.Send(&welcome)
		return
	case hello.Proto != wire.ProtocolVersion || s.stale != nil && s.stale():
		// A client of another protocol, or this program was replaced
		// (go install): make way for a resident process of the client's
		// wc-store once the clients being served are done. A client of
		// another build that speaks this protocol is served: it knows
		// the store only through the protocol.
		s.shutdown()
		welcome.Err = &wire.WireError{Kind: "stale"}
		_ = wc.Send(&welcome)
		return
	case hello.Op != "begin":
		return
	}
	mode := hello.Mode
	if err := s.lock.acquire(mode, hello.Timeout, s.dir); err != nil {
		welcome.Err = wire.ToWire(err)
		_ = wc.Send(&welcome)
		return
	}
	defer s.lock.release(mode)
	if mode == Write && !s.shared {
		// After the client has its answer, before the next one comes.
		defer func() { _ = s.st.tidy() }()
	}
	c := &client{server: s, st: s.st.ForClient(hello.Timeout)}
	c.converse(wc, &hello, &welcome, func(unsynced bool) error {
		if unsynced {
			return s.sync()
		}
		return nil
	})
}

// client is the server as one connection sees it: st is the store
// handle its operations use (Store.ForClient: on a shared engine, retried
// within the client's lock timeout).
type client struct {
	*server
	st *Store
}

// converse answers the references of a client's hello with its welcome,
// then the client's requests until it ends (end makes what it wrote
// durable) or goes.
func (s *client) converse(wc *wire.Conn, hello *wire.Hello, welcome *wire.Welcome, end func(unsynced bool) error) {
	for _, ref := range hello.Refs[:min(len(hello.Refs), remote.MaxPrefetched)] {
		welcome.Resolved = append(welcome.Resolved, s.resolve(ref))
	}
	if err := wc.Send(welcome); err != nil {
		return
	}
	unsynced := false
	for {
		req, err := wc.RecvRequest()
		if err != nil {
			return
		}
		residentRequests.Add(1)
		if _, ok := req.(*wire.End); ok {
			_ = wc.Send(&wire.Response{Err: s.toWire(end(unsynced))})
			return
		}
		if hello.Mode == Read && req.Writes() {
			_ = wc.Send(&wire.Response{Err: wire.ToWire(errReadOnly)})
			continue
		}
		unsynced = unsynced || leavesUnsynced(req)
		if err := s.handle(req, wc); err != nil {
			return // the connection broke
		}
	}
}

// ServePrivate serves the one client on conn with a store of its own (the
// store process a command starts when it opens the store directly): it
// opens the store in opts.Dir for the mode the client's hello asks,
// waiting for the lock as long as the hello allows, calls opened, and
// closes the store when the client ends, before answering, or goes. It
// returns the error of the open or close, which the client has been told
// when it was still there.
func ServePrivate(opts Options, conn io.ReadWriteCloser, opened func()) error {
	return ServePrivateWith(conn, func(mode Mode, lockTimeout time.Duration) (*Store, error) {
		opts.LockTimeout = lockTimeout
		return Open(opts, mode)
	}, opened)
}

// ServePrivateWith is ServePrivate with the store opened by open, for the
// mode and lock timeout the hello asks: a store on a shared engine.
func ServePrivateWith(conn io.ReadWriteCloser, open func(Mode, time.Duration) (*Store, error), opened func()) error {
	defer conn.Close()
	wc := wire.NewConn(conn)
	var hello wire.Hello
	if err := wc.Recv(&hello); err != nil {
		return err
	}
	welcome := wire.Welcome{Proto: wire.ProtocolVersion, Build: wire.BuildID()}
	if hello.Proto != wire.ProtocolVersion || hello.Op != "begin" {
		welcome.Err = &wire.WireError{Kind: "stale"}
		_ = wc.Send(&welcome)
		return errors.New("store: a client of another protocol")
	}
	st, err := open(hello.Mode, hello.Timeout)
	if opened != nil {
		opened()
	}
	if err != nil {
		welcome.Err = wire.ToWire(err)
		_ = wc.Send(&welcome)
		return err
	}
	s := &server{st: st, dir: st.dir, root: st.dir, private: true}
	if st.shared != nil {
		s.dir, s.root = st.shared.name, st.shared.name
	}
	var closeErr error
	closed := false
	c := &client{server: s, st: st.ForClient(hello.Timeout)}
	c.converse(wc, &hello, &welcome, func(bool) error {
		closed, closeErr = true, st.Close()
		return closeErr
	})
	if !closed {
		closeErr = st.Close()
	}
	return closeErr
}

// leavesUnsynced tells whether the server answers req, a write, before it
// syncs it: the client's End syncs it.
func leavesUnsynced(req wire.Request) bool {
	switch r := req.(type) {
	case *wire.PutBlob:
		return true
	case *wire.Commit:
		return r.Defer
	case *wire.Collect:
		return r.Defer
	case *wire.Delete:
		return r.Defer
	}
	return false
}

// handle answers one request; it returns an error only when the
// connection is unusable.
func (s *client) handle(req wire.Request, wc *wire.Conn) error {
	var resp wire.Response
	var err error
	switch req := req.(type) {
	case *wire.Resolve:
		resp = s.resolve(req.Ref)
		return wc.Send(&resp)
	case *wire.GetMeta:
		var m session.Meta
		if m, err = s.st.Meta(req.ID); err == nil {
			resp.Meta, resp.Rev = record.EncodeMeta(&m), m.Revision
		}
	case *wire.GetNode:
		var n session.Node
		if n, err = s.st.Node(req.ID, req.Seq); err == nil {
			resp.Items = []wire.Item{{Seq: n.Seq, Value: record.EncodeNode(&n)}}
		}
	case *wire.Commit:
		resp.Rev, err = s.commit(req)
	case *wire.PutBlob:
		err = s.st.PutBlob(req.ID, req.Sum, req.Data)
	case *wire.GetBlob:
		resp.Data, err = s.st.Blob(req.ID, req.Sum)
	case *wire.Collect:
		var m session.Meta
		if m, err = record.DecodeMeta(req.Meta); err == nil {
			m.Revision = req.Rev
			resp.Freed, err = s.st.Collect(&m, req.DryRun)
		}
		if err == nil && !req.DryRun && !req.Defer {
			err = s.sync()
		}
	case *wire.Delete:
		err = s.remove(req)
	case *wire.Purge:
		err = s.purge()
	case wire.Streamed:
		return s.stream(req, wc)
	default:
		err = fmt.Errorf("store: unexpected request %T", req)
	}
	resp.Err = s.toWire(err)
	return wc.Send(&resp)
}

// commit answers a commit request, with the revision of the metadata it
// wrote.
func (s *client) commit(req *wire.Commit) (uint64, error) {
	m, err := record.DecodeMeta(req.Meta)
	if err != nil {
		return 0, err
	}
	m.Revision = req.Rev
	if len(req.Same) != 0 && len(req.Same) != len(req.Nodes) {
		return 0, errors.New("store: a commit's hints do not match its nodes")
	}
	nodes := make([]session.Node, len(req.Nodes))
	for i, wn := range req.Nodes {
		if nodes[i], err = record.DecodeNode(wn.Seq, wn.Value); err != nil {
			return 0, err
		}
		if len(req.Same) != 0 {
			nodes[i].Same = req.Same[i]
		}
	}
	if s.private || s.shared {
		err = s.st.Commit(&m, nodes)
	} else {
		db, before := stamp(s.st)
		if err = s.st.Commit(&m, nodes); err == nil {
			_, after := stamp(s.st)
			s.listed.committed(&m, before, after, db)
		}
	}
	if err == nil && !req.Defer {
		// What the client prints next must be on disk, as after a
		// command's own Close (which syncs the table it flushes).
		err = s.sync()
	}
	return m.Revision, err
}

// toWire keeps an error's kind, as the package's toWire does, and names the
// store by its path rather than by the descriptor the process reaches it
// through.
func (s *server) toWire(err error) *wire.WireError {
	e := wire.ToWire(err)
	if e != nil && s.root != s.dir {
		e.Msg = strings.ReplaceAll(e.Msg, s.root, s.dir)
	}
	return e
}

// residentSyncs counts the syncs of resident processes in this process,
// and residentRequests the requests they read after a hello (tests).
var residentSyncs, residentRequests atomic.Int64

// sync makes what was committed durable, as a command's Close would.
func (s *server) sync() error {
	if s.private {
		return nil // its Close syncs, before the client's end is answered
	}
	residentSyncs.Add(1)
	return s.st.syncNow()
}

// resolve answers a resolve request for ref.
func (s *client) resolve(ref string) wire.Response {
	var resp wire.Response
	id, err := s.st.Resolve(ref)
	if err == nil {
		resp.Str = id
		s.prefetch(id, &resp)
	}
	resp.Err = s.toWire(err)
	return resp
}

// maxPrefetchNode bounds the head node sent along with a resolve.
const maxPrefetchNode = 256 << 10

// prefetch adds the session's metadata and head node to the answer of a
// resolve: what nearly every command asks for next, saving two round trips.
// The client holds the lock, so neither can change before it reads them.
func (s *client) prefetch(id string, resp *wire.Response) {
	m, err := s.st.Meta(id)
	if err != nil {
		return // the client asks, and gets the error, itself
	}
	resp.Meta, resp.Rev = record.EncodeMeta(&m), m.Revision
	if m.Head == 0 {
		return
	}
	if n, err := s.st.Node(id, m.Head); err == nil {
		if v := record.EncodeNode(&n); len(v) <= maxPrefetchNode {
			resp.Items = []wire.Item{{Seq: n.Seq, Value: v}}
		}
	}
}

var errClientStopped = errors.New("client stopped")

// fillListing fills the listing cache on a goroutine of its own, after a
// filtered listing it could not answer: the next one, typically from the
// same script, then can. It takes no lock, so that it never holds up a
// writer: the cache's stamp drops what a commit made stale meanwhile. The
// process's shutdown stops it, and Close waits for it as for a client.
func (s *server) fillListing() {
	if !fillListings || s.listed.tooBig.Load() || !s.listed.filling.CompareAndSwap(false, true) {
		return
	}
	s.conns.Add(1) // from a client's goroutine: the count is not zero
	go func() {
		defer s.conns.Done()
		defer s.listed.filling.Store(false)
		s.listed.fill(s.st, s.stopping)
	}()
}

// fillListings is false in the tests of a cache that is not filled.
var fillListings = true

// stopping reports whether the process takes no more clients.
func (s *server) stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// stream runs a callback method and sends its items in chunks, each pulled
// by the client with More (or ended with Stop).
func (s *client) stream(req wire.Streamed, wc *wire.Conn) error {
	if req.ReadAhead() {
		return s.streamAhead(req, wc)
	}
	var chunk []wire.Item
	size := 0
	var connErr error
	stopped := false
	emit := func(seq uint64, value []byte) error {
		if stopped {
			return errClientStopped
		}
		chunk = append(chunk, wire.Item{Seq: seq, Value: append([]byte(nil), value...)})
		if size += len(value); len(chunk) < chunkItems && size < chunkBytes {
			return nil
		}
		if connErr = wc.Send(&wire.Response{Items: chunk, More: true}); connErr != nil {
			return connErr
		}
		chunk, size = chunk[:0], 0
		var next wire.Request
		if next, connErr = wc.RecvRequest(); connErr != nil {
			return connErr
		}
		if _, more := next.(*wire.More); !more {
			stopped = true
			return errClientStopped
		}
		return nil
	}
	err := s.run(req, emit)
	if connErr != nil {
		return connErr
	}
	if stopped {
		return nil // the client stopped reading; it expects no more
	}
	return wc.Send(&wire.Response{Items: chunk, Err: s.toWire(err)})
}

// run calls the store method a stream request names.
func (s *client) run(req wire.Streamed, emit func(seq uint64, value []byte) error) error {
	switch req := req.(type) {
	case *wire.Walk:
		return s.st.Walk(req.ID, req.From, req.Max, func(n *session.Node) bool {
			return emit(n.Seq, record.EncodeNode(n)) == nil
		})
	case *wire.Nodes:
		return s.st.Nodes(req.ID, emit)
	case *wire.Path:
		// The stored values as they are: the client decodes them.
		return s.st.pathRaw(req.ID, req.Head, emit)
	case *wire.ListInfo:
		// Each item: the id, then the summary.
		return s.list(req.Query, func(id sid, summary []byte) error { return emit(0, append(id[:], summary...)) })
	case *wire.ListJSON:
		if req.Query.Search != "" {
			return s.st.searchJSON(req.Query, func(line []byte) error { return emit(0, line) })
		}
		return s.list(req.Query, summaryLines(func(line []byte) error { return emit(0, line) }))
	}
	return fmt.Errorf("store: unexpected request %T", req)
}

// list passes item the listing's entries that q selects.
func (s *client) list(q ListQuery, item func(id sid, summary []byte) error) error {
	if q.Search != "" {
		return s.st.searchListing(q, item)
	}
	if s.private || s.shared {
		return s.st.listSummaries(q, item)
	}
	if ok, err := s.listed.query(s.st, q, item); ok {
		return err
	}
	err := s.listed.listNewest(s.st, q, item)
	if err == nil && fillable(q) && !s.listed.whole() {
		s.fillListing()
	}
	return err
}

// streamAhead serves a packed stream, which a client asks for to read a
// whole range: the store is read a chunk ahead of the client's More, on
// a goroutine of its own, so that reading, the socket and the client's work
// overlap.
func (s *client) streamAhead(req wire.Streamed, wc *wire.Conn) error {
	chunks := make(chan *wire.Response, 1)
	free := make(chan []byte, 2)
	stop := make(chan struct{})
	go func() {
		defer close(chunks)
		var packed []byte
		emit := func(seq uint64, value []byte) error {
			packed = binary.BigEndian.AppendUint64(packed, seq)
			packed = binary.BigEndian.AppendUint32(packed, uint32(len(value)))
			packed = append(packed, value...)
			if len(packed) < chunkBytes {
				return nil
			}
			select {
			case chunks <- &wire.Response{Data: packed, More: true}:
			case <-stop:
				return errClientStopped
			}
			select {
			case packed = <-free:
			default:
				packed = make([]byte, 0, chunkBytes+chunkBytes/4)
			}
			return nil
		}
		err := s.run(req, emit)
		if err != errClientStopped {
			select {
			case chunks <- &wire.Response{Data: packed, Err: wire.ToWire(err)}:
			case <-stop:
			}
		}
	}()
	finish := func(err error) error {
		close(stop)
		for range chunks { // let the reader finish its transaction
		}
		return err
	}
	for resp := range chunks {
		if err := wc.Send(resp); err != nil {
			return finish(err)
		}
		if !resp.More {
			return nil
		}
		select {
		case free <- resp.Data[:0]:
		default:
		}
		next, err := wc.RecvRequest()
		if err != nil {
			return finish(err)
		}
		if _, more := next.(*wire.More); !more {
			return finish(nil) // the client stopped reading; it expects no more
		}
	}
	return nil
}
