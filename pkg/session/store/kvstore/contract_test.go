package kvstore

import (
	"testing"

	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/storetest"
)

// The store opened in the process meets the contract of store.Handle
// (cmd/internal/tooltest runs it over the store processes).
func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Target{Open: func(t *testing.T, dir string, mode store.Mode) store.Handle { return open(t, dir, mode) }})
}
