package wire

import (
	"errors"
	"strings"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
)

// Item is one stored value of a stream or a commit: a node's seq and JSON.
type Item struct {
	Seq   uint64
	Value []byte
}

// WireError is an error as it crosses the socket. Ref is the reference of
// a "ref" error; for another kind it carries the error's hints, a line
// each.
type WireError struct{ Kind, Msg, Ref string }

// Response answers a Request, or is one chunk of a streamed answer.
type Response struct {
	Err  *WireError
	Str  string
	Meta []byte
	// Rev is Meta's session.Meta.Revision, or that of the metadata a
	// Commit wrote: the record carries none.
	Rev   uint64
	Items []Item
	More  bool
	Data  []byte
	Freed store.Freed
}

// wireKinds are the kinds of error that cross the socket by name.
var wireKinds = []struct {
	name string
	kind error
}{
	// changed before busy: its errors match both.
	{"changed", store.ErrChanged},
	{"notfound", store.ErrNotFound}, {"ambiguous", store.ErrAmbiguous}, {"busy", store.ErrBusy}, {"notstore", store.ErrNotStore},
	{"damaged", store.ErrDamaged}, {"unsafe", store.ErrUnsafe}, {"nospace", store.ErrNoSpace}, {"readonly", store.ErrReadOnly},
}

// ToWire keeps an error's kind across the socket, so that exit statuses do
// not depend on where the store was opened.
func ToWire(err error) *WireError {
	if err == nil {
		return nil
	}
	var ref *store.RefError
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
	if ke := (*store.KindError)(nil); errors.As(err, &ke) {
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
		return &store.RefError{Ref: e.Ref}
	case "invalid":
		return &session.InvalidError{Msg: e.Msg}
	case "changed":
		return &store.ChangedError{Msg: e.Msg}
	}
	var hints []string
	if e.Ref != "" {
		hints = strings.Split(e.Ref, "\n")
	}
	for _, k := range wireKinds {
		if e.Kind == k.name {
			return &store.KindError{Msg: e.Msg, Kind: k.kind, Hints: hints}
		}
	}
	return errors.New(e.Msg)
}
