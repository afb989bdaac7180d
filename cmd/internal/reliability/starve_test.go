package reliability

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestDirectUnderResidentLoad (issue 19, item 7): while two loops of wc-ls
// keep a resident store process busy, every command that opens the store
// itself (WC_DIRECT=1, a batch) gets it within its lock timeout. Asked
// once to make way, the resident process used to lose the request when it
// came during a hand-over, and the listings that kept coming started the
// next resident process before the waiting command had the lock.
func TestDirectUnderResidentLoad(t *testing.T) {
	r := newRunner(t, filepath.Join(t.TempDir(), "store")).resident()
	var ids []string
	for i := range 4 {
		id := idOf(r.must(nil, "wc-new", "--title", fmt.Sprintf("s%d", i)))
		r.must(nil, "wc-append", id, "--text", "first")
		ids = append(ids, id)
	}
	var stop atomic.Bool
	var listings atomic.Int64
	var wg sync.WaitGroup
	var failed []string
	var mu sync.Mutex
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if res := r.run(nil, "wc-ls"); res.Code != 0 {
					mu.Lock()
					failed = append(failed, "wc-ls: "+res.String())
					mu.Unlock()
				}
				listings.Add(1)
			}
		}()
	}
	timeout := "--lock-timeout=10s"
	direct := r.direct()
	for i := range 8 {
		var res result
		what := ""
		if i%3 == 2 {
			what = "wc-compact --all"
			res = r.run(nil, "wc-compact", "--all", "--max-tokens", "100000", timeout)
		} else {
			what = "WC_DIRECT=1 wc-append"
			res = direct.run(nil, "wc-append", ids[i%len(ids)], "--text", fmt.Sprintf("direct %d", i), timeout)
		}
		if res.Code != 0 {
			mu.Lock()
			failed = append(failed, what+": "+res.String())
			mu.Unlock()
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d listings ran meanwhile", listings.Load())
	if len(failed) > 0 {
		t.Errorf("%d commands failed under resident load:\n%s", len(failed), strings.Join(failed, "\n"))
	}
}
