package kvstore

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
)

// listWorld drives random session operations through a Handle and keeps
// the nodes of each session, so that appends and compactions build on them.
type listWorld struct {
	t     *testing.T
	rng   *rand.Rand
	nodes map[string][]session.Node // each session's nodes, by seq-1
	n     int                       // sessions made
}

// Values drawn so that filters hit and miss, times tie (also across
// offsets), and the odd record is one the encoders must handle: invalid
// UTF-8, no title source, a time that does not parse, one before 1970.
var (
	listProjects = []string{"/p/a", "/p/a/b", "/p/ab", "/q", "", "/p/a/ü"}
	listTitles   = []string{"Fix the Login bug", "login page", "CSS grid", "Über-Release", "bad \xff utf8", "",
		"<b>&amp;</b> \"q\" \\ \u2028\x01\t"}
	listTimes = []string{
		"2026-01-01T00:00:00Z", "2026-01-01T01:00:00+01:00", "2026-01-01T00:00:00.5Z",
		"2026-03-04T05:06:07.123456789Z", "2025-12-31T23:59:59Z", "1969-12-31T23:59:59.5Z",
		"2026-01-01T00:00:00Z", "2026-06-01T00:00:00Z", "not a time",
	}
	listWords = []string{"parseConfig", "PARSECONFIG", "nothing", "login"}
)

func (w *listWorld) pick(xs []string) string { return xs[w.rng.IntN(len(xs))] }

func (w *listWorld) ids() []string {
	ids := make([]string, 0, len(w.nodes))
	for id := range w.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (w *listWorld) randomMeta(id string) session.Meta {
	m := session.Meta{ID: id, Title: w.pick(listTitles), ProjectPath: w.pick(listProjects),
		CreatedAt: w.pick(listTimes), UpdatedAt: w.pick(listTimes), NextSeq: 1,
		TitleSource: session.TitleSource(w.pick([]string{"", "manual", "heuristic"}))}
	w.randomUsage(&m)
	return m
}

func (w *listWorld) randomUsage(m *session.Meta) {
	m.Usage.InputTokens, m.Usage.OutputTokens = w.rng.Uint64N(1<<40), w.rng.Uint64N(300)
	m.Usage.CacheCreationInputTokens, m.Usage.CacheReadInputTokens = nil, nil
	if w.rng.IntN(3) == 0 {
		n := w.rng.Uint64N(1000)
		m.Usage.CacheReadInputTokens = &n
	}
	if w.rng.IntN(4) == 0 {
		n := uint64(0)
		m.Usage.CacheCreationInputTokens = &n
	}
	m.Cost = session.Cost{USD: float64(w.rng.IntN(1000)) * 0.001, UnpricedSteps: uint32(w.rng.IntN(3))}
	m.EditStats = session.EditStats{Added: w.rng.Uint64N(50), Removed: w.rng.Uint64N(50), Approximate: w.rng.IntN(2) == 0}
}

func (w *listWorld) text() string {
	return fmt.Sprintf("message %d %s", w.rng.IntN(100), w.pick(listWords))
}

// grow adds k nodes under parent, sets the head to the last and the counts.
func (w *listWorld) grow(m *session.Meta, parent uint64, k int) []session.Node {
	nodes := w.nodes[m.ID]
	var added []session.Node
	for range k {
		var p *session.Node
		if parent != 0 {
			p = &nodes[parent-1]
		}
		n := session.Child(p, m.NextSeq, userMsg(w.text()))
		nodes = append(nodes, n)
		added = append(added, n)
		parent, m.NextSeq = n.Seq, n.Seq+1
	}
	w.nodes[m.ID] = nodes
	if parent != 0 {
		last := nodes[parent-1]
		m.Head, m.MessageCount, m.UserMessageCount, m.Tokens = parent, last.Depth, last.Users, last.Tokens
	} else {
		m.Head, m.MessageCount, m.UserMessageCount, m.Tokens = 0, 0, 0, 0
	}
	return added
}

// step runs one random operation.
func (w *listWorld) step(h Handle, s *Store) {
	t := w.t
	ids := w.ids()
	op := w.rng.IntN(8)
	if len(ids) == 0 {
		op = 0
	}
	var id string
	if len(ids) > 0 {
		id = ids[w.rng.IntN(len(ids))]
	}
	var err error
	switch op {
	case 0, 1: // new, or a fork of another session
		w.n++
		nid := testID(w.rng.Uint32(), w.n)
		m := w.randomMeta(nid)
		w.nodes[nid] = nil
		if op == 1 && id != "" {
			m.ForkedFrom = &session.ForkOrigin{ID: id, Seq: w.rng.Uint64N(5)}
		}
		nodes := w.grow(&m, 0, w.rng.IntN(4))
		err = h.Commit(&m, nodes)
	case 2: // append, with a new update time
		var m session.Meta
		if m, err = h.Meta(id); err == nil {
			m.UpdatedAt = w.pick(listTimes)
			nodes := w.grow(&m, m.Head, 1)
			err = h.Commit(&m, nodes)
		}
	case 3: // compact: copy-on-write nodes, the old path kept as a branch
		var m session.Meta
		if m, err = h.Meta(id); err == nil {
			m.Branches = append(m.Branches, session.NamedBranch{Name: fmt.Sprintf("pre-compact-%d", len(m.Branches)+1), Seq: m.Head})
			m.UpdatedAt = w.pick(listTimes)
			nodes := w.grow(&m, 0, 1+w.rng.IntN(2))
			err = h.Commit(&m, nodes)
		}
	case 4: // switch the head back, keeping the update time
		var m session.Meta
		if m, err = h.Meta(id); err == nil {
			if m.Head > 1 {
				w.grow(&m, 0, 0)
				n := w.nodes[id][m.NextSeq/2-1]
				m.Head, m.MessageCount, m.UserMessageCount, m.Tokens = n.Seq, n.Depth, n.Users, n.Tokens
			}
			err = h.Commit(&m, nil)
		}
	case 5: // retitle, usage and cost
		var m session.Meta
		if m, err = h.Meta(id); err == nil {
			m.Title, m.ProjectPath = w.pick(listTitles), w.pick(listProjects)
			w.randomUsage(&m)
			err = h.Commit(&m, nil)
		}
	case 6, 7: // delete (direct stores only: it is no command's)
		if s == nil {
			return
		}
		err = s.DeleteSession(id)
		delete(w.nodes, id)
	}
	if err != nil {
		t.Fatalf("op %d on %s: %v", op, id, err)
	}
}

func (w *listWorld) randomQuery() ListQuery {
	var q ListQuery
	if w.rng.IntN(3) == 0 {
		q.Project = w.pick([]string{"/p/a", "/p", "/", "/q", "/p/a/b"})
	}
	if w.rng.IntN(4) == 0 {
		q.Title = w.pick([]string{"login", "LOGIN", "über", "grid"})
	}
	if w.rng.IntN(4) == 0 {
		q.Grep = w.pick(listWords)
	}
	q.Fold = w.rng.IntN(2) == 0
	if w.rng.IntN(4) == 0 {
		q.Since, _ = time.Parse(time.RFC3339Nano, w.pick(listTimes[:8]))
	}
	if w.rng.IntN(4) == 0 {
		q.Until, _ = time.Parse(time.RFC3339Nano, w.pick(listTimes[:8]))
	}
	q.Oldest = w.rng.IntN(3) == 0
	q.Limit = w.rng.IntN(6)
	return q
}

// referenceList is what wc-ls printed before the listing existed: every
// session's metadata (metas, in id order) filtered, stably sorted by update
// time (one that does not parse is older than any), then grepped in order
// up to the limit. h reads the messages --grep looks in.
func referenceList(t *testing.T, h Handle, metas []session.Meta, q ListQuery) []session.Info {
	t.Helper()
	title, grep := q.Title, q.Grep
	if q.Fold {
		title, grep = strings.ToLower(title), strings.ToLower(grep)
	}
	parse := func(s string) (time.Time, bool) {
		tm, err := time.Parse(time.RFC3339Nano, s)
		return tm, err == nil
	}
	metas = slices.DeleteFunc(slices.Clone(metas), func(m session.Meta) bool {
		if q.Project != "" && m.ProjectPath != q.Project && !strings.HasPrefix(m.ProjectPath, q.Project+"/") && q.Project != "/" {
			return true
		}
		if !q.Since.IsZero() || !q.Until.IsZero() {
			tm, ok := parse(m.UpdatedAt)
			if !ok || (!q.Since.IsZero() && tm.Before(q.Since)) || (!q.Until.IsZero() && !tm.Before(q.Until)) {
				return true
			}
		}
		mt := m.Title
		if q.Fold {
			mt = strings.ToLower(mt)
		}
		return title != "" && !strings.Contains(mt, title)
	})
	slices.SortStableFunc(metas, func(a, b session.Meta) int {
		ta, okA := parse(a.UpdatedAt)
		tb, okB := parse(b.UpdatedAt)
		c := cmp.Compare(boolInt(okA), boolInt(okB))
		if c == 0 && okA {
			c = ta.Compare(tb)
		}
		if !q.Oldest {
			c = -c
		}
		return c
	})
	var out []session.Info
	for i := range metas {
		if q.Limit > 0 && len(out) == q.Limit {
			break
		}
		if grep != "" {
			found := false
			err := h.Nodes(metas[i].ID, func(seq uint64, raw []byte) error {
				n, err := record.DecodeNode(seq, raw)
				if err == nil && session.MessageContains(&n.Msg, grep, q.Fold) {
					found = true
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if !found {
				continue
			}
		}
		out = append(out, metas[i].Info())
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func listInfo(t *testing.T, h Handle, q ListQuery) []session.Info {
	t.Helper()
	var got []session.Info
	if err := h.ListInfo(q, func(i *session.Info) error { got = append(got, *i); return nil }); err != nil {
		t.Fatalf("ListInfo(%+v): %v", q, err)
	}
	return got
}

// listLines is what ListJSON gives for q.
func listLines(t *testing.T, h Handle, q ListQuery) []string {
	t.Helper()
	var got []string
	if err := h.ListJSON(q, func(line []byte) error { got = append(got, string(line)); return nil }); err != nil {
		t.Fatalf("ListJSON(%+v): %v", q, err)
	}
	return got
}

// printedLines are infos as wc-ls printed them through encoding/json,
// without their newlines.
func printedLines(t *testing.T, infos []session.Info) []string {
	t.Helper()
	var lines []string
	for i := range infos {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&infos[i]); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.TrimSuffix(b.String(), "\n"))
	}
	return lines
}

// checkLines checks ListJSON(q) against the lines of ListInfo(q)'s infos.
func checkLines(t *testing.T, h Handle, q ListQuery, infos []session.Info) {
	t.Helper()
	if got, want := listLines(t, h, q), printedLines(t, infos); !slices.Equal(got, want) {
		t.Fatalf("ListJSON(%+v):\n got  %q\n want %q", q, got, want)
	}
}

// metas reads the metadata of every session the world made, in id order,
// through h; a session the world does not know of shows as a count that
// differs in verify.
func (w *listWorld) metas(h Handle) []session.Meta {
	ids := slices.Sorted(maps.Keys(w.nodes))
	metas := make([]session.Meta, 0, len(ids))
	for _, id := range ids {
		m, err := h.Meta(id)
		if err != nil {
			w.t.Fatalf("meta %s: %v", id, err)
		}
		metas = append(metas, m)
	}
	return metas
}

// verify checks the everything-query and random ones against the reference,
// and their lines of JSON against their infos.
func (w *listWorld) verify(h Handle, queries int) {
	t := w.t
	t.Helper()
	metas := w.metas(h)
	all := listInfo(t, h, ListQuery{})
	if want := referenceList(t, h, metas, ListQuery{}); !reflect.DeepEqual(all, want) {
		t.Fatalf("listing differs from the metadata:\n got  %+v\n want %+v", all, want)
	}
	checkLines(t, h, ListQuery{}, all)
	if len(all) != len(w.nodes) {
		t.Fatalf("%d sessions listed, %d stored", len(all), len(w.nodes))
	}
	for range queries {
		q := w.randomQuery()
		got := listInfo(t, h, q)
		if want := referenceList(t, h, metas, q); !reflect.DeepEqual(got, want) {
			t.Fatalf("query %+v:\n got  %+v\n want %+v", q, got, want)
		}
		checkLines(t, h, q, got)
	}
}

// After random sequences of new, append, compact, branch, fork and delete,
// the listing holds exactly what a scan of the metadata gives, in
// the same order, and every query answers as wc-ls did from that scan,
// directly and through the resident process.
func TestListingConsistency(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	w := &listWorld{t: t, rng: rand.New(rand.NewPCG(seed, 7)), nodes: map[string][]session.Node{}}
	dir := filepath.Join(t.TempDir(), "store")
	for range 6 {
		s := open(t, dir, Write)
		for range 40 {
			w.step(s, s)
		}
		if err := s.CheckListing(); err != nil {
			t.Fatal(err)
		}
		w.verify(s, 20)
		mustClose(t, s)
		r := open(t, dir, Read)
		if err := r.CheckListing(); err != nil {
			t.Fatal(err)
		}
		w.verify(r, 20)
		mustClose(t, r)
	}

	serve(t, dir, time.Minute)
	c := dial(t, dir, Write)
	for range 60 {
		w.step(c, nil)
	}
	w.verify(c, 40)
	// A consumer that stops early leaves the connection usable.
	stop := errors.New("enough")
	if err := c.ListInfo(ListQuery{}, func(*session.Info) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("stopped listing: %v", err)
	}
	w.verify(c, 5)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Shutdown(dir, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	r := open(t, dir, Read)
	defer mustClose(t, r)
	if err := r.CheckListing(); err != nil {
		t.Fatal(err)
	}
}

// servedStore is a store of n empty sessions, their listing read directly,
// and a resident process serving it.
func servedStore(t *testing.T, n int) (dir string, listed []session.Info) {
	dir = filepath.Join(t.TempDir(), "store")
	sessions := map[string][]session.Node{}
	for i := range n {
		sessions[testID(uint32(i)*7919, i)] = nil
	}
	create(t, dir, sessions)
	r := open(t, dir, Read)
	listed = listInfo(t, r, ListQuery{})
	mustClose(t, r)
	serve(t, dir, time.Minute)
	return dir, listed
}

// Many sessions make the resident process send several chunks.
func TestListingManyThroughResident(t *testing.T) {
	n := 3*chunkItems + 7
	dir, want := servedStore(t, n)
	c := dial(t, dir, Read)
	defer c.Close()
	if got := listInfo(t, c, ListQuery{}); !reflect.DeepEqual(got, want) || len(got) != n {
		t.Errorf("through the resident process: %d sessions, directly %d", len(got), len(want))
	}
	// All were updated at the same instant: id order either way.
	if got := listInfo(t, c, ListQuery{Limit: 300, Oldest: true}); !reflect.DeepEqual(got, want[:300]) {
		t.Errorf("oldest 300: %d sessions, first %s", len(got), got[0].ID)
	}
	// Lines of JSON, asked with the hello as wc-ls asks them, in chunks.
	q := ListQuery{Limit: 3*chunkItems + 1}
	cj, err := remote.Dial(dir, remote.Ask{Mode: Read, Listing: &q, ListingJSON: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cj.Close()
	checkLines(t, cj, q, want[:q.Limit])
}

// The listing asked with the hello is the one read first when it is asked
// again; a listing of the other kind, or one stopped early, leaves the
// connection usable.
func TestListingAskedWithTheHello(t *testing.T) {
	dir, all := servedStore(t, 2*chunkItems+3)

	q := ListQuery{Limit: 10}
	before := residentRequests.Load()
	c, err := remote.Dial(dir, remote.Ask{Mode: Read, Listing: &q, ListingJSON: true})
	if err != nil {
		t.Fatal(err)
	}
	checkLines(t, c, q, all[:10])
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := residentRequests.Load() - before; n != 1 {
		t.Errorf("%d requests reached the server; want 1, the listing sent with the hello", n)
	}

	stop := errors.New("enough")
	for _, asJSON := range []bool{true, false} {
		c, err := remote.Dial(dir, remote.Ask{Mode: Read, Listing: &q, ListingJSON: asJSON})
		if err != nil {
			t.Fatal(err)
		}
		if asJSON {
			if got := listInfo(t, c, q); !reflect.DeepEqual(got, all[:10]) {
				t.Errorf("infos after asking for lines with the hello: %d sessions", len(got))
			}
		} else {
			checkLines(t, c, q, all[:10])
		}
		if err := c.ListJSON(ListQuery{}, func([]byte) error { return stop }); !errors.Is(err, stop) {
			t.Errorf("stopped listing: %v", err)
		}
		checkLines(t, c, ListQuery{}, all)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// schemaOf is dir's schema record, read without opening the store (which
// would move an older one to this schema).
func schemaOf(t *testing.T, dir string) string {
	t.Helper()
	db, err := badger.Open(badgerkv.Options(filepath.Join(dir, "db"), false, false)) // replays a killed writer
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v []byte
	if err := badgerkv.New(db).View(func(txn kv.Txn) error {
		item, err := txn.Get(schemaKey)
		if err == nil {
			v, err = bytes.Clone(item), nil
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return string(v)
}

// The metadata and its listing entry commit together even when the nodes
// fill the transaction: the nodes go first, alone.
func TestListingCommitRedo(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Write)
	defer mustClose(t, s)
	prompt := strings.Repeat("a long system prompt ", 400) // 8 KB, inline: more than a node
	commit := func(n, i int) int64 {
		nodes := chain(n, 1024)
		m := metaFor(testID(0x5e55, i), nodes)
		m.SetSystemPrompt(prompt)
		if err := s.Commit(&m, nodes); err != nil {
			t.Fatal(err)
		}
		return s.lastTxns.Load()
	}
	// The most nodes that fit beside the metadata in one transaction.
	lo, hi, i := 1, 2000, 0
	for lo < hi {
		mid := (lo + hi + 1) / 2
		i++
		if commit(mid, i) == 1 {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	before := testMetaRedone.Load()
	i++
	if txns := commit(lo+1, i); txns != 2 {
		t.Errorf("%d nodes took %d transactions, want 2", lo+1, txns)
	}
	if testMetaRedone.Load() == before {
		t.Errorf("%d nodes (%d fit with the metadata) did not redo the last transaction", lo+1, lo)
	}
	if err := s.CheckListing(); err != nil {
		t.Fatal(err)
	}
	m, err := s.Meta(testID(0x5e55, i))
	if err != nil || m.Head != uint64(lo+1) {
		t.Fatalf("meta: %+v, %v", m, err)
	}
	if got := pathSeqsOf(t, s, m.ID, m.Head); len(got) != lo+1 {
		t.Errorf("path of %d nodes, want %d", len(got), lo+1)
	}
}

// Shards of many entries are read a few at a time: queries whose bounds,
// limits and ties fall across those reads answer as the reference does.
func TestListingShardMerge(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Write)
	defer mustClose(t, s)
	rng := rand.New(rand.NewPCG(5, 6))
	base := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	var times []time.Time
	for i := range 700 {
		// Three shards, uneven; update times that tie now and then.
		head := []uint32{0x00000000, 0x01000000, 0xff000000}[rng.IntN(3)] | rng.Uint32N(1<<24)
		id := testID(head, i)
		tm := base.Add(time.Duration(rng.IntN(400)) * time.Second)
		times = append(times, tm)
		m := metaFor(id, nil)
		m.UpdatedAt = session.FormatTime(tm)
		m.ProjectPath = listProjects[rng.IntN(len(listProjects))]
		if err := s.Commit(&m, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CheckListing(); err != nil {
		t.Fatal(err)
	}
	var metas []session.Meta
	if err := s.List(func(m *session.Meta) error { metas = append(metas, *m); return nil }); err != nil {
		t.Fatal(err)
	}
	for range 300 {
		var q ListQuery
		q.Oldest = rng.IntN(2) == 0
		q.Limit = []int{0, 1, 17, 50, 333}[rng.IntN(5)]
		if rng.IntN(2) == 0 {
			q.Since = times[rng.IntN(len(times))]
		}
		if rng.IntN(2) == 0 {
			q.Until = times[rng.IntN(len(times))]
		}
		if rng.IntN(3) == 0 {
			q.Project = "/p/a"
		}
		if got, want := listInfo(t, s, q), referenceList(t, s, metas, q); !reflect.DeepEqual(got, want) {
			t.Fatalf("query %+v: %d sessions, want %d", q, len(got), len(want))
		}
	}
}

// The ids whose ranges hold the listing's shards are no session's.
func TestListingReservedIDs(t *testing.T) {
	s := open(t, t.TempDir(), Write)
	defer mustClose(t, s)
	last := shardID(listingShards - 1).String()
	for _, id := range []string{shardID(0).String(), last} {
		m := metaFor(id, nil)
		if err := s.Commit(&m, nil); err == nil || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("commit %s: %v", id, err)
		}
	}
	// The session with the id right after the last shard's.
	m := metaFor(last[:35]+"1", nil)
	if err := s.Commit(&m, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Resolve(last[:4]); err != nil || got != m.ID {
		t.Errorf("resolve beside a shard: %q, %v", got, err)
	}
	if _, err := s.Resolve(last); !errors.Is(err, ErrNotFound) {
		t.Errorf("resolve of a shard's id: %v", err)
	}
	n := 0
	if err := s.List(func(*session.Meta) error { n++; return nil }); err != nil || n != 1 {
		t.Errorf("list: %d sessions, %v", n, err)
	}
}
