package etcdkv_test

import (
	"testing"

	"github.com/wctoolkit/wc/pkg/session/store/etcdkv/etcdtest"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/kv/kvtest"
)

// TestWatch runs the watch suite over the shared cluster.
func TestWatch(t *testing.T) {
	etcdtest.Endpoints(t)
	kvtest.RunWatch(t, func(t *testing.T) kv.Engine { return etcdtest.Open(t) })
}
