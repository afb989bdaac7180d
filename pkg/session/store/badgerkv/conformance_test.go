package badgerkv_test

import (
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/kv/kvtest"
)

// TestConformance runs the engine suite over a Badger database in a temp
// dir, with Badger's defaults and with the store's options (a small
// memtable, whose transactions are 15% of it: its limits come soon).
func TestConformance(t *testing.T) {
	for name, opt := range map[string]func(dir string) badger.Options{
		"Defaults":     func(dir string) badger.Options { return badger.DefaultOptions(dir) },
		"StoreOptions": func(dir string) badger.Options { return badgerkv.Options(dir, false, false) },
	} {
		t.Run(name, func(t *testing.T) {
			kvtest.Run(t, func(t *testing.T) kv.Engine {
				db, err := badger.Open(opt(t.TempDir()).WithLogger(nil))
				if err != nil {
					t.Fatal(err)
				}
				e := badgerkv.New(db)
				t.Cleanup(func() {
					if err := e.Close(); err != nil {
						t.Error(err)
					}
				})
				return e
			}, kvtest.ScansConflict, kvtest.RewritesCount)
		})
	}
}
