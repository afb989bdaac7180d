package client

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

var (
	_ Remover = (*Client)(nil)
	_ Remover = Empty{}
)

// DeleteSession implements Remover.
func (c *Client) DeleteSession(id string) error {
	delete(c.prefetched, id)
	c.resolved = nil
	req := &Delete{ID: id, Defer: c.deferSync()}
	_, err := c.do(req)
	c.synced(req.Defer, err)
	return err
}

// Purge implements Remover.
func (c *Client) Purge() error {
	c.prefetched, c.resolved = nil, nil
	_, err := c.do(&Purge{})
	return err
}

// DeleteSession implements Remover.
func (Empty) DeleteSession(id string) error { return missing(id) }

// Purge implements Remover: there is nothing to rewrite.
func (Empty) Purge() error { return nil }
