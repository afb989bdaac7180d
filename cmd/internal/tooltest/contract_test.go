package tooltest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/wctoolkit/wc/cmd/internal/open"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
	"github.com/wctoolkit/wc/pkg/session/store/storetest"
)

// The clients of both kinds of store process meet the contract of
// store.Handle that the store opened in the process meets (its run is in
// pkg/session/store), opened as commands open them.
func TestContract(t *testing.T) {
	t.Setenv("WC_STORE_PROGRAM", filepath.Join(Binaries(t), "wc-store"))
	ask := func(mode store.Mode) remote.Ask { return remote.Ask{Mode: mode, LockTimeout: 10 * time.Second} }
	t.Run("resident", func(t *testing.T) {
		storetest.Run(t, storetest.Target{Shared: true, Open: func(t *testing.T, dir string, mode store.Mode) store.Handle {
			h, err := open.DialResident(dir, ask(mode))
			if err != nil || h == nil {
				t.Fatalf("no resident store process for %s: %v", dir, err)
			}
			t.Cleanup(func() { StopResidents(t, dir) })
			return h
		}})
	})
	t.Run("private", func(t *testing.T) {
		storetest.Run(t, storetest.Target{Open: func(t *testing.T, dir string, mode store.Mode) store.Handle {
			h, err := open.OpenPrivate(dir, ask(mode), false, false)
			if err != nil {
				t.Fatalf("private store process for %s: %v", dir, err)
			}
			return h
		}})
	})
}
