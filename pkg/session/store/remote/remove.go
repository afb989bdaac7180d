package remote

import (
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/wire"
)

var _ store.Remover = (*Client)(nil)

// DeleteSession implements Remover.
func (c *Client) DeleteSession(id string) error {
	delete(c.prefetched, id)
	c.resolved = nil
	req := &wire.Delete{ID: id, Defer: c.deferSync()}
	_, err := c.do(req)
	c.synced(req.Defer, err)
	return err
}

// Purge implements Remover.
func (c *Client) Purge() error {
	c.prefetched, c.resolved = nil, nil
	_, err := c.do(&wire.Purge{})
	return err
}
