package store

import (
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

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
	Commit(meta *session.Meta, nodes []session.Node) error
	PutBlob(id string, sum [32]byte, data []byte) error
	Blob(id string, sum [32]byte) ([]byte, error)
	Collect(m *session.Meta, dryRun bool) (Freed, error)
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

// Serve runs the resident store process: it opens the store in opts.Dir for
// writing, which takes Dir/lock for as long as it runs (commands that open
// the store themselves queue behind it), and serves clients on the socket
// until no client has come for idle. It then closes the store the way any
// writer does. A second server finds the lock taken and returns ErrBusy.
func Serve(opts Options, idle time.Duration) error {
	opts.LockTimeout = 0
	st, err := Open(opts, Write)
	if err != nil {
		return err
	}
	sock := SocketPath(st.dir)
	_ = os.Remove(sock) // left by a server that died; we hold the lock now
	ln, err := net.Listen("unix", sock)
	if err != nil {
		st.Close()
		return mapErr("listen", err)
	}
	_ = os.Chmod(sock, 0o600)
	srv := &server{st: st, dir: st.dir, activity: make(chan struct{}, 1), quit: make(chan struct{})}
	go srv.accept(ln)
	timer := time.NewTimer(idle)
	defer timer.Stop()
wait:
	for {
		select {
		case <-srv.activity:
		case <-srv.quit:
			srv.stopAccepting()
			break wait
		case <-timer.C:
			if srv.stopIfIdle() {
				break wait
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(idle)
	}
	// A client that connects from now on finds no socket and opens the
	// store itself, queueing behind our lock until Close releases it.
	_ = os.Remove(sock)
	_ = ln.Close()
	srv.conns.Wait()
	return st.Close()
}

type server struct {
	st       *Store
	dir      string
	lock     sessionLock
	conns    sync.WaitGroup
	mu       sync.Mutex
	active   int
	closing  bool
	activity chan struct{}
	quit     chan struct{}
	quitOnce sync.Once
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

func (s *server) accept(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closing { // the client falls back to opening the store itself
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

// serveConn serves one command: begin (take the lock), operations, end.
// A client that disappears releases its lock with its connection; what it
// committed stays committed, as when a command is killed.
func (s *server) serveConn(conn net.Conn) {
	defer conn.Close()
	enc, dec := gob.NewEncoder(conn), gob.NewDecoder(conn)
	var req wireReq
	if err := dec.Decode(&req); err != nil {
		return
	}
	if req.Op == "shutdown" {
		s.quitOnce.Do(func() { close(s.quit) })
		_ = enc.Encode(&wireResp{})
		return
	}
	if req.Op != "begin" {
		return
	}
	mode := req.Mode
	if err := s.lock.acquire(mode, req.Timeout, s.dir); err != nil {
		_ = enc.Encode(&wireResp{Err: toWire(err)})
		return
	}
	defer s.lock.release(mode)
	if err := enc.Encode(&wireResp{}); err != nil {
		return
	}
	for {
		var req wireReq
		if err := dec.Decode(&req); err != nil {
			return
		}
		if req.Op == "end" {
			var err error
			if mode == Write {
				// What the client prints must be on disk, as after a
				// Close in a command of its own.
				err = s.st.syncNow()
			}
			_ = enc.Encode(&wireResp{Err: toWire(err)})
			return
		}
		if mode == Read && isWrite(req.Op) {
			_ = enc.Encode(&wireResp{Err: toWire(errReadOnly)})
			continue
		}
		if err := s.handle(&req, enc, dec); err != nil {
			return // the connection broke
		}
	}
}

func isWrite(op string) bool { return op == "commit" || op == "putblob" || op == "collect" }

// handle answers one request; it returns an error only when the
// connection is unusable.
func (s *server) handle(req *wireReq, enc *gob.Encoder, dec *gob.Decoder) error {
	var resp wireResp
	var err error
	switch req.Op {
	case "resolve":
		resp.Str, err = s.st.Resolve(req.ID)
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
				err = s.st.Commit(&m, nodes)
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
	case "walk", "nodes", "path", "list":
		return s.stream(req, enc, dec)
	default:
		err = fmt.Errorf("store: unknown request %q", req.Op)
	}
	resp.Err = toWire(err)
	return enc.Encode(&resp)
}

var errClientStopped = errors.New("client stopped")

// stream runs a callback method and sends its items in chunks, each pulled
// by the client with "more" (or ended with "stop").
func (s *server) stream(req *wireReq, enc *gob.Encoder, dec *gob.Decoder) error {
	if req.Packed {
		return s.streamAhead(req, enc, dec)
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
		if connErr = enc.Encode(&wireResp{Items: chunk, More: true}); connErr != nil {
			return connErr
		}
		chunk, size = chunk[:0], 0
		var next wireReq
		if connErr = dec.Decode(&next); connErr != nil {
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
	return enc.Encode(&wireResp{Items: chunk, Err: toWire(err)})
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
	}
	return nil
}

// streamAhead serves a packed stream, which a client asks for to read a
// whole range: the store is read a chunk ahead of the client's "more", on
// a goroutine of its own, so that reading, the socket and the client's work
// overlap.
func (s *server) streamAhead(req *wireReq, enc *gob.Encoder, dec *gob.Decoder) error {
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
		if err := enc.Encode(resp); err != nil {
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
		if err := dec.Decode(&next); err != nil {
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
	conn   net.Conn
	enc    *gob.Encoder
	dec    *gob.Decoder
	mode   Mode
	closed bool
	chunk  []byte // a packed chunk's buffer, reused
}

// Dial connects to the resident process of the store in opts.Dir and takes
// its lock for mode, waiting up to opts.LockTimeout. An error that is not
// ErrBusy means no server answered: open the store directly instead.
func Dial(opts Options, mode Mode) (*Client, error) {
	conn, err := net.Dial("unix", SocketPath(filepath.Clean(opts.Dir)))
	if err != nil {
		return nil, err
	}
	c := &Client{conn: conn, enc: gob.NewEncoder(conn), dec: gob.NewDecoder(conn), mode: mode}
	resp, err := c.call(&wireReq{Op: "begin", Mode: mode, Timeout: opts.LockTimeout})
	if err == nil {
		err = resp.Err.err()
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// Shutdown asks the resident process of dir to stop when its clients are
// done and waits until it has closed the store. Without a server it does
// nothing.
func Shutdown(dir string, timeout time.Duration) error {
	conn, err := net.Dial("unix", SocketPath(filepath.Clean(dir)))
	if err != nil {
		return nil
	}
	defer conn.Close()
	if err := gob.NewEncoder(conn).Encode(&wireReq{Op: "shutdown"}); err != nil {
		return nil
	}
	var resp wireResp
	_ = gob.NewDecoder(conn).Decode(&resp)
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
	if err := c.enc.Encode(req); err != nil {
		return nil, errConnLost
	}
	var resp wireResp
	if err := c.dec.Decode(&resp); err != nil {
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
			if err := c.enc.Encode(&wireReq{Op: "more"}); err != nil {
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
	if err := c.enc.Encode(&wireReq{Op: "stop"}); err != nil {
		return errConnLost
	}
	return nil
}

// receive reads a response to a request already sent; a packed chunk goes
// into the buffer of the one before.
func (c *Client) receive() (*wireResp, error) {
	resp := wireResp{Data: c.chunk[:0]}
	if err := c.dec.Decode(&resp); err != nil {
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
	resp, err := c.do(&wireReq{Op: "resolve", ID: ref})
	if err != nil {
		return "", err
	}
	return resp.Str, nil
}

// Meta implements Handle.
func (c *Client) Meta(id string) (session.Meta, error) {
	resp, err := c.do(&wireReq{Op: "meta", ID: id})
	if err != nil {
		return session.Meta{}, err
	}
	return session.DecodeMeta(resp.Meta)
}

// Node implements Handle.
func (c *Client) Node(id string, seq uint64) (session.Node, error) {
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

// Commit implements Handle.
func (c *Client) Commit(meta *session.Meta, nodes []session.Node) error {
	req := &wireReq{Op: "commit", Meta: session.EncodeMeta(meta), Nodes: make([]wireNode, len(nodes))}
	for i := range nodes {
		req.Nodes[i] = wireNode{nodes[i].Seq, session.EncodeNode(&nodes[i])}
	}
	_, err := c.do(req)
	return err
}

// PutBlob implements Handle.
func (c *Client) PutBlob(id string, sum [32]byte, data []byte) error {
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
	resp, err := c.do(&wireReq{Op: "collect", Meta: session.EncodeMeta(m), DryRun: dryRun})
	if err != nil {
		return Freed{}, err
	}
	return resp.Freed, nil
}

// Close ends the command's session: for a writer, the server syncs what
// was written before answering, so that what is printed next is on disk.
func (c *Client) Close() error {
	if c.closed {
		return nil
	}
	_, err := c.do(&wireReq{Op: "end"})
	c.closed = true
	c.conn.Close()
	return err
}
