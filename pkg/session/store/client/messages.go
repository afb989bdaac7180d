package client

import (
	"errors"
	"strings"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
)

// Item is one stored value of a stream or a commit: a node's seq and JSON.
type Item struct {
	Seq   uint64
	Value []byte
}

// Request is one operation of a connection, after its hello.
type Request struct {
	Op      string
	Mode    Mode
	Timeout time.Duration
	ID      string
	Seq     uint64
	Max     int
	Meta    []byte
	Nodes   []Item
	// Same holds the Nodes' session.Node Same hints, in order, or nothing
	// when none has one: the encoded node does not carry it.
	Same   []uint64
	Sum    [32]byte
	Data   []byte
	DryRun bool
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

// WireError is an error as it crosses the socket. Ref is the reference of
// a "ref" error; for another kind it carries the error's hints, a line
// each.
type WireError struct{ Kind, Msg, Ref string }

// Response answers a Request, or is one chunk of a streamed answer.
type Response struct {
	Err   *WireError
	Str   string
	Meta  []byte
	Items []Item
	More  bool
	Data  []byte
	Freed Freed
}

// wireKinds are the kinds of error that cross the socket by name.
var wireKinds = []struct {
	name string
	kind error
}{
	{"notfound", ErrNotFound}, {"ambiguous", ErrAmbiguous}, {"busy", ErrBusy}, {"notstore", ErrNotStore},
	{"damaged", ErrDamaged}, {"unsafe", ErrUnsafe}, {"nospace", ErrNoSpace},
}

// ToWire keeps an error's kind across the socket, so that exit statuses do
// not depend on where the store was opened.
func ToWire(err error) *WireError {
	if err == nil {
		return nil
	}
	var ref *RefError
	var inv *session.InvalidError
	switch {
	case errors.As(err, &ref):
		return &WireError{Kind: "ref", Ref: ref.Ref}
	case errors.As(err, &inv):
		return &WireError{Kind: "invalid", Msg: inv.Msg}
	}
	w := &WireError{Kind: "other", Msg: err.Error()}
	for _, k := range wireKinds {
		if errors.Is(err, k.kind) {
			w.Kind = k.name
			break
		}
	}
	if ke := (*KindError)(nil); errors.As(err, &ke) {
		w.Ref = strings.Join(ke.Hints, "\n")
	}
	return w
}

// Err is the error e carries, of the kind it was sent as.
func (e *WireError) Err() error {
	if e == nil {
		return nil
	}
	switch e.Kind {
	case "ref":
		return &RefError{Ref: e.Ref}
	case "invalid":
		return &session.InvalidError{Msg: e.Msg}
	}
	var hints []string
	if e.Ref != "" {
		hints = strings.Split(e.Ref, "\n")
	}
	for _, k := range wireKinds {
		if e.Kind == k.name {
			return &KindError{Msg: e.Msg, Kind: k.kind, Hints: hints}
		}
	}
	return errors.New(e.Msg)
}
