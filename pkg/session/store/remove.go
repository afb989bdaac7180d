package store

// Remover is a handle that removes sessions, for wc-rm. A store opened in
// the process and a store process's client both are one.
type Remover interface {
	// DeleteSession removes a session's metadata and listing entry (from
	// then on no command finds it), then its nodes and blobs.
	DeleteSession(id string) error
	// Purge rewrites the store, so that the bytes of what was removed
	// leave its files. A store process does it only for a command it
	// serves alone (a private one): a resident process refuses.
	Purge() error
}

var _ Remover = Empty{}

// DeleteSession implements Remover.
func (Empty) DeleteSession(id string) error { return missing(id) }

// Purge implements Remover: there is nothing to rewrite.
func (Empty) Purge() error { return nil }
