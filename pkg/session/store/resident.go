package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wctoolkit/wc/pkg/session"
)

// Handle is what commands do with an open store: a *Store opened in this
// process, or a *Client of the resident store process that holds it open
// for many short commands (Badger's read-write open and close cost more
// than the work of a typical command).
type Handle interface {
	Resolve(ref string) (string, error)
	Meta(id string) (session.Meta, error)
	Node(id string, seq uint64) (session.Node, error)
	Walk(id string, from uint64, max int, fn func(*session.Node) bool) error
	Nodes(id string, fn func(seq uint64, raw []byte) error) error
	Path(id string, head uint64, fn func(*session.Node) error) error
	PathRaw(id string, head uint64, fn func(seq uint64, raw []byte) error) error
	List(fn func(*session.Meta) error) error
	ListInfo(q ListQuery, fn func(*session.Info) error) error
	Commit(meta *session.Meta, nodes []session.Node) error
	PutBlob(id string, sum [32]byte, data []byte) error
	Blob(id string, sum [32]byte) ([]byte, error)
	Collect(m *session.Meta, dryRun bool) (Freed, error)
	// Settle marks a point between the items of a batch (see Store.Settle).
	Settle() error
	Close() error
}

var (
	_ Handle = (*Store)(nil)
	_ Handle = (*Client)(nil)
)

// SocketPath is where the resident process of the store in dir listens.
func SocketPath(dir string) string { return filepath.Join(dir, "wcd.sock") }

// A streamed result is sent in chunks of at most this many items or about
// this many bytes, each pulled by the client, so that neither side holds a
// whole session.
const (
	chunkItems = 256
	chunkBytes = 256 << 10
)

type wireNode struct {
	Seq   uint64
	Value []byte
}

type wireReq struct {
	Op      string
	Mode    Mode
	Timeout time.Duration
	ID      string
	Seq     uint64
	Max     int
	Meta    []byte
	Nodes   []wireNode
	Sum     [32]byte
	Data    []byte
	DryRun  bool
	// Defer lets the server answer a write before syncing it: the client
	// writes more and ends with "end", which syncs them all at once.
	Defer bool
	Query ListQuery
	// Packed asks for a stream's items in Data, one after another, each
	// as seq (8 bytes), length (4 bytes, big endian) and value: one copy
	// per chunk instead of one allocation per item. A server that does
	// not know it sends Items, which the client reads as well.
	Packed bool
}

type wireErr struct{ Kind, Msg, Ref string }

type wireResp struct {
	Err   *wireErr
	Str   string
	Meta  []byte
	Items []wireNode
	More  bool
	Data  []byte
	Freed Freed
}

// toWire keeps an error's kind across the socket, so that exit statuses do
// not depend on where the store was opened.
func toWire(err error) *wireErr {
	if err == nil {
		return nil
	}
	var ref *RefError
	var inv *session.InvalidError
	switch {
	case errors.As(err, &ref):
		return &wireErr{Kind: "ref", Ref: ref.Ref}
	case errors.As(err, &inv):
		return &wireErr{Kind: "invalid", Msg: inv.Msg}
	case errors.Is(err, ErrNotFound):
		return &wireErr{Kind: "notfound", Msg: err.Error()}
	case errors.Is(err, ErrAmbiguous):
		return &wireErr{Kind: "ambiguous", Msg: err.Error()}
	case errors.Is(err, ErrBusy):
		return &wireErr{Kind: "busy", Msg: err.Error()}
	case errors.Is(err, ErrNotStore):
		return &wireErr{Kind: "notstore", Msg: err.Error()}
	}
	return &wireErr{Kind: "other", Msg: err.Error()}
}

func (e *wireErr) err() error {
	if e == nil {
		return nil
	}
	switch e.Kind {
	case "ref":
		return &RefError{Ref: e.Ref}
	case "invalid":
		return &session.InvalidError{Msg: e.Msg}
	case "notfound":
		return &textError{msg: e.Msg, kind: ErrNotFound}
	case "ambiguous":
		return &textError{msg: e.Msg, kind: ErrAmbiguous}
	case "busy":
		return &textError{msg: e.Msg, kind: ErrBusy}
	case "notstore":
		return &textError{msg: e.Msg, kind: ErrNotStore}
	}
	return errors.New(e.Msg)
}

// sessionLock is the resident process's stand-in for Dir/lock: writers
// exclusive, readers shared, a wait bounded by the client's lock timeout.
type sessionLock struct {
	mu      sync.Mutex
	readers int
	writer  bool
	changed chan struct{}
}

func (l *sessionLock) acquire(mode Mode, timeout time.Duration, dir string) error {
	deadline := time.Now().Add(timeout)
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
			return busyError(dir)
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
}

// ErrStoreGone is returned by Serve when the store directory was removed,
// moved or replaced while it was served. The process must then exit at
// once, without closing the store: Badger's close would flush into a
// directory that is gone (retrying forever) or being removed. What it
// committed survives as after a kill -9, wherever the directory went.
var ErrStoreGone = errors.New("store: the store directory was removed, moved or replaced")

// watchInterval is how often a resident process checks that its store
// directory and socket are still where it serves them.
const watchInterval = 50 * time.Millisecond

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
	// Badger and the socket are reached through the directory itself
	// rather than its path, so that nothing is ever written into whatever
	// takes the path later; it also keeps the socket's path short.
	root := fmt.Sprintf("/proc/self/fd/%d", d.Fd())
	if fi, err := os.Stat(root); err != nil || !os.SameFile(fi, dirInfo) {
		root = dir // no /proc: the watch below must do
	}
	st, err := openServed(opts, dir, root, cfg.Wait)
	if err != nil {
		d.Close()
		return err
	}
	sock := SocketPath(root)
	_ = os.Remove(sock) // left by a server that died; we hold the lock now
	ln, err := net.Listen("unix", sock)
	if err != nil {
		st.Close()
		d.Close()
		return mapErr("listen", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // removed by us, and only while ours
	_ = os.Chmod(sock, 0o600)
	sockInfo, err := os.Lstat(sock)
	if err != nil {
		st.Close()
		d.Close()
		return mapErr("listen", err)
	}
	srv := &server{st: st, dir: dir, root: root, dirFile: d, dirInfo: dirInfo, sock: sock, sockInfo: sockInfo,
		stale: cfg.Stale, activity: make(chan struct{}, 1), quit: make(chan struct{})}
	go srv.accept(ln)
	if cfg.Ready != nil {
		cfg.Ready()
	}
	idle := time.NewTimer(cfg.Idle)
	defer idle.Stop()
	watch := time.NewTicker(watchInterval)
	defer watch.Stop()
wait:
	for {
		select {
		case <-srv.activity:
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
	d.Close()
	return closeErr
}

// openServed opens the store for the resident process. While another
// process holds it, it retries until wait has passed, and gives up early
// when a resident process answers on the socket: that one serves it.
func openServed(opts Options, dir, root string, wait time.Duration) (*Store, error) {
	deadline := time.Now().Add(wait)
	for delay := time.Millisecond; ; delay = min(2*delay, 25*time.Millisecond) {
		// Trying once at a time (LockTimeout 0): a waiting flock would
		// leave a blocked thread behind at every retry.
		st, err := Open(Options{Dir: root, Sync: opts.Sync}, Write)
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
	conn, err := dialSocket(dir)
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
	if s.sockInfo != nil {
		if cur, err := os.Lstat(s.sock); err != nil || !os.SameFile(cur, s.sockInfo) {
			return true
		}
	}
	return false
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
	wc := newWireConn(conn)
	var hello wireHello
	if err := wc.recv(&hello); err != nil {
		return
	}
	welcome := wireWelcome{Proto: protocolVersion, Build: buildID()}
	switch {
	case hello.Op == "shutdown":
		s.shutdown()
		_ = wc.send(&welcome)
		return
	case hello.Proto != protocolVersion || hello.Build != welcome.Build || s.stale != nil && s.stale():
		// A client of another build: make way for a resident process of
		// its own once the clients being served are done.
		s.shutdown()
		welcome.Err = &wireErr{Kind: "stale"}
		_ = wc.send(&welcome)
		return
	case hello.Op != "begin":
		return
	}
	mode := hello.Mode
	if err := s.lock.acquire(mode, hello.Timeout, s.dir); err != nil {
		welcome.Err = toWire(err)
		_ = wc.send(&welcome)
		return
	}
	defer s.lock.release(mode)
	if mode == Write {
		// After the client has its answer, before the next one comes.
		defer func() { _ = s.st.tidy() }()
	}
	for _, ref := range hello.Refs[:min(len(hello.Refs), maxPrefetched)] {
		welcome.Resolved = append(welcome.Resolved, s.resolve(ref))
	}
	if err := wc.send(&welcome); err != nil {
		return
	}
	unsynced := false
	for {
		var req wireReq
		if err := wc.recv(&req); err != nil {
			return
		}
		residentRequests.Add(1)
		if req.Op == "end" { // sent only by a client with unsynced writes
			var err error
			if unsynced {
				err = s.sync()
			}
			_ = wc.send(&wireResp{Err: s.toWire(err)})
			return
		}
		if mode == Read && isWrite(req.Op) {
			_ = wc.send(&wireResp{Err: toWire(errReadOnly)})
			continue
		}
		unsynced = unsynced || req.Op == "putblob" || req.Defer
		if err := s.handle(&req, wc); err != nil {
			return // the connection broke
		}
	}
}

func isWrite(op string) bool { return op == "commit" || op == "putblob" || op == "collect" }

// handle answers one request; it returns an error only when the
// connection is unusable.
func (s *server) handle(req *wireReq, wc *wireConn) error {
	var resp wireResp
	var err error
	switch req.Op {
	case "resolve":
		resp = s.resolve(req.ID)
		return wc.send(&resp)
	case "meta":
		var m session.Meta
		if m, err = s.st.Meta(req.ID); err == nil {
			resp.Meta = session.EncodeMeta(&m)
		}
	case "node":
		var n session.Node
		if n, err = s.st.Node(req.ID, req.Seq); err == nil {
			resp.Items = []wireNode{{n.Seq, session.EncodeNode(&n)}}
		}
	case "commit":
		var m session.Meta
		if m, err = session.DecodeMeta(req.Meta); err == nil {
			nodes := make([]session.Node, 0, len(req.Nodes))
			for _, wn := range req.Nodes {
				var n session.Node
				if n, err = session.DecodeNode(wn.Seq, wn.Value); err != nil {
					break
				}
				nodes = append(nodes, n)
			}
			if err == nil {
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
		}
	case "putblob":
		err = s.st.PutBlob(req.ID, req.Sum, req.Data)
	case "blob":
		resp.Data, err = s.st.Blob(req.ID, req.Sum)
	case "collect":
		var m session.Meta
		if m, err = session.DecodeMeta(req.Meta); err == nil {
			resp.Freed, err = s.st.Collect(&m, req.DryRun)
		}
		if err == nil && !req.DryRun && !req.Defer {
			err = s.sync()
		}
	case "walk", "nodes", "path", "list", "listinfo":
		return s.stream(req, wc)
	default:
		err = fmt.Errorf("store: unknown request %q", req.Op)
	}
	resp.Err = s.toWire(err)
	return wc.send(&resp)
}

// toWire keeps an error's kind, as the package's toWire does, and names the
// store by its path rather than by the descriptor the process reaches it
// through.
func (s *server) toWire(err error) *wireErr {
	e := toWire(err)
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
	residentSyncs.Add(1)
	return s.st.syncNow()
}

// resolve answers a resolve request for ref.
func (s *server) resolve(ref string) wireResp {
	var resp wireResp
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
func (s *server) prefetch(id string, resp *wireResp) {
	m, err := s.st.Meta(id)
	if err != nil {
		return // the client asks, and gets the error, itself
	}
	resp.Meta = session.EncodeMeta(&m)
	if m.Head == 0 {
		return
	}
	if n, err := s.st.Node(id, m.Head); err == nil {
		if v := session.EncodeNode(&n); len(v) <= maxPrefetchNode {
			resp.Items = []wireNode{{n.Seq, v}}
		}
	}
}

var errClientStopped = errors.New("client stopped")

// stream runs a callback method and sends its items in chunks, each pulled
// by the client with "more" (or ended with "stop").
func (s *server) stream(req *wireReq, wc *wireConn) error {
	if req.Packed {
		return s.streamAhead(req, wc)
	}
	var chunk []wireNode
	size := 0
	var connErr error
	stopped := false
	emit := func(seq uint64, value []byte) error {
		if stopped {
			return errClientStopped
		}
		chunk = append(chunk, wireNode{seq, append([]byte(nil), value...)})
		if size += len(value); len(chunk) < chunkItems && size < chunkBytes {
			return nil
		}
		if connErr = wc.send(&wireResp{Items: chunk, More: true}); connErr != nil {
			return connErr
		}
		chunk, size = chunk[:0], 0
		var next wireReq
		if connErr = wc.recv(&next); connErr != nil {
			return connErr
		}
		if next.Op != "more" {
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
	return wc.send(&wireResp{Items: chunk, Err: s.toWire(err)})
}

// run calls the store method a stream request names.
func (s *server) run(req *wireReq, emit func(seq uint64, value []byte) error) error {
	switch req.Op {
	case "walk":
		return s.st.Walk(req.ID, req.Seq, req.Max, func(n *session.Node) bool {
			return emit(n.Seq, session.EncodeNode(n)) == nil
		})
	case "nodes":
		return s.st.Nodes(req.ID, emit)
	case "path":
		// The stored values as they are: the client decodes them.
		return s.st.pathRaw(req.ID, req.Seq, emit)
	case "list":
		return s.st.List(func(m *session.Meta) error { return emit(0, session.EncodeMeta(m)) })
	case "listinfo": // each item: the id, then the summary
		item := func(id sid, summary []byte) error { return emit(0, append(id[:], summary...)) }
		if ok, err := s.listed.query(s.st, req.Query, item); ok {
			return err
		}
		return s.listed.listNewest(s.st, req.Query, item)
	}
	return nil
}

// streamAhead serves a packed stream, which a client asks for to read a
// whole range: the store is read a chunk ahead of the client's "more", on
// a goroutine of its own, so that reading, the socket and the client's work
// overlap.
func (s *server) streamAhead(req *wireReq, wc *wireConn) error {
	chunks := make(chan *wireResp, 1)
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
			case chunks <- &wireResp{Data: packed, More: true}:
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
			case chunks <- &wireResp{Data: packed, Err: toWire(err)}:
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
		if err := wc.send(resp); err != nil {
			return finish(err)
		}
		if !resp.More {
			return nil
		}
		select {
		case free <- resp.Data[:0]:
		default:
		}
		var next wireReq
		if err := wc.recv(&next); err != nil {
			return finish(err)
		}
		if next.Op != "more" {
			return finish(nil) // the client stopped reading; it expects no more
		}
	}
	return nil
}

// Client is a command's connection to the resident store process. Like a
// *Store it holds the lock (the server's) from Dial to Close.
type Client struct {
	conn     io.ReadWriteCloser
	wc       *wireConn
	mode     Mode
	closed   bool
	unsynced bool // a write the server has not synced yet
	writes   int  // commits and collections so far
	// What resolves brought along (see server.prefetch), by session id;
	// valid while the lock is held, dropped by the session's writes.
	prefetched map[string]*prefetched
	// The welcome's answers to the references Dial was given, by
	// reference; each is used once.
	resolved map[string]*wireResp
	// The listing DialListing sent with the hello, until its answer is
	// read.
	listing *ListQuery
	chunk   []byte // a packed chunk's buffer, reused
}

type prefetched struct {
	meta []byte
	head wireNode // Value nil when it was not sent
}

// maxPrefetched bounds the prefetched sessions a client keeps.
const maxPrefetched = 16

// ErrNoServer is returned by Dial when no resident process serves the
// store, or the one there is stopping or runs another build: start one, or
// open the store directly.
var ErrNoServer = errors.New("store: no resident store process")

// Dial connects to the resident process of the store in opts.Dir and takes
// its lock for mode, waiting up to opts.LockTimeout. It returns ErrBusy
// when that wait timed out, and ErrNoServer when there is no resident
// process to use. The first few refs, the references the command is about
// to resolve, are resolved in the same round trip.
func Dial(opts Options, mode Mode, refs ...string) (*Client, error) {
	return connect(opts, mode, refs, nil)
}

// DialListing is Dial for a reader whose first request is ListInfo(q): the
// request goes with the hello, and is answered after the welcome, saving
// a round trip.
func DialListing(opts Options, q ListQuery) (*Client, error) {
	return connect(opts, Read, nil, &q)
}

func connect(opts Options, mode Mode, refs []string, listing *ListQuery) (*Client, error) {
	conn, err := dialSocket(filepath.Clean(opts.Dir))
	if err != nil {
		return nil, ErrNoServer
	}
	c := &Client{conn: conn, wc: newWireConn(conn), mode: mode, listing: listing}
	refs = refs[:min(len(refs), maxPrefetched)]
	hello := wireHello{Proto: protocolVersion, Op: "begin", Build: buildID(), Mode: mode, Timeout: opts.LockTimeout, Refs: refs}
	first := []wireMessage{&hello}
	if listing != nil {
		// A server that refuses the hello closes the connection without
		// reading it.
		first = append(first, listingReq(*listing))
	}
	var welcome wireWelcome
	if err := c.wc.send(first...); err == nil {
		err = c.wc.recv(&welcome)
	}
	switch {
	case err != nil, welcome.Proto != protocolVersion, welcome.Err != nil && welcome.Err.Kind == "stale":
		// Stopping, or of another build: it makes way once its clients
		// are done.
		conn.Close()
		return nil, ErrNoServer
	case welcome.Err != nil:
		conn.Close()
		return nil, welcome.Err.err()
	case len(welcome.Resolved) > len(refs):
		conn.Close()
		return nil, errConnLost
	}
	for i := range welcome.Resolved {
		if c.resolved == nil {
			c.resolved = map[string]*wireResp{}
		}
		c.resolved[refs[i]] = &welcome.Resolved[i]
	}
	return c, nil
}

// maxSocketPath is the longest socket path a connect or bind takes (108
// bytes with its NUL on Linux), with room to spare.
const maxSocketPath = 100

// dialSocket connects to the socket of the store in dir; a path too long
// for a socket is reached through the directory's descriptor.
func dialSocket(dir string) (io.ReadWriteCloser, error) {
	sock := SocketPath(dir)
	if len(sock) <= maxSocketPath {
		return dialBlocking(sock)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return dialBlocking(SocketPath(fmt.Sprintf("/proc/self/fd/%d", fd)))
}

// Shutdown asks the resident process of dir to stop when its clients are
// done and waits up to timeout until it has closed the store (with 0, it
// only asks). Without a server it does nothing.
func Shutdown(dir string, timeout time.Duration) error {
	dir = filepath.Clean(dir)
	conn, err := dialSocket(dir)
	if err != nil {
		return nil
	}
	wc := newWireConn(conn)
	if err := wc.send(&wireHello{Proto: protocolVersion, Op: "shutdown", Build: buildID()}); err == nil {
		var welcome wireWelcome
		_ = wc.recv(&welcome)
	}
	conn.Close()
	if timeout <= 0 {
		return nil
	}
	// The server has stopped listening; it releases Dir/lock once closed.
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	probe := &Store{dir: dir, lock: f}
	if err := probe.flock(syscall.LOCK_EX, time.Now().Add(timeout)); err != nil {
		return err
	}
	probe.unlock()
	return nil
}

var errConnLost = errors.New("store: lost the connection to the resident store process")

func (c *Client) call(req *wireReq) (*wireResp, error) {
	if c.closed {
		return nil, errClosed
	}
	if c.listing != nil {
		sent := *c.listing
		c.listing = nil
		if req.Op == "listinfo" && !req.Packed && req.Query == sent {
			return c.receive() // asked already, with the hello
		}
		if err := c.skipListing(); err != nil {
			return nil, err
		}
	}
	if err := c.wc.send(req); err != nil {
		return nil, errConnLost
	}
	var resp wireResp
	if err := c.wc.recv(&resp); err != nil {
		return nil, errConnLost
	}
	return &resp, nil
}

func (c *Client) do(req *wireReq) (*wireResp, error) {
	resp, err := c.call(req)
	if err != nil {
		return nil, err
	}
	return resp, resp.Err.err()
}

// stream pulls a streamed result chunk by chunk; fn's error stops it, and
// value is valid only during fn. With readAhead, which suits reading whole
// ranges, the items come packed, and it asks for the next chunk before
// passing on the one it has, so that the server reads while fn works.
func (c *Client) stream(req *wireReq, readAhead bool, fn func(seq uint64, value []byte) error) error {
	req.Packed = readAhead
	resp, err := c.call(req)
	for err == nil {
		asked := readAhead && resp.More
		if asked {
			if err := c.wc.send(&wireReq{Op: "more"}); err != nil {
				return errConnLost
			}
		}
		if ferr := eachItem(resp, fn); ferr != nil {
			if resp.More {
				if err := c.stopStream(asked); err != nil {
					return err
				}
			}
			return ferr
		}
		if !resp.More {
			return resp.Err.err()
		}
		if asked {
			c.chunk = resp.Data
			resp, err = c.receive()
		} else {
			resp, err = c.call(&wireReq{Op: "more"})
		}
	}
	return err
}

// listingReq is the request of ListInfo(q).
func listingReq(q ListQuery) *wireReq { return &wireReq{Op: "listinfo", Query: q} }

// skipListing reads the first chunk of the listing sent with the hello,
// which the command turned out not to want, and stops it.
func (c *Client) skipListing() error {
	resp, err := c.receive()
	if err != nil {
		return err
	}
	if resp.More {
		if err := c.wc.send(&wireReq{Op: "stop"}); err != nil {
			return errConnLost
		}
	}
	return nil
}

// stopStream ends a stream whose rest the client does not want. A chunk it
// asked for already comes anyway; the server expects no reply to read
// after "stop".
func (c *Client) stopStream(asked bool) error {
	if asked {
		resp, err := c.receive()
		if err != nil {
			return err
		}
		if !resp.More {
			return nil
		}
	}
	if err := c.wc.send(&wireReq{Op: "stop"}); err != nil {
		return errConnLost
	}
	return nil
}

// receive reads a response to a request already sent; a packed chunk goes
// into the buffer of the one before.
func (c *Client) receive() (*wireResp, error) {
	var resp wireResp
	if err := c.wc.recv(&resp); err != nil {
		return nil, errConnLost
	}
	return &resp, nil
}

// eachItem calls fn with the items of a chunk, packed or not.
func eachItem(resp *wireResp, fn func(seq uint64, value []byte) error) error {
	for _, it := range resp.Items {
		if err := fn(it.Seq, it.Value); err != nil {
			return err
		}
	}
	for d := resp.Data; len(d) > 0; {
		if len(d) < 12 {
			return errConnLost
		}
		seq, n := binary.BigEndian.Uint64(d), binary.BigEndian.Uint32(d[8:])
		if uint64(n) > uint64(len(d)-12) {
			return errConnLost
		}
		if err := fn(seq, d[12:12+n]); err != nil {
			return err
		}
		d = d[12+n:]
	}
	return nil
}

// Resolve implements Handle.
func (c *Client) Resolve(ref string) (string, error) {
	resp := c.resolved[ref]
	var err error
	if resp != nil {
		delete(c.resolved, ref) // answered once, as a request is
		if c.closed {
			return "", errClosed
		}
		err = resp.Err.err()
	} else {
		resp, err = c.do(&wireReq{Op: "resolve", ID: ref})
	}
	if err != nil {
		return "", err
	}
	if resp.Meta != nil {
		if len(c.prefetched) >= maxPrefetched || c.prefetched == nil {
			c.prefetched = map[string]*prefetched{}
		}
		p := &prefetched{meta: resp.Meta}
		if len(resp.Items) == 1 {
			p.head = resp.Items[0]
		}
		c.prefetched[resp.Str] = p
	}
	return resp.Str, nil
}

// Meta implements Handle.
func (c *Client) Meta(id string) (session.Meta, error) {
	if p := c.prefetched[id]; p != nil {
		return session.DecodeMeta(p.meta)
	}
	resp, err := c.do(&wireReq{Op: "meta", ID: id})
	if err != nil {
		return session.Meta{}, err
	}
	return session.DecodeMeta(resp.Meta)
}

// Node implements Handle.
func (c *Client) Node(id string, seq uint64) (session.Node, error) {
	if p := c.prefetched[id]; p != nil && p.head.Value != nil && p.head.Seq == seq {
		return session.DecodeNode(seq, p.head.Value)
	}
	resp, err := c.do(&wireReq{Op: "node", ID: id, Seq: seq})
	if err != nil {
		return session.Node{}, err
	}
	if len(resp.Items) != 1 {
		return session.Node{}, errConnLost
	}
	return session.DecodeNode(resp.Items[0].Seq, resp.Items[0].Value)
}

var errStopWalk = errors.New("stop walk")

// Walk implements Handle.
func (c *Client) Walk(id string, from uint64, max int, fn func(*session.Node) bool) error {
	err := c.stream(&wireReq{Op: "walk", ID: id, Seq: from, Max: max}, false, func(seq uint64, v []byte) error {
		n, err := session.DecodeNode(seq, v)
		if err != nil {
			return err
		}
		if !fn(&n) {
			return errStopWalk
		}
		return nil
	})
	if errors.Is(err, errStopWalk) {
		return nil
	}
	return err
}

// Nodes implements Handle.
func (c *Client) Nodes(id string, fn func(seq uint64, raw []byte) error) error {
	return c.stream(&wireReq{Op: "nodes", ID: id}, true, fn)
}

// Path implements Handle.
func (c *Client) Path(id string, head uint64, fn func(*session.Node) error) error {
	key, err := parseID(id)
	if err != nil {
		return err
	}
	return decodeAhead(key, func(emit func(uint64, []byte) error) error {
		return c.stream(&wireReq{Op: "path", ID: id, Seq: head}, true, emit)
	}, fn)
}

// PathRaw implements Handle.
func (c *Client) PathRaw(id string, head uint64, fn func(seq uint64, raw []byte) error) error {
	key, err := parseID(id)
	if err != nil {
		return err
	}
	return readAhead(key, func(emit func(uint64, []byte) error) error {
		return c.stream(&wireReq{Op: "path", ID: id, Seq: head}, true, emit)
	}, fn)
}

// List implements Handle.
func (c *Client) List(fn func(*session.Meta) error) error {
	return c.stream(&wireReq{Op: "list"}, false, func(_ uint64, v []byte) error {
		m, err := session.DecodeMeta(v)
		if err != nil {
			return err
		}
		return fn(&m)
	})
}

// ListInfo implements Handle.
func (c *Client) ListInfo(q ListQuery, fn func(*session.Info) error) error {
	return c.stream(listingReq(q), false, func(_ uint64, v []byte) error {
		if len(v) < idLen {
			return errConnLost
		}
		info, err := decodeSummary(sid(v[:idLen]), v[idLen:])
		if err != nil {
			return err
		}
		return fn(&info)
	})
}

// Commit implements Handle.
func (c *Client) Commit(meta *session.Meta, nodes []session.Node) error {
	delete(c.prefetched, meta.ID)
	c.resolved = nil
	req := &wireReq{Op: "commit", Meta: session.EncodeMeta(meta), Nodes: make([]wireNode, len(nodes))}
	for i := range nodes {
		req.Nodes[i] = wireNode{nodes[i].Seq, session.EncodeNode(&nodes[i])}
	}
	req.Defer = c.deferSync()
	_, err := c.do(req)
	c.synced(req.Defer, err)
	return err
}

// deferSync tells whether the server may answer the next write before it
// syncs: a command's first write is synced at once, since it is usually
// its only one; later ones are synced together when the command ends.
func (c *Client) deferSync() bool {
	c.writes++
	return c.writes > 1
}

// synced notes what an answered write left unsynced.
func (c *Client) synced(deferred bool, err error) {
	if deferred {
		c.unsynced = true
	} else if err == nil {
		c.unsynced = false // the server synced everything before answering
	}
}

// PutBlob implements Handle.
func (c *Client) PutBlob(id string, sum [32]byte, data []byte) error {
	c.unsynced = true
	_, err := c.do(&wireReq{Op: "putblob", ID: id, Sum: sum, Data: data})
	return err
}

// Blob implements Handle.
func (c *Client) Blob(id string, sum [32]byte) ([]byte, error) {
	resp, err := c.do(&wireReq{Op: "blob", ID: id, Sum: sum})
	if err != nil {
		return nil, err
	}
	return resp.Data, nil
}

// Collect implements Handle.
func (c *Client) Collect(m *session.Meta, dryRun bool) (Freed, error) {
	delete(c.prefetched, m.ID)
	c.resolved = nil
	req := &wireReq{Op: "collect", Meta: session.EncodeMeta(m), DryRun: dryRun}
	if !dryRun {
		req.Defer = c.deferSync()
	}
	resp, err := c.do(req)
	if !dryRun {
		c.synced(req.Defer, err)
	}
	if err != nil {
		return Freed{}, err
	}
	return resp.Freed, nil
}

// Settle does nothing: the resident process bounds its own memory.
func (c *Client) Settle() error { return nil }

// Close ends the command's session. The server synced the first commit
// before answering it; what was written after it is synced now, so that
// what is printed next is on disk.
func (c *Client) Close() error {
	if c.closed {
		return nil
	}
	var err error
	if c.unsynced {
		_, err = c.do(&wireReq{Op: "end"})
	}
	c.closed = true
	c.conn.Close()
	return err
}
