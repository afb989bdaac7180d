package etcdkv_test

import (
	"testing"

	"github.com/wctoolkit/wc/pkg/session/store/etcdkv/etcdtest"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/kv/kvtest"
)

// TestConformance runs the engine suite over the shared 3-member cluster.
func TestConformance(t *testing.T) {
	etcdtest.Endpoints(t)
	kvtest.Run(t, func(t *testing.T) kv.Engine { return etcdtest.Open(t) })
}
