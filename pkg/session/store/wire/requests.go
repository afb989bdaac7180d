package wire

import (
	"encoding/binary"

	"github.com/wctoolkit/wc/pkg/session/store"
)

// Request is one operation of a connection, after its hello: a type per
// operation, carrying only its own fields. Its frame is the operation's
// tag (a byte), then the fields in order.
type Request interface {
	Message
	op() op
	// Writes tells whether the request needs the writer's lock.
	Writes() bool
}

// Streamed is a request answered in chunks, each pulled with More or
// ended with Stop.
type Streamed interface {
	Request
	// ReadAhead tells whether the items come packed in Data, one after
	// another, each as seq (8 bytes), length (4 bytes, big endian) and
	// value: one copy per chunk instead of one allocation per item, and
	// the server reads a chunk ahead. It suits reading whole ranges.
	ReadAhead() bool
}

type op byte

// The tags of the operations; 0 is no operation.
const (
	opResolve op = iota + 1
	opMeta
	opNode
	opWalk
	opNodes
	opPath
	opListInfo
	opListJSON
	opCommit
	opPutBlob
	opBlob
	opCollect
	opDelete
	opPurge
	opMore
	opStop
	opEnd
)

// requestTypes makes the request a tag names, for the server's decoder
// (TestRequestTypesAllDecoded checks that every type is here).
var requestTypes = [...]func() Request{
	opResolve:  func() Request { return new(Resolve) },
	opMeta:     func() Request { return new(GetMeta) },
	opNode:     func() Request { return new(GetNode) },
	opWalk:     func() Request { return new(Walk) },
	opNodes:    func() Request { return new(Nodes) },
	opPath:     func() Request { return new(Path) },
	opListInfo: func() Request { return new(ListInfo) },
	opListJSON: func() Request { return new(ListJSON) },
	opCommit:   func() Request { return new(Commit) },
	opPutBlob:  func() Request { return new(PutBlob) },
	opBlob:     func() Request { return new(GetBlob) },
	opCollect:  func() Request { return new(Collect) },
	opDelete:   func() Request { return new(Delete) },
	opPurge:    func() Request { return new(Purge) },
	opMore:     func() Request { return new(More) },
	opStop:     func() Request { return new(Stop) },
	opEnd:      func() Request { return new(End) },
}

// RecvRequest reads one request frame, of whichever operation it is.
func (w *Conn) RecvRequest() (Request, error) {
	d, err := w.frame()
	if err != nil {
		return nil, err
	}
	tag := op(d.byte())
	if d.err != nil || tag == 0 || int(tag) >= len(requestTypes) {
		return nil, errBadFrame
	}
	req := requestTypes[tag]()
	return req, d.finish(req)
}

// Resolve asks for the session id a reference names, with the session's
// metadata and head node (see the store's server.prefetch).
type Resolve struct{ Ref string }

// GetMeta asks for a session's metadata.
type GetMeta struct{ ID string }

// GetNode asks for one node of a session.
type GetNode struct {
	ID  string
	Seq uint64
}

// Walk streams a session's nodes from one towards the root, Max at most.
type Walk struct {
	ID   string
	From uint64
	Max  int
}

// Nodes streams every stored node of a session, as stored.
type Nodes struct{ ID string }

// Path streams the stored nodes from the root to Head.
type Path struct {
	ID   string
	Head uint64
}

// ListInfo streams the listing's entries: each the id, then its summary.
type ListInfo struct{ Query store.ListQuery }

// ListJSON streams the listing's lines of JSON, rendered by the server.
type ListJSON struct{ Query store.ListQuery }

// Commit writes a session's metadata and new nodes.
type Commit struct {
	Meta []byte
	// Rev is the Revision of the metadata the commit was made over, which
	// a shared store checks (0: unchecked).
	Rev   uint64
	Nodes []Item
	// Same holds the Nodes' session.Node Same hints, in order, or nothing
	// when none has one: the encoded node does not carry it.
	Same []uint64
	// Defer lets the server answer before syncing: the client writes more
	// and ends with End, which syncs them all at once.
	Defer bool
}

// PutBlob stores a blob of a session; End syncs it.
type PutBlob struct {
	ID   string
	Sum  [32]byte
	Data []byte
}

// GetBlob asks for a blob of a session.
type GetBlob struct {
	ID  string
	Sum [32]byte
}

// Collect frees what a session no longer reaches, or with DryRun counts it.
type Collect struct {
	Meta   []byte
	Rev    uint64 // as Commit's
	DryRun bool
	Defer  bool // as Commit's
}

// Delete removes a session (wc-rm).
type Delete struct {
	ID    string
	Defer bool // as Commit's
}

// Purge rewrites the store without what was removed (private store
// processes only).
type Purge struct{}

// More asks for the next chunk of a stream.
type More struct{}

// Stop ends a stream the client reads no further; it is not answered.
type Stop struct{}

// End ends the connection's work: the server syncs what it left unsynced.
type End struct{}

func (*Resolve) op() op  { return opResolve }
func (*GetMeta) op() op  { return opMeta }
func (*GetNode) op() op  { return opNode }
func (*Walk) op() op     { return opWalk }
func (*Nodes) op() op    { return opNodes }
func (*Path) op() op     { return opPath }
func (*ListInfo) op() op { return opListInfo }
func (*ListJSON) op() op { return opListJSON }
func (*Commit) op() op   { return opCommit }
func (*PutBlob) op() op  { return opPutBlob }
func (*GetBlob) op() op  { return opBlob }
func (*Collect) op() op  { return opCollect }
func (*Delete) op() op   { return opDelete }
func (*Purge) op() op    { return opPurge }
func (*More) op() op     { return opMore }
func (*Stop) op() op     { return opStop }
func (*End) op() op      { return opEnd }

func (*Resolve) Writes() bool   { return false }
func (*GetMeta) Writes() bool   { return false }
func (*GetNode) Writes() bool   { return false }
func (*Walk) Writes() bool      { return false }
func (*Nodes) Writes() bool     { return false }
func (*Path) Writes() bool      { return false }
func (*ListInfo) Writes() bool  { return false }
func (*ListJSON) Writes() bool  { return false }
func (*Commit) Writes() bool    { return true }
func (*PutBlob) Writes() bool   { return true }
func (*GetBlob) Writes() bool   { return false }
func (r *Collect) Writes() bool { return !r.DryRun }
func (*Delete) Writes() bool    { return true }
func (*Purge) Writes() bool     { return true }
func (*More) Writes() bool      { return false }
func (*Stop) Writes() bool      { return false }
func (*End) Writes() bool       { return false }

func (*Walk) ReadAhead() bool     { return false }
func (*Nodes) ReadAhead() bool    { return true }
func (*Path) ReadAhead() bool     { return true }
func (*ListInfo) ReadAhead() bool { return false }
func (*ListJSON) ReadAhead() bool { return false }

// Every field of every request, in order (TestWireRoundTrip checks that
// none is left out).

func (r *Resolve) appendWire(b []byte) []byte { return appendString(b, r.Ref) }
func (r *Resolve) readWire(d *wireDecoder)    { r.Ref = d.string() }

func (r *GetMeta) appendWire(b []byte) []byte { return appendString(b, r.ID) }
func (r *GetMeta) readWire(d *wireDecoder)    { r.ID = d.string() }

func (r *GetNode) appendWire(b []byte) []byte {
	return binary.AppendUvarint(appendString(b, r.ID), r.Seq)
}

func (r *GetNode) readWire(d *wireDecoder) {
	r.ID = d.string()
	r.Seq = d.uint()
}

func (r *Walk) appendWire(b []byte) []byte {
	b = binary.AppendUvarint(appendString(b, r.ID), r.From)
	return binary.AppendVarint(b, int64(r.Max))
}

func (r *Walk) readWire(d *wireDecoder) {
	r.ID = d.string()
	r.From = d.uint()
	r.Max = int(d.int())
}

func (r *Nodes) appendWire(b []byte) []byte { return appendString(b, r.ID) }
func (r *Nodes) readWire(d *wireDecoder)    { r.ID = d.string() }

func (r *Path) appendWire(b []byte) []byte {
	return binary.AppendUvarint(appendString(b, r.ID), r.Head)
}

func (r *Path) readWire(d *wireDecoder) {
	r.ID = d.string()
	r.Head = d.uint()
}

func (r *ListInfo) appendWire(b []byte) []byte { return appendQuery(b, &r.Query) }
func (r *ListInfo) readWire(d *wireDecoder)    { readQuery(d, &r.Query) }

func (r *ListJSON) appendWire(b []byte) []byte { return appendQuery(b, &r.Query) }
func (r *ListJSON) readWire(d *wireDecoder)    { readQuery(d, &r.Query) }

func (r *Commit) appendWire(b []byte) []byte {
	b = appendBytes(b, r.Meta)
	b = binary.AppendUvarint(b, r.Rev)
	b = appendNodes(b, r.Nodes)
	b = appendUints(b, r.Same)
	return appendBool(b, r.Defer)
}

func (r *Commit) readWire(d *wireDecoder) {
	r.Meta = d.bytes()
	r.Rev = d.uint()
	r.Nodes = readNodes(d)
	r.Same = readUints(d)
	r.Defer = d.bool()
}

func (r *PutBlob) appendWire(b []byte) []byte {
	b = appendSum(appendString(b, r.ID), r.Sum)
	return appendBytes(b, r.Data)
}

func (r *PutBlob) readWire(d *wireDecoder) {
	r.ID = d.string()
	r.Sum = readSum(d)
	r.Data = d.bytes()
}

func (r *GetBlob) appendWire(b []byte) []byte { return appendSum(appendString(b, r.ID), r.Sum) }

func (r *GetBlob) readWire(d *wireDecoder) {
	r.ID = d.string()
	r.Sum = readSum(d)
}

func (r *Collect) appendWire(b []byte) []byte {
	b = binary.AppendUvarint(appendBytes(b, r.Meta), r.Rev)
	return appendBool(appendBool(b, r.DryRun), r.Defer)
}

func (r *Collect) readWire(d *wireDecoder) {
	r.Meta = d.bytes()
	r.Rev = d.uint()
	r.DryRun = d.bool()
	r.Defer = d.bool()
}

func (r *Delete) appendWire(b []byte) []byte { return appendBool(appendString(b, r.ID), r.Defer) }

func (r *Delete) readWire(d *wireDecoder) {
	r.ID = d.string()
	r.Defer = d.bool()
}

func (*Purge) appendWire(b []byte) []byte { return b }
func (*Purge) readWire(*wireDecoder)      {}
func (*More) appendWire(b []byte) []byte  { return b }
func (*More) readWire(*wireDecoder)       {}
func (*Stop) appendWire(b []byte) []byte  { return b }
func (*Stop) readWire(*wireDecoder)       {}
func (*End) appendWire(b []byte) []byte   { return b }
func (*End) readWire(*wireDecoder)        {}
