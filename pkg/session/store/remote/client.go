package remote

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/record"
	"github.com/wctoolkit/wc/pkg/session/store/wire"
)

// Client is a command's connection to a store process. Like a store opened
// in the process, it holds the store's lock (the server's) from Dial to
// Close.
type Client struct {
	conn     io.ReadWriteCloser
	wc       *wire.Conn
	mode     store.Mode
	closed   bool
	unsynced bool // a write the server has not synced yet
	writes   int  // commits and collections so far
	// What resolves brought along (see the store's server.prefetch), by session id;
	// valid while the lock is held, dropped by the session's writes.
	prefetched map[string]*prefetched
	// The welcome's answers to the references Dial was given, by
	// reference; each is used once.
	resolved map[string]*wire.Response
	// The listing request sent with the hello (Ask.Listing), until its
	// answer is read.
	listing wire.Request
	chunk   []byte // a packed chunk's buffer, reused
	private bool   // the peer is a private store process (Attach)
}

var _ store.Handle = (*Client)(nil)

type prefetched struct {
	meta []byte
	rev  uint64    // the metadata's Revision
	head wire.Item // Value nil when it was not sent
}

// MaxPrefetched bounds the references a hello has resolved, and the
// prefetched sessions a client keeps.
const MaxPrefetched = 16

// ErrNoServer is returned by Dial when no resident process serves the
// store, or the one there is stopping or runs another build: start one, or
// open the store directly. Attach returns it when the private store
// process is gone.
var ErrNoServer = errors.New("store: no store process")

// Ask is how a command opens a store through a store process, and what it
// asks first: both go with the connection's hello.
type Ask struct {
	Mode        store.Mode
	LockTimeout time.Duration // how long the lock may be waited for
	// Refs, the references the command is about to resolve, are resolved
	// in the welcome (the first MaxPrefetched of them).
	Refs []string
	// Listing, for a reader whose first request is ListInfo(*Listing), or
	// ListJSON(*Listing) with ListingJSON, is answered right after the
	// welcome.
	Listing     *store.ListQuery
	ListingJSON bool
}

// Attach is Dial over conn, a connection to a private store process that
// serves this one client (wc-store with WC_STORE_PRIVATE): it opens the
// store for ask.Mode when the hello comes, and closes it when the client
// ends, before it answers Close, so that Close reports what closing the
// store found. A peer that is gone is ErrNoServer; one that speaks
// another protocol, ErrOtherProtocol.
func Attach(conn io.ReadWriteCloser, ask Ask) (*Client, error) {
	c, err := connect(conn, ask, "")
	if err == errStale {
		return nil, ErrOtherProtocol
	}
	if c != nil {
		c.private = true
	}
	return c, err
}

// ErrOtherProtocol is returned by Attach when the store process speaks
// another protocol: it comes from another wc build.
var ErrOtherProtocol = errors.New("store: the store process speaks another protocol")

var errStale = errors.New("store: the store process runs another build")

// connect sends the hello on conn, to the store process of dir (empty:
// a private one), and reads the welcome; it closes conn on failure.
func connect(conn io.ReadWriteCloser, ask Ask, dir string) (*Client, error) {
	c := &Client{conn: conn, wc: wire.NewConn(conn), mode: ask.Mode}
	refs := ask.Refs[:min(len(ask.Refs), MaxPrefetched)]
	hello := wire.Hello{Proto: wire.ProtocolVersion, Op: "begin", Build: wire.BuildID(), Mode: ask.Mode, Timeout: ask.LockTimeout, Refs: refs}
	first := []wire.Message{&hello}
	if ask.Listing != nil {
		// A server that refuses the hello closes the connection without
		// reading it.
		c.listing = listingReq(*ask.Listing, ask.ListingJSON)
		first = append(first, c.listing)
	}
	var welcome wire.Welcome
	// The store process answers once the client has its lock, or with
	// busy once the lock timeout passed: a process that does neither
	// (stopped, hung) holds the command no longer than that.
	bc, _ := conn.(*blockingConn)
	if bc != nil {
		_ = bc.setDeadline(ask.LockTimeout + welcomeGrace)
	}
	err := c.wc.Send(first...)
	if err == nil {
		err = c.wc.Recv(&welcome)
	}
	if bc != nil {
		_ = bc.setDeadline(0)
	}
	switch {
	case errors.Is(err, errNoAnswer):
		conn.Close()
		return nil, noAnswerError(dir, bc.pid, ask.LockTimeout+welcomeGrace)
	case err != nil:
		conn.Close()
		return nil, ErrNoServer // stopping or gone
	case welcome.Proto != wire.ProtocolVersion, welcome.Err != nil && welcome.Err.Kind == "stale":
		// Of another build: it makes way once its clients are done.
		conn.Close()
		return nil, errStale
	case welcome.Err != nil:
		conn.Close()
		return nil, welcome.Err.Err()
	case len(welcome.Resolved) > len(refs):
		conn.Close()
		return nil, errConnLost
	}
	for i := range welcome.Resolved {
		if c.resolved == nil {
			c.resolved = map[string]*wire.Response{}
		}
		c.resolved[refs[i]] = &welcome.Resolved[i]
	}
	return c, nil
}

// welcomeGrace is what a client allows a store process beyond its lock
// timeout to answer the hello: the process answers busy at the timeout.
const welcomeGrace = 500 * time.Millisecond

// noAnswerError is the error of a store process that did not answer in
// time: stopped (SIGSTOP, Ctrl-Z in its terminal) or hung.
func noAnswerError(dir string, pid int, wait time.Duration) error {
	what := "the store process"
	if dir != "" {
		what = "store " + dir + " is busy: its store process"
	}
	if pid == 0 { // a process on a socket pair, or one the kernel could not name
		return &store.KindError{Msg: fmt.Sprintf("%s did not answer within %v", what, wait.Round(time.Millisecond)), Kind: store.ErrBusy,
			Hints: []string{"raise --lock-timeout or WC_LOCK_TIMEOUT to wait longer"}}
	}
	return &store.KindError{Msg: fmt.Sprintf("%s (pid %d) did not answer within %v", what, pid, wait.Round(time.Millisecond)), Kind: store.ErrBusy,
		Hints: []string{fmt.Sprintf("if process %d is stopped, continue it (kill -CONT %d); wc-store --stop, or kill %d, ends it", pid, pid, pid)}}
}

var errClosed = errors.New("store: used after close")

var errConnLost = errors.New("store: lost the connection to the store process")

func (c *Client) call(req wire.Request) (*wire.Response, error) {
	if c.closed {
		return nil, errClosed
	}
	if c.listing != nil {
		sent := c.listing
		c.listing = nil
		if sameListing(req, sent) {
			return c.receive() // asked already, with the hello
		}
		if err := c.skipListing(); err != nil {
			return nil, err
		}
	}
	if err := c.wc.Send(req); err != nil {
		return nil, errConnLost
	}
	var resp wire.Response
	if err := c.wc.Recv(&resp); err != nil {
		return nil, errConnLost
	}
	return &resp, nil
}

func (c *Client) do(req wire.Request) (*wire.Response, error) {
	resp, err := c.call(req)
	if err != nil {
		return nil, err
	}
	return resp, resp.Err.Err()
}

// stream pulls a streamed result chunk by chunk; fn's error stops it, and
// value is valid only during fn. For a request that reads ahead, it asks
// for the next chunk before passing on the one it has, so that the server
// reads while fn works.
func (c *Client) stream(req wire.Streamed, fn func(seq uint64, value []byte) error) error {
	readAhead := req.ReadAhead()
	resp, err := c.call(req)
	for err == nil {
		asked := readAhead && resp.More
		if asked {
			if err := c.wc.Send(&wire.More{}); err != nil {
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
			return resp.Err.Err()
		}
		if asked {
			c.chunk = resp.Data
			resp, err = c.receive()
		} else {
			resp, err = c.call(&wire.More{})
		}
	}
	return err
}

// listingReq is the request of ListInfo(q), or of ListJSON(q).
func listingReq(q store.ListQuery, asJSON bool) wire.Streamed {
	if asJSON {
		return &wire.ListJSON{Query: q}
	}
	return &wire.ListInfo{Query: q}
}

// sameListing tells whether req asks for the listing sent, the same way.
func sameListing(req, sent wire.Request) bool {
	switch r := req.(type) {
	case *wire.ListInfo:
		s, ok := sent.(*wire.ListInfo)
		return ok && *r == *s
	case *wire.ListJSON:
		s, ok := sent.(*wire.ListJSON)
		return ok && *r == *s
	}
	return false
}

// skipListing reads the first chunk of the listing sent with the hello,
// which the command turned out not to want, and stops it.
func (c *Client) skipListing() error {
	resp, err := c.receive()
	if err != nil {
		return err
	}
	if resp.More {
		if err := c.wc.Send(&wire.Stop{}); err != nil {
			return errConnLost
		}
	}
	return nil
}

// stopStream ends a stream whose rest the client does not want. A chunk it
// asked for already comes anyway; the server expects no reply to read
// after Stop.
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
	if err := c.wc.Send(&wire.Stop{}); err != nil {
		return errConnLost
	}
	return nil
}

// receive reads a response to a request already sent; a packed chunk goes
// into the buffer of the one before.
func (c *Client) receive() (*wire.Response, error) {
	var resp wire.Response
	if err := c.wc.Recv(&resp); err != nil {
		return nil, errConnLost
	}
	return &resp, nil
}

// eachItem calls fn with the items of a chunk, packed or not.
func eachItem(resp *wire.Response, fn func(seq uint64, value []byte) error) error {
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
		err = resp.Err.Err()
	} else {
		resp, err = c.do(&wire.Resolve{Ref: ref})
	}
	if err != nil {
		return "", err
	}
	if resp.Meta != nil {
		if len(c.prefetched) >= MaxPrefetched || c.prefetched == nil {
			c.prefetched = map[string]*prefetched{}
		}
		p := &prefetched{meta: resp.Meta, rev: resp.Rev}
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
		return decodeMeta(p.meta, p.rev)
	}
	resp, err := c.do(&wire.GetMeta{ID: id})
	if err != nil {
		return session.Meta{}, err
	}
	return decodeMeta(resp.Meta, resp.Rev)
}

// decodeMeta is the metadata of a response, with the revision that came
// beside it.
func decodeMeta(v []byte, rev uint64) (session.Meta, error) {
	m, err := record.DecodeMeta(v)
	m.Revision = rev
	return m, err
}

// Node implements Handle.
func (c *Client) Node(id string, seq uint64) (session.Node, error) {
	if p := c.prefetched[id]; p != nil && p.head.Value != nil && p.head.Seq == seq {
		return record.DecodeNode(seq, p.head.Value)
	}
	resp, err := c.do(&wire.GetNode{ID: id, Seq: seq})
	if err != nil {
		return session.Node{}, err
	}
	if len(resp.Items) != 1 {
		return session.Node{}, errConnLost
	}
	return record.DecodeNode(resp.Items[0].Seq, resp.Items[0].Value)
}

var errStopWalk = errors.New("stop walk")

// Walk implements Handle.
func (c *Client) Walk(id string, from uint64, max int, fn func(*session.Node) bool) error {
	err := c.stream(&wire.Walk{ID: id, From: from, Max: max}, func(seq uint64, v []byte) error {
		n, err := record.DecodeNode(seq, v)
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
	return c.stream(&wire.Nodes{ID: id}, fn)
}

// Path implements Handle.
func (c *Client) Path(id string, head uint64, fn func(*session.Node) error) error {
	key, err := store.ParseID(id)
	if err != nil {
		return err
	}
	return store.DecodeAhead(key, func(emit func(uint64, []byte) error) error {
		return c.stream(&wire.Path{ID: id, Head: head}, emit)
	}, fn)
}

// ListInfo implements Handle.
func (c *Client) ListInfo(q store.ListQuery, fn func(*session.Info) error) error {
	return c.stream(listingReq(q, false), func(_ uint64, v []byte) error {
		if len(v) < store.IDLen {
			return errConnLost
		}
		info, err := store.DecodeSummary(store.ID(v[:store.IDLen]), v[store.IDLen:])
		if err != nil {
			return err
		}
		return fn(&info)
	})
}

// ListJSON implements Handle. The store process renders the lines, so
// that a listing costs this process no decoding and no encoding.
func (c *Client) ListJSON(q store.ListQuery, fn func(line []byte) error) error {
	return c.stream(listingReq(q, true), func(_ uint64, line []byte) error { return fn(line) })
}

// Commit implements Handle.
func (c *Client) Commit(meta *session.Meta, nodes []session.Node) error {
	delete(c.prefetched, meta.ID)
	c.resolved = nil
	req := &wire.Commit{Meta: record.EncodeMeta(meta), Rev: meta.Revision, Nodes: make([]wire.Item, len(nodes))}
	for i := range nodes {
		req.Nodes[i] = wire.Item{Seq: nodes[i].Seq, Value: record.EncodeNode(&nodes[i])}
		if nodes[i].Same != 0 && req.Same == nil {
			req.Same = make([]uint64, len(nodes))
		}
		if req.Same != nil {
			req.Same[i] = nodes[i].Same
		}
	}
	req.Defer = c.deferSync()
	resp, err := c.do(req)
	c.synced(req.Defer, err)
	if err == nil {
		meta.Revision = resp.Rev // as a shared store's Commit sets it
	}
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
	_, err := c.do(&wire.PutBlob{ID: id, Sum: sum, Data: data})
	return err
}

// Blob implements Handle.
func (c *Client) Blob(id string, sum [32]byte) ([]byte, error) {
	resp, err := c.do(&wire.GetBlob{ID: id, Sum: sum})
	if err != nil {
		return nil, err
	}
	return resp.Data, nil
}

// Collect implements Handle.
func (c *Client) Collect(m *session.Meta, dryRun bool) (store.Freed, error) {
	delete(c.prefetched, m.ID)
	c.resolved = nil
	req := &wire.Collect{Meta: record.EncodeMeta(m), Rev: m.Revision, DryRun: dryRun}
	if !dryRun {
		req.Defer = c.deferSync()
	}
	resp, err := c.do(req)
	if !dryRun {
		c.synced(req.Defer, err)
	}
	if err != nil {
		return store.Freed{}, err
	}
	return resp.Freed, nil
}

// Settle does nothing: the store process bounds its own memory.
func (c *Client) Settle() error { return nil }

// Close ends the command's session. The server synced the first commit
// before answering it; what was written after it is synced now, so that
// what is printed next is on disk. A private store process closes the
// store before it answers.
func (c *Client) Close() error {
	if c.closed {
		return nil
	}
	var err error
	if c.unsynced || c.private {
		_, err = c.do(&wire.End{})
	}
	c.closed = true
	c.conn.Close()
	return err
}
