package main

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wctoolkit/wc/cmd/internal/batch"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kvstore"
)

// The sessions of a batch are read ahead, in parallel, and handed out in
// order (run with -race); no more than the window are held at once; and a
// session that comes twice in a row is read again only after the first
// was written.
func TestAhead(t *testing.T) {
	st, err := kvstore.Open(kvstore.Options{Dir: t.TempDir(), LockTimeout: time.Second, Bulk: true}, kvstore.Write)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var made []string
	for i := range 5 {
		m := session.New(fmt.Sprintf("00000000-0000-4000-8000-%012d", i), "", "", now)
		res := session.Append(&m, nil, benchSession(8+i), now, nil, session.AppendOptions{})
		if err := st.Commit(&m, res.Nodes); err != nil {
			t.Fatal(err)
		}
		made = append(made, m.ID)
	}
	ids := []string{made[0], made[1], made[1], made[2], made[3], made[3], made[3], made[4], made[0]}
	var mu sync.Mutex
	held, most := 0, 0
	ahead := batch.Start(ids, true, true, func(id string, reserve func(uint64) bool) *worked {
		mu.Lock()
		held++
		most = max(most, held)
		mu.Unlock()
		w := &worked{id: id}
		if w.m, w.err = st.Meta(id); w.err == nil && reserve(w.m.Tokens) {
			w.err = st.Path(id, w.m.Head, func(n *session.Node) error { w.path = append(w.path, *n); return nil })
		}
		return w
	})
	defer ahead.Stop()
	for i, id := range ids {
		l := ahead.Take(i)
		if l.err != nil || l.id != id {
			t.Fatalf("take(%d) = %s, %v; want %s", i, l.id, l.err, id)
		}
		if uint64(len(l.path)) != l.m.MessageCount {
			t.Fatalf("take(%d): path of %d for %d messages", i, len(l.path), l.m.MessageCount)
		}
		// Write one message at the head, as a compaction would: a later
		// take of the same session must see it.
		head := l.path[len(l.path)-1]
		res := session.Append(&l.m, &head, []session.Message{{Role: session.RoleUser, Content: session.TextContent(fmt.Sprintf("after take %d", i))}}, now, nil, session.AppendOptions{})
		if err := st.Commit(&l.m, res.Nodes); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		held--
		mu.Unlock()
		ahead.Done(i)
	}
	if most > batch.Window() {
		t.Errorf("%d sessions held at once, over the window of %d", most, batch.Window())
	}
	// Each session was taken as often as it appears, and each take saw the
	// writes of the takes before it.
	for i, id := range made {
		m, err := st.Meta(id)
		if err != nil {
			t.Fatal(err)
		}
		times := 0
		for _, x := range ids {
			if x == id {
				times++
			}
		}
		if want := uint64(8 + i + times); m.MessageCount != want {
			t.Errorf("session %d: %d messages, want %d (a take missed an earlier write)", i, m.MessageCount, want)
		}
	}
}

// A batch stopped midway (interrupted, or failed) starts no more work,
// reads nothing more for work waiting to read, and waits for the work in
// flight before the store closes.
func TestAheadStopped(t *testing.T) {
	ids := make([]string, 50)
	for i := range ids {
		ids[i] = fmt.Sprint(i)
	}
	var mu sync.Mutex
	started, read, finished := 0, 0, 0 // read: went on to read
	ahead := batch.Start(ids, true, false, func(id string, reserve func(uint64) bool) *worked {
		mu.Lock()
		started++
		mu.Unlock()
		// Each over the budget: beyond the next two, they wait.
		if !reserve(batch.Tokens + 1) {
			return &worked{id: id, err: errStopped}
		}
		mu.Lock()
		read++
		mu.Unlock()
		if id != "0" {
			time.Sleep(50 * time.Millisecond) // still reading when stop is called
		}
		for id == "0" { // the caller takes it once the window has filled
			mu.Lock()
			n := started
			mu.Unlock()
			if n >= min(3, batch.Window()) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		finished++
		mu.Unlock()
		return &worked{id: id}
	})
	ahead.Take(0)
	ahead.Done(0)
	ahead.Stop()
	mu.Lock()
	defer mu.Unlock()
	if started > 1+batch.Window() {
		t.Errorf("%d sessions started for one taken, window %d", started, batch.Window())
	}
	if read > 3 {
		t.Errorf("%d sessions read for one taken: those waiting to read went on after the stop", read)
	}
	if finished != read {
		t.Errorf("stop returned with %d of %d reads unfinished", read-finished, read)
	}
}

// Beyond the session taken next and the one after it, sessions are read
// only while their sizes fit batch.Tokens: a batch of long sessions holds
// two at a time, and short ones fill the window.
func TestAheadBoundedBySize(t *testing.T) {
	for _, tc := range []struct {
		tokens uint64
		most   int
	}{{batch.Tokens + 1, 2}, {batch.Tokens / 16, batch.Window()}} {
		ids := make([]string, 40)
		var mu sync.Mutex
		held, most := 0, 0
		ahead := batch.Start(ids, true, false, func(id string, reserve func(uint64) bool) *worked {
			reserve(tc.tokens)
			mu.Lock()
			held++
			most = max(most, held)
			mu.Unlock()
			time.Sleep(time.Millisecond) // let the others catch up
			return &worked{id: id}
		})
		for i := range ids {
			ahead.Take(i)
			time.Sleep(time.Millisecond)
			mu.Lock()
			held--
			mu.Unlock()
			ahead.Done(i)
		}
		ahead.Stop()
		if most != min(tc.most, batch.Window()) {
			t.Errorf("sessions of %d tokens: %d held at once, want %d", tc.tokens, most, min(tc.most, batch.Window()))
		}
	}
}
