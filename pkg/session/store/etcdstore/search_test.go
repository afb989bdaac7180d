package etcdstore_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/etcdstore"
	"github.com/wctoolkit/wc/pkg/session/store/kvstore"
)

// TestSearchIndexOnEtcd keeps the search index of a store on etcd: the
// first writable grep builds it (segments in chunks within etcd's
// transactions), appends mark and fold, and --grep finds what a read of
// every message finds, --search the sessions of a phrase.
func TestSearchIndexOnEtcd(t *testing.T) {
	u := storeURL(t)
	s, err := etcdstore.Open(u, noEnv, kvstore.Options{LockTimeout: 10 * time.Second}, kvstore.Write)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A second writer, as on another machine: no lock between the two, so
	// their folds and merges race.
	s2, err := etcdstore.Open(u, noEnv, kvstore.Options{LockTimeout: 10 * time.Second}, kvstore.Write)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	r := rand.New(rand.NewPCG(3, 3))
	words := strings.Fields("login test flaky rollback TestLogin handleLogin the of café schema")
	text := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteString([]string{" ", ". ", "\n"}[r.IntN(3)])
		}
		return b.String()
	}
	nodes := map[string][]session.Node{}
	var addOn func(h *kvstore.Store, id string, size int)
	var mu sync.Mutex
	add := func(id string, size int) { addOn(s, id, size) }
	addOn = func(h *kvstore.Store, id string, size int) {
		mu.Lock()
		defer mu.Unlock()
		old := nodes[id]
		var parent *session.Node
		if len(old) > 0 {
			parent = &old[len(old)-1]
		}
		n := session.Child(parent, uint64(len(old)+1), session.Message{Role: session.RoleUser, Content: session.TextContent(text(size))})
		all := append(slices.Clone(old), n)
		m := session.Meta{ID: id, Title: "t", TitleSource: session.TitleManual, CreatedAt: "2026-01-02T03:04:05Z",
			UpdatedAt: "2026-01-02T03:04:05Z", Head: n.Seq, NextSeq: n.Seq + 1, MessageCount: n.Depth}
		mu.Unlock()
		err := h.Commit(&m, []session.Node{n})
		mu.Lock()
		if err != nil {
			t.Error(err)
			return
		}
		nodes[id] = all
	}
	var ids []string
	for i := range 40 {
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", uint32(i)*2654435761, i)
		ids = append(ids, id)
		add(id, 200)
	}
	for range 6 {
		add(ids[r.IntN(len(ids))], 400<<10) // segments of several chunks
	}
	check := func(stage string) {
		t.Helper()
		for _, needle := range []string{"login test", "ogi", "TestLogin f", "café"} {
			var want, got []string
			for id, ns := range nodes {
				for i := range ns {
					if session.MessageContains(&ns[i].Msg, needle, false) {
						want = append(want, id)
						break
					}
				}
			}
			if err := s.ListInfo(store.ListQuery{Grep: needle}, func(in *session.Info) error { got = append(got, in.ID); return nil }); err != nil {
				t.Fatal(err)
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: --grep %q found %d sessions, a full read %d", stage, needle, len(got), len(want))
			}
		}
		n := 0
		if err := s.ListJSON(store.ListQuery{Search: `"login test"`}, func([]byte) error { n++; return nil }); err != nil || n == 0 {
			t.Errorf(`%s: --search '"login test"': %d rows, %v`, stage, n, err)
		}
	}
	check("built")
	st, _ := s.IndexStats()
	t.Logf("built: %+v", st)
	// Each writer appends to sessions of its own (a session's commits are
	// checked by revision; that is not what this tests).
	var wg sync.WaitGroup
	for w, h := range []*kvstore.Store{s, s2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 400 {
				addOn(h, ids[(i*2+w)%len(ids)], 100)
			}
		}()
	}
	wg.Wait()
	st, _ = s.IndexStats()
	t.Logf("folded: %+v", st)
	check("after the writers' folds")
}
