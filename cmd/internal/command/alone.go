package command

import (
	"errors"
	"io/fs"
	"os"

	"github.com/wctoolkit/wc/cmd/internal/open"
	"github.com/wctoolkit/wc/pkg/session/store"
)

// OpenAlone opens the store for this command alone, never through the
// resident store process (which is asked to make way once its commands
// are done): for work that needs the store to itself, such as rewriting
// it (wc-rm --purge). A store that does not exist is not created.
func (c *Ctx) OpenAlone(mode store.Mode) (store.Handle, error) {
	dir, err := c.StoreDir()
	if err != nil {
		return nil, err
	}
	if open.IsSharedURL(dir) {
		return c.open(mode, true, firstAsk{})
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return store.Empty{}, nil
	}
	return c.open(mode, true, firstAsk{})
}
