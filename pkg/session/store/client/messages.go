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

// ToWire keeps an error's kind across the socket, so that exit statuses do
// not depend on where the store was opened.
func ToWire(err error) *WireError {
	if err == nil {
		return nil
	}
	var ref *RefError
	var inv *session.InvalidError
	var ke *KindError
	if !errors.As(err, &ref) && errors.As(err, &ke) && len(ke.Hints) > 0 {
		w := ToWire(&KindError{Msg: ke.Msg, Kind: ke.Kind})
		w.Ref = strings.Join(ke.Hints, "\n")
		return w
	}
	switch {
	case errors.As(err, &ref):
		return &WireError{Kind: "ref", Ref: ref.Ref}
	case errors.As(err, &inv):
		return &WireError{Kind: "invalid", Msg: inv.Msg}
	case errors.Is(err, ErrNotFound):
		return &WireError{Kind: "notfound", Msg: err.Error()}
	case errors.Is(err, ErrAmbiguous):
		return &WireError{Kind: "ambiguous", Msg: err.Error()}
	case errors.Is(err, ErrBusy):
		return &WireError{Kind: "busy", Msg: err.Error()}
	case errors.Is(err, ErrNotStore):
		return &WireError{Kind: "notstore", Msg: err.Error()}
	case errors.Is(err, ErrDamaged):
		return &WireError{Kind: "damaged", Msg: err.Error()}
	case errors.Is(err, ErrUnsafe):
		return &WireError{Kind: "unsafe", Msg: err.Error()}
	case errors.Is(err, ErrNoSpace):
		return &WireError{Kind: "nospace", Msg: err.Error()}
	}
	return &WireError{Kind: "other", Msg: err.Error()}
}

// Err is the error e carries, of the kind it was sent as.
func (e *WireError) Err() error {
	if e == nil {
		return nil
	}
	var hints []string
	if e.Ref != "" && e.Kind != "ref" {
		hints = strings.Split(e.Ref, "\n")
	}
	switch e.Kind {
	case "ref":
		return &RefError{Ref: e.Ref}
	case "invalid":
		return &session.InvalidError{Msg: e.Msg}
	case "notfound":
		return &KindError{Msg: e.Msg, Kind: ErrNotFound, Hints: hints}
	case "ambiguous":
		return &KindError{Msg: e.Msg, Kind: ErrAmbiguous, Hints: hints}
	case "busy":
		return &KindError{Msg: e.Msg, Kind: ErrBusy, Hints: hints}
	case "notstore":
		return &KindError{Msg: e.Msg, Kind: ErrNotStore, Hints: hints}
	case "damaged":
		return &KindError{Msg: e.Msg, Kind: ErrDamaged, Hints: hints}
	case "unsafe":
		return &KindError{Msg: e.Msg, Kind: ErrUnsafe, Hints: hints}
	case "nospace":
		return &KindError{Msg: e.Msg, Kind: ErrNoSpace, Hints: hints}
	}
	return errors.New(e.Msg)
}
