package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/wctoolkit/wc/pkg/session/store"
)

// A store process (wc-store) and its clients speak length-prefixed frames
// (4 bytes, big endian) of fields written in a fixed order: numbers as
// varints, strings and byte slices as a length and the bytes. A command
// sends a handful of small messages per run, so the encoding is written out
// by hand rather than derived by reflection (encoding/gob cost more to
// initialise and to describe its types on every connection than the whole
// exchange took).
//
// Every connection opens with a hello frame whose first fields never
// change: the magic, the protocol version, the operation and the build of
// the client. Any two builds can therefore tell whether they speak the same
// protocol, and any build can ask any resident process to stop.

// ProtocolVersion changes whenever a frame's layout or a request's meaning
// does, or the layout of the listing summaries the client decodes. 2: the
// hello carries references to resolve, the welcome their answers. 3: the
// "listjson" request, whose lines (AppendSummaryJSON) are then part of the
// protocol too: a resident process of another build renders them. 4: a
// commit's nodes carry their Same hints, and stored nodes read through
// the socket are never references (record.EncodeNodeRef). 5: a listing's
// time bounds travel as seconds and nanoseconds, not UnixNano. 6: the
// listing summaries carry the import source (summaryVersion 2). 7: the
// "delete" and "purge" requests (wc-rm). 8: a request is a type per
// operation, its frame a tag byte and only that operation's fields. 9: a listing
// query carries Search (wc-ls --search). 10: the metadata's revision
// travels beside it (Response.Rev, Commit.Rev, Collect.Rev), and a session
// changed under a commit is an error kind. 11: a listing query carries
// Shard (--shard I/N).
const ProtocolVersion = 11

var wireMagic = [4]byte{'w', 'c', 'd', 0}

// maxFrame bounds what a peer may make the other allocate. The largest
// legitimate frame is a commit of a whole imported session.
const maxFrame = 1 << 30

var errBadFrame = errors.New("store: malformed message from the store process")

// buildTag is set with -ldflags "-X" by tests that need two builds which
// differ only in it.
var buildTag string

// BuildID names the code of this binary, in every hello and welcome. It is
// not a condition of service: the store's code is all in wc-store, which
// serves any client of its protocol and makes way when its own program
// file is replaced (see store.ServeConfig.Stale); a client knows the store
// only through the protocol.
var BuildID = sync.OnceValue(func() string {
	var b strings.Builder
	b.WriteString(buildTag)
	if bi, ok := debug.ReadBuildInfo(); ok {
		b.WriteString("|" + bi.GoVersion + "|" + bi.Main.Path + "@" + bi.Main.Version + " " + bi.Main.Sum)
		for _, s := range bi.Settings {
			if strings.HasPrefix(s.Key, "vcs.") || s.Key == "-tags" || s.Key == "-ldflags" {
				b.WriteString("|" + s.Key + "=" + s.Value)
			}
		}
	}
	return b.String()
})

// Conn frames messages on one connection.
type Conn struct {
	conn io.ReadWriteCloser
	r    *bufio.Reader
	out  []byte
}

// NewConn frames messages on conn.
func NewConn(conn io.ReadWriteCloser) *Conn {
	return &Conn{conn: conn, r: bufio.NewReaderSize(conn, 4096)}
}

// Message is a frame's content: a Hello, Welcome, Request or Response.
type Message interface {
	appendWire(b []byte) []byte
	readWire(d *wireDecoder)
}

// Send writes the frames of ms with one write.
func (w *Conn) Send(ms ...Message) error {
	w.out = w.out[:0]
	for _, m := range ms {
		start := len(w.out)
		w.out = append(w.out, 0, 0, 0, 0)
		if r, ok := m.(Request); ok {
			w.out = append(w.out, byte(r.op()))
		}
		w.out = m.appendWire(w.out)
		n := len(w.out) - start - 4
		if n > maxFrame {
			return errBadFrame
		}
		binary.BigEndian.PutUint32(w.out[start:], uint32(n))
	}
	_, err := w.conn.Write(w.out)
	if cap(w.out) > 1<<20 {
		w.out = nil // do not keep a large commit's buffer for the connection's life
	}
	return err
}

// Recv reads one frame into m, a Hello, Welcome or Response (a request:
// RecvRequest). The byte slices m holds point into a buffer of their own,
// never reused.
func (w *Conn) Recv(m Message) error {
	d, err := w.frame()
	if err != nil {
		return err
	}
	return d.finish(m)
}

// frame reads one frame, for a decoder of its own.
func (w *Conn) frame() (*wireDecoder, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(w.r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return nil, errBadFrame
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(w.r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return &wireDecoder{b: buf}, nil
}

// finish reads the rest of the frame into m, all of it.
func (d *wireDecoder) finish(m Message) error {
	m.readWire(d)
	if d.err == nil && len(d.b) != 0 {
		d.err = errBadFrame
	}
	return d.err
}

type wireDecoder struct {
	b   []byte
	err error
}

func (d *wireDecoder) fail() {
	d.err = errBadFrame
	d.b = nil
}

func (d *wireDecoder) uint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *wireDecoder) int() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *wireDecoder) byte() byte {
	if len(d.b) == 0 {
		d.fail()
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *wireDecoder) bool() bool { return d.uint() != 0 }

// bytes returns nil for an empty slice, as the sender cannot tell them apart.
func (d *wireDecoder) bytes() []byte {
	n := d.uint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	if n == 0 {
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *wireDecoder) string() string { return string(d.bytes()) }

func (d *wireDecoder) fixed(dst []byte) {
	if len(d.b) < len(dst) {
		d.fail()
		return
	}
	copy(dst, d.b)
	d.b = d.b[len(dst):]
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func appendString(b []byte, v string) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// Hello opens every connection.
type Hello struct {
	Proto   uint64
	Op      string // "begin" or "shutdown"
	Build   string
	Mode    store.Mode
	Timeout time.Duration
	// Refs are resolved once the lock is taken, and answered in the
	// welcome: a command's first request comes with its connection.
	Refs []string
}

func (h *Hello) appendWire(b []byte) []byte {
	b = append(b, wireMagic[:]...)
	b = binary.AppendUvarint(b, h.Proto)
	b = appendString(b, h.Op)
	b = appendString(b, h.Build)
	b = binary.AppendUvarint(b, uint64(h.Mode))
	b = binary.AppendVarint(b, int64(h.Timeout))
	b = binary.AppendUvarint(b, uint64(len(h.Refs)))
	for _, r := range h.Refs {
		b = appendString(b, r)
	}
	return b
}

func (h *Hello) readWire(d *wireDecoder) {
	var magic [4]byte
	if d.fixed(magic[:]); magic != wireMagic {
		d.fail()
		return
	}
	h.Proto = d.uint()
	h.Op = d.string()
	h.Build = d.string()
	if h.Proto != ProtocolVersion {
		d.b = nil // a later layout: what follows is not ours to read
		return
	}
	h.Mode = store.Mode(d.uint())
	h.Timeout = time.Duration(d.int())
	n := d.uint()
	if n > uint64(len(d.b)) { // every reference takes at least a byte
		d.fail()
		return
	}
	for range n {
		h.Refs = append(h.Refs, d.string())
	}
}

// Welcome answers a hello: the server's protocol and build, whether
// the client now holds the lock it asked for, and then the answers to the
// hello's Refs, each as a Resolve request would have had it.
type Welcome struct {
	Proto    uint64
	Build    string
	Err      *WireError
	Resolved []Response
}

func (w *Welcome) appendWire(b []byte) []byte {
	b = append(b, wireMagic[:]...)
	b = binary.AppendUvarint(b, w.Proto)
	b = appendString(b, w.Build)
	b = appendErr(b, w.Err)
	b = binary.AppendUvarint(b, uint64(len(w.Resolved)))
	for i := range w.Resolved {
		b = appendBytes(b, w.Resolved[i].appendWire(nil))
	}
	return b
}

func (w *Welcome) readWire(d *wireDecoder) {
	var magic [4]byte
	if d.fixed(magic[:]); magic != wireMagic {
		d.fail()
		return
	}
	w.Proto = d.uint()
	w.Build = d.string()
	if w.Proto != ProtocolVersion {
		d.b = nil
		return
	}
	w.Err = readErr(d)
	n := d.uint()
	if n > uint64(len(d.b)) {
		d.fail()
		return
	}
	for range n {
		sub := wireDecoder{b: d.bytes()}
		var r Response
		r.readWire(&sub)
		if sub.err != nil || len(sub.b) != 0 {
			d.fail()
			return
		}
		w.Resolved = append(w.Resolved, r)
	}
}

func appendErr(b []byte, e *WireError) []byte {
	if e == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	b = appendString(b, e.Kind)
	b = appendString(b, e.Msg)
	return appendString(b, e.Ref)
}

func readErr(d *wireDecoder) *WireError {
	if !d.bool() {
		return nil
	}
	return &WireError{Kind: d.string(), Msg: d.string(), Ref: d.string()}
}

func appendNodes(b []byte, nodes []Item) []byte {
	b = binary.AppendUvarint(b, uint64(len(nodes)))
	for _, n := range nodes {
		b = binary.AppendUvarint(b, n.Seq)
		b = appendBytes(b, n.Value)
	}
	return b
}

func readNodes(d *wireDecoder) []Item {
	return readList(d, func() Item { return Item{Seq: d.uint(), Value: d.bytes()} })
}

// readList reads a count, then that many elements; as each takes at least
// a byte, a count past what is left is refused before anything is made.
func readList[T any](d *wireDecoder, read func() T) []T {
	n := d.uint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	if n == 0 {
		return nil
	}
	v := make([]T, n)
	for i := range v {
		v[i] = read()
	}
	return v
}

func appendUints(b []byte, v []uint64) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	for _, x := range v {
		b = binary.AppendUvarint(b, x)
	}
	return b
}

func readUints(d *wireDecoder) []uint64 { return readList(d, d.uint) }

// appendSum writes a sha256, or nothing but its length when it is zero.
func appendSum(b []byte, sum [32]byte) []byte {
	if sum == ([32]byte{}) {
		return append(b, 0)
	}
	return appendBytes(b, sum[:])
}

func readSum(d *wireDecoder) (sum [32]byte) {
	v := d.bytes()
	if len(v) != 0 && len(v) != len(sum) {
		d.fail()
	}
	copy(sum[:], v)
	return sum
}

func appendQuery(b []byte, q *store.ListQuery) []byte {
	b = appendString(b, q.Project)
	b = appendTime(b, q.Since)
	b = appendTime(b, q.Until)
	b = appendString(b, q.Title)
	b = appendString(b, q.Grep)
	b = appendBool(b, q.Fold)
	b = appendBool(b, q.Oldest)
	b = binary.AppendVarint(b, int64(q.Limit))
	b = appendString(b, q.Search)
	b = binary.AppendVarint(b, int64(q.Shard.Index))
	return binary.AppendVarint(b, int64(q.Shard.Count))
}

func readQuery(d *wireDecoder, q *store.ListQuery) {
	q.Project = d.string()
	q.Since = readTime(d)
	q.Until = readTime(d)
	q.Title = d.string()
	q.Grep = d.string()
	q.Fold = d.bool()
	q.Oldest = d.bool()
	q.Limit = int(d.int())
	q.Search = d.string()
	q.Shard.Index = int(d.int())
	q.Shard.Count = int(d.int())
}

// appendTime keeps the zero time apart, and sends seconds and nanoseconds:
// UnixNano wraps outside the years 1678 to 2262.
func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return appendBool(b, false)
	}
	b = binary.AppendVarint(appendBool(b, true), t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

func readTime(d *wireDecoder) time.Time {
	if !d.bool() {
		return time.Time{}
	}
	sec := d.int()
	return time.Unix(sec, int64(d.uint()))
}

// Every field of Response, in order (TestWireRoundTrip checks that none
// is left out).

func (r *Response) appendWire(b []byte) []byte {
	b = appendErr(b, r.Err)
	b = appendString(b, r.Str)
	b = appendBytes(b, r.Meta)
	b = binary.AppendUvarint(b, r.Rev)
	b = appendNodes(b, r.Items)
	b = appendBool(b, r.More)
	b = appendBytes(b, r.Data)
	b = binary.AppendVarint(b, int64(r.Freed.Nodes))
	b = binary.AppendVarint(b, int64(r.Freed.Blobs))
	return binary.AppendVarint(b, r.Freed.Bytes)
}

func (r *Response) readWire(d *wireDecoder) {
	r.Err = readErr(d)
	r.Str = d.string()
	r.Meta = d.bytes()
	r.Rev = d.uint()
	r.Items = readNodes(d)
	r.More = d.bool()
	r.Data = d.bytes()
	r.Freed.Nodes = int(d.int())
	r.Freed.Blobs = int(d.int())
	r.Freed.Bytes = d.int()
}
