package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
)

// The read-ahead hands out every session in order, reading the next one
// while the current one is written (run with -race), and reads a session
// that comes twice in a row only after its first write.
func TestReadAhead(t *testing.T) {
	st, err := store.Open(store.Options{Dir: t.TempDir(), LockTimeout: time.Second, Bulk: true}, store.Write)
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
	ahead := newReadAhead(st, ids, true)
	defer ahead.wait()
	for i, id := range ids {
		l := ahead.take(i)
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
