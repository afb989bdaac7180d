package kvstore

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session/store/etcdkv"
	"github.com/wctoolkit/wc/pkg/session/store/etcdkv/etcdtest"
)

// The leader of a cluster of the test's own killed (kill -9), then started
// again, while 8 writers append to one session through the store: every
// append acknowledged is on the path once, one that gave up is there at
// most once (it may have landed before its answer was lost), the seqs
// are dense, and the session takes appends afterwards.
func TestFaultKillLeaderStore(t *testing.T) {
	c := etcdtest.StartCluster(t)
	cfg := etcdtest.Config(t, c.Endpoints)
	cfg.RequestTimeout = 2 * time.Second
	open := func() *Store {
		e, err := etcdkv.Open(cfg)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		return openOn(t, e, cfg.String())
	}
	id := testID(0xfa017000, 1)
	w := open()
	m := metaFor(id, nil)
	if err := w.Commit(&m, nil); err != nil {
		t.Fatal(err)
	}
	const writers = 8
	var acks, retries, landed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked, gaveUp := map[string]bool{}, map[string]bool{}
	for wr := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := open()
			defer func() { retries.Add(s.Retries()); landed.Add(s.shared.landed.Load()) }()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				text := fmt.Sprintf("w%d-%d", wr, i)
				err := appendChecked(s, id, text)
				mu.Lock()
				if err == nil {
					acked[text] = true
					acks.Add(1)
				} else {
					gaveUp[text] = true
				}
				mu.Unlock()
			}
		}()
	}
	progress := func(what string, n int64) {
		t.Helper()
		from := acks.Load()
		deadline := time.Now().Add(90 * time.Second)
		for acks.Load() < from+n {
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("%s: %d appends in 90s", what, acks.Load()-from)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	progress("before the kill", 100)
	leader := c.Leader()
	if leader == 0 {
		t.Fatal("no leader")
	}
	c.Kill(leader)
	progress("after the leader's kill", 100)
	c.StartMember(leader)
	progress("after its return", 50)
	close(stop)
	wg.Wait()

	texts := headTexts(t, w, id)
	seen := map[string]int{}
	for _, s := range texts {
		seen[s]++
	}
	for text := range acked {
		if seen[text] != 1 {
			t.Errorf("acknowledged append %s is on the path %d times", text, seen[text])
		}
	}
	for text, n := range seen {
		if n > 1 || !acked[text] && !gaveUp[text] {
			t.Errorf("append %s is on the path %d times (acknowledged %v)", text, n, acked[text])
		}
	}
	if m, _ := w.Meta(id); m.Head != uint64(len(texts)) || m.NextSeq != m.Head+1 {
		t.Errorf("head %d, next_seq %d for %d nodes", m.Head, m.NextSeq, len(texts))
	}
	if err := appendChecked(w, id, "after"); err != nil {
		t.Errorf("an append after the faults: %v", err)
	}
	checkSession(t, w, id)
	t.Logf("%d acknowledged, %d given up, %d transactions run again, %d commits found landed", len(acked), len(gaveUp), retries.Load(), landed.Load())
}
