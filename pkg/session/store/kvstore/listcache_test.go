package kvstore

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
)

// Listings through the resident process, answered from its cache or not,
// are those of a model of the store, across commits that move sessions to
// the front, into the past, to the same instant as others, and writes the
// cache does not follow (blobs, a collection). Each step lists a random
// choice of queries, so that the cache is filled to various depths.
func TestResidentListCacheMatchesModel(t *testing.T) {
	// Filled after filtered listings, the cache is mostly complete;
	// without fills, it holds what unfiltered listings left.
	for _, fill := range []bool{true, false} {
		t.Run(fmt.Sprint("fill ", fill), func(t *testing.T) {
			defer func(was bool) { fillListings = was }(fillListings)
			fillListings = fill
			testListCacheMatchesModel(t)
		})
	}
}

func testListCacheMatchesModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	serve(t, dir, time.Minute)
	rng := rand.New(rand.NewPCG(7, 7))
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	instant := func() string { // few distinct instants: ties are common
		return session.FormatTime(base.Add(time.Duration(rng.IntN(40)) * time.Hour))
	}
	projects := []string{"/p/a", "/p/a/sub", "/p/b", "/q"}
	model := map[string]session.Meta{}
	var ids []string

	hitsBefore := listCacheHits.Load()
	for step := range 400 {
		w := dial(t, dir, Write)
		switch op := rng.IntN(10); {
		case op < 3 || len(ids) < 5: // a new session
			id := testID(rng.Uint32(), step)
			nodes := chain(1+rng.IntN(3), 20)
			m := metaFor(id, nodes)
			m.UpdatedAt, m.ProjectPath = instant(), projects[rng.IntN(len(projects))]
			m.Title = []string{"fix login", "Refactor", "docs"}[rng.IntN(3)]
			if err := w.Commit(&m, nodes); err != nil {
				t.Fatal(err)
			}
			model[id] = m
			ids = append(ids, id)
		case op < 8: // an append, dated now or in the past
			id := ids[rng.IntN(len(ids))]
			m := model[id]
			head, err := w.Node(id, m.Head)
			if err != nil {
				t.Fatal(err)
			}
			n := session.Child(&head, m.NextSeq, userMsg("more"))
			m.Head, m.NextSeq, m.MessageCount = n.Seq, n.Seq+1, n.Depth
			m.UpdatedAt = instant()
			if err := w.Commit(&m, []session.Node{n}); err != nil {
				t.Fatal(err)
			}
			model[id] = m
		case op == 8: // a blob: a write the cache does not follow
			data := []byte(fmt.Sprint("blob ", step))
			if err := w.PutBlob(ids[rng.IntN(len(ids))], sha256.Sum256(data), data); err != nil {
				t.Fatal(err)
			}
		default: // a collection, which may rewrite the metadata
			m := model[ids[rng.IntN(len(ids))]]
			if _, err := w.Collect(&m, false); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}

		r := dial(t, dir, Read)
		for _, q := range []ListQuery{
			{Limit: 5}, {Limit: 20}, {Limit: 3, Project: "/p/a"}, {Project: "/p/b"},
			{Limit: 4, Title: "fix"}, {Limit: 4, Title: "REFACTOR", Fold: true},
			{Limit: 6, Since: base.Add(20 * time.Hour)}, {Until: base.Add(10 * time.Hour), Limit: 3},
			{Oldest: true, Limit: 3}, {Limit: 4, Shard: store.Shard{Index: 1, Count: 3}},
			{Shard: store.Shard{Index: 2, Count: 3}}, {Limit: 2, Project: "/p/a", Shard: store.Shard{Index: 2, Count: 2}},
			{Oldest: true, Limit: 3, Shard: store.Shard{Index: 3, Count: 3}}, {},
		} {
			if rng.IntN(map[bool]int{true: 10, false: 2}[q == ListQuery{}]) != 0 {
				continue
			}
			got := listRows(t, r, q)
			if want := modelList(model, q); !slices.Equal(got, want) {
				t.Fatalf("step %d, %+v:\n got  %s\n want %s", step, q, strings.Join(got, ", "), strings.Join(want, ", "))
			}
		}
		r.Close()
	}
	if hits := listCacheHits.Load() - hitsBefore; hits < 500 {
		t.Errorf("only %d of about 2,600 listings came from the cache", hits)
	}
}

// listRows lists q through c, a row per session as modelList writes it.
func listRows(t *testing.T, c *remote.Client, q ListQuery) []string {
	t.Helper()
	var rows []string
	if err := c.ListInfo(q, func(info *session.Info) error {
		rows = append(rows, fmt.Sprint(info.ID, " ", info.UpdatedAt, " ", info.MessageCount))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return rows
}

// modelList is what a listing of the sessions in model must be.
func modelList(model map[string]session.Meta, q ListQuery) []string {
	var ms []session.Meta
	for _, m := range model {
		if id, err := store.ParseID(m.ID); err != nil || !q.Shard.Holds(id) {
			continue
		}
		t, _ := time.Parse(time.RFC3339Nano, m.UpdatedAt)
		if q.Project != "" && m.ProjectPath != q.Project && !strings.HasPrefix(m.ProjectPath, q.Project+"/") ||
			!q.Since.IsZero() && t.Before(q.Since) || !q.Until.IsZero() && !t.Before(q.Until) {
			continue
		}
		title, want := m.Title, q.Title
		if q.Fold {
			title, want = strings.ToLower(title), strings.ToLower(want)
		}
		if !strings.Contains(title, want) {
			continue
		}
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b session.Meta) int {
		ta, _ := time.Parse(time.RFC3339Nano, a.UpdatedAt)
		tb, _ := time.Parse(time.RFC3339Nano, b.UpdatedAt)
		if c := tb.Compare(ta); c != 0 {
			if q.Oldest {
				return -c
			}
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	var out []string
	for _, m := range ms {
		if q.Limit > 0 && len(out) == q.Limit {
			break
		}
		out = append(out, fmt.Sprint(m.ID, " ", m.UpdatedAt, " ", m.MessageCount))
	}
	return out
}

// A listing sent with the hello is the answer of the ListInfo that asks
// for it; a command that asks for something else first, or nothing, gets
// its own answers and leaves the server serving.
func TestResidentListingWithHello(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	serve(t, dir, time.Minute)
	w := dial(t, dir, Write)
	for i := range 300 { // more than a chunk
		id := testID(uint32(i)*2654435761, i)
		nodes := chain(1, 10)
		m := metaFor(id, nodes)
		m.UpdatedAt = session.FormatTime(time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC))
		if err := w.Commit(&m, nodes); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	list := func(c *remote.Client, q ListQuery) []string {
		var ids []string
		if err := c.ListInfo(q, func(info *session.Info) error { ids = append(ids, info.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	plain := dial(t, dir, Read)
	all, newest := list(plain, ListQuery{}), list(plain, ListQuery{Limit: 7})
	plain.Close()
	if len(all) != 300 || !slices.Equal(newest, all[:7]) {
		t.Fatalf("listing: %d sessions, newest %v", len(all), newest)
	}
	opts := Options{Dir: dir, LockTimeout: 5 * time.Second}
	for name, use := range map[string]func(c *remote.Client){
		"asked":         func(c *remote.Client) { check(t, list(c, ListQuery{}), all) },
		"other listing": func(c *remote.Client) { check(t, list(c, ListQuery{Limit: 7}), newest) },
		"meta first": func(c *remote.Client) {
			if m, err := c.Meta(all[3]); err != nil || m.ID != all[3] {
				t.Errorf("meta: %+v, %v", m, err)
			}
			check(t, list(c, ListQuery{}), all)
		},
		"nothing": func(*remote.Client) {},
	} {
		c, err := dialListing(opts, ListQuery{})
		if err != nil {
			t.Fatal(name, err)
		}
		use(c)
		if err := c.Close(); err != nil {
			t.Errorf("%s: close: %v", name, err)
		}
		after := dial(t, dir, Read)
		check(t, list(after, ListQuery{Limit: 7}), newest)
		after.Close()
	}
}

func check(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("got %d sessions %.3v…, want %d %.3v…", len(got), got, len(want), want)
	}
}

// A filtered listing the cache could not answer fills it in the
// background, so that the next one comes from it, and is right; a listing
// larger than the cache is read once, and not again.
func TestResidentListCacheFills(t *testing.T) {
	for _, tooBig := range []bool{false, true} {
		t.Run(fmt.Sprint("too big ", tooBig), func(t *testing.T) {
			if tooBig {
				defer func(was int) { listCacheBytes = was }(listCacheBytes)
				listCacheBytes = 1000 // a few entries
			}
			dir := filepath.Join(t.TempDir(), "store")
			serve(t, dir, time.Minute)
			model := map[string]session.Meta{}
			w := dial(t, dir, Write)
			for i := range 40 {
				id := testID(uint32(i)+1, i)
				nodes := chain(1, 20)
				m := metaFor(id, nodes)
				m.ProjectPath = []string{"/p/a", "/p/b"}[i%2]
				m.UpdatedAt = session.FormatTime(time.Date(2026, 3, 1, i, 0, 0, 0, time.UTC))
				if err := w.Commit(&m, nodes); err != nil {
					t.Fatal(err)
				}
				model[m.ID] = m
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			q := ListQuery{Project: "/p/a", Limit: 5}
			list := func() []string {
				r := dial(t, dir, Read)
				defer r.Close()
				return listRows(t, r, q)
			}
			fillsBefore := listCacheFills.Load()
			hit := false
			for i := 0; i < 100 && !hit; i++ { // the fill runs after the answer
				before := listCacheHits.Load()
				if got, want := list(), modelList(model, q); !slices.Equal(got, want) {
					t.Fatalf("listing %d:\n got  %s\n want %s", i, strings.Join(got, ", "), strings.Join(want, ", "))
				}
				hit = listCacheHits.Load() > before
				time.Sleep(10 * time.Millisecond)
			}
			if hit == tooBig {
				t.Errorf("a listing came from the cache: %v, want %v", hit, !tooBig)
			}
			if fills := listCacheFills.Load() - fillsBefore; fills != 1 {
				t.Errorf("the listing was read into the cache %d times, want once", fills)
			}
		})
	}
}
