package client

import "github.com/wctoolkit/wc/pkg/session/store"

var _ store.Remover = (*Client)(nil)

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
