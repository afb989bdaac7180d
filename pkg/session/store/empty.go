package store

import (
	"fmt"

	"github.com/wctoolkit/wc/pkg/session"
)

// Empty is a reader's handle on a store directory that does not exist
// yet: it holds no session, and answers as a store opened for reading
// there does, without starting a store process to say so.
type Empty struct{}

var _ Handle = Empty{}

// Resolve implements Handle.
func (Empty) Resolve(ref string) (string, error) {
	digits, ok := RefDigits(ref)
	if !ok || len(digits) < MinPrefix || len(digits) > 2*IDLen {
		return "", &RefError{Ref: ref}
	}
	return "", SessionNotFound(ref)
}

// missing is the answer to any read of session id.
func missing(id string) error {
	if _, err := ParseID(id); err != nil {
		return err
	}
	return SessionNotFound(id)
}

// Meta implements Handle.
func (Empty) Meta(id string) (session.Meta, error) { return session.Meta{}, missing(id) }

// Node implements Handle.
func (Empty) Node(id string, _ uint64) (session.Node, error) { return session.Node{}, missing(id) }

// Walk implements Handle.
func (Empty) Walk(id string, _ uint64, _ int, _ func(*session.Node) bool) error { return missing(id) }

// Nodes implements Handle.
func (Empty) Nodes(id string, _ func(uint64, []byte) error) error { return missing(id) }

// Path implements Handle.
func (Empty) Path(id string, _ uint64, _ func(*session.Node) error) error { return missing(id) }

// ListInfo implements Handle.
func (Empty) ListInfo(ListQuery, func(*session.Info) error) error { return nil }

// ListJSON implements Handle.
func (Empty) ListJSON(ListQuery, func([]byte) error) error { return nil }

// Commit implements Handle.
func (Empty) Commit(*session.Meta, []session.Node) error { return ErrReadOnly }

// PutBlob implements Handle.
func (Empty) PutBlob(string, [32]byte, []byte) error { return ErrReadOnly }

// Blob implements Handle.
func (Empty) Blob(id string, sum [32]byte) ([]byte, error) {
	key, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	return nil, &KindError{Msg: fmt.Sprintf("blob %x not found in session %s", sum[:6], key), Kind: ErrNotFound}
}

// Collect implements Handle; a dry run only reads.
func (Empty) Collect(m *session.Meta, dryRun bool) (Freed, error) {
	if dryRun {
		return Freed{}, missing(m.ID)
	}
	return Freed{}, ErrReadOnly
}

// Settle implements Handle.
func (Empty) Settle() error { return nil }

// Close implements Handle.
func (Empty) Close() error { return nil }
