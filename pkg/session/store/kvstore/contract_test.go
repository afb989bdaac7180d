package kvstore

import (
	"testing"

	"github.com/wctoolkit/wc/pkg/session/store/client"
	"github.com/wctoolkit/wc/pkg/session/store/storetest"
)

// The store opened in the process meets the contract of client.Handle
// (cmd/internal/tooltest runs it over the store processes).
func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Target{Open: func(t *testing.T, dir string, mode client.Mode) client.Handle { return open(t, dir, mode) }})
}
