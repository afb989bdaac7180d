package kvstore

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

var searchVocab = strings.Fields("login test testing TestLogin handleLogin flaky rollback the a of café Café migration schema x")

// searchWorld is a store and what was written to it.
type searchWorld struct {
	t     *testing.T
	st    *Store
	r     *rand.Rand
	nodes map[string][]session.Node
}

func (w *searchWorld) text() string {
	var b strings.Builder
	for range 1 + w.r.IntN(12) {
		b.WriteString(searchVocab[w.r.IntN(len(searchVocab))])
		b.WriteString([]string{" ", " ", ". ", "\n", "_"}[w.r.IntN(5)])
	}
	return b.String()
}

// add appends n messages to session id (new when it has none).
func (w *searchWorld) add(id string, n int) {
	w.t.Helper()
	old := w.nodes[id]
	var fresh []session.Node
	for range n {
		var parent *session.Node
		switch {
		case len(fresh) > 0:
			parent = &fresh[len(fresh)-1]
		case len(old) > 0:
			parent = &old[len(old)-1]
		}
		msg := userMsg(w.text())
		if w.r.IntN(3) == 0 {
			msg = session.Message{Role: session.RoleAssistant, Content: session.Content{IsBlocks: true, Blocks: []session.Block{
				{Type: session.BlockText, Text: w.text()},
				{Type: session.BlockToolUse, ID: "t1", Name: "bash", Input: json.RawMessage(`{"cmd":"go test ./login"}`)},
			}}}
		}
		fresh = append(fresh, session.Child(parent, uint64(len(old)+len(fresh)+1), msg))
	}
	all := append(slices.Clone(old), fresh...)
	m := metaFor(id, all)
	if err := w.st.Commit(&m, fresh); err != nil {
		w.t.Fatal(err)
	}
	w.nodes[id] = all
}

// want is what a read of every message finds.
func (w *searchWorld) want(needle string, fold bool) []string {
	if fold {
		needle = strings.ToLower(needle)
	}
	var ids []string
	for id, nodes := range w.nodes {
		for i := range nodes {
			if session.MessageContains(&nodes[i].Msg, needle, fold) {
				ids = append(ids, id)
				break
			}
		}
	}
	slices.Sort(ids)
	return ids
}

func grepIDs(t *testing.T, st *Store, needle string, fold bool) []string {
	t.Helper()
	var ids []string
	err := st.ListInfo(ListQuery{Grep: needle, Fold: fold}, func(in *session.Info) error {
		ids = append(ids, in.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}

var grepNeedles = []string{"login test", "ogi", "Login", "TestLogin", "handleLogin f", "café", "Café", "x\n", "->", ". the", "go test ./login", "zzz"}

func (w *searchWorld) check(stage string, st *Store) {
	w.t.Helper()
	for _, needle := range grepNeedles {
		for _, fold := range []bool{false, true} {
			if got, want := grepIDs(w.t, st, needle, fold), w.want(needle, fold); !slices.Equal(got, want) {
				w.t.Errorf("%s: --grep %q (fold %v) found %d sessions, a full read %d", stage, needle, fold, len(got), len(want))
			}
		}
	}
}

// TestIndexGrepExact checks that --grep answered from the index finds what
// a read of every message finds: before the index exists, from pending
// marks, after folds and merges, after a removal, and on a reader.
func TestIndexGrepExact(t *testing.T) {
	dir := t.TempDir()
	w := &searchWorld{t: t, st: open(t, dir, Write), r: rand.New(rand.NewPCG(7, 8)), nodes: map[string][]session.Node{}}
	var ids []string
	for i := range 60 {
		id := testID(uint32(i)*0x04000000+uint32(i), i)
		ids = append(ids, id)
		w.add(id, 1+w.r.IntN(6))
	}
	if s, _ := w.st.IndexStats(); s.Built {
		t.Fatal("the index was built by appends alone")
	}
	w.check("no index yet", w.st) // the writable handle builds it
	if s, _ := w.st.IndexStats(); !s.Built || s.Pending != 0 {
		t.Fatalf("after the first grep: %+v", s)
	}
	for range 30 {
		w.add(ids[w.r.IntN(len(ids))], 1+w.r.IntN(2))
	}
	if s, _ := w.st.IndexStats(); s.Pending == 0 {
		t.Fatal("appends left no pending mark")
	}
	w.check("pending marks", w.st)
	// Writers fold once a shard holds its share of the bound.
	for range foldBound {
		w.add(ids[w.r.IntN(len(ids))], 1)
	}
	if s, _ := w.st.IndexStats(); s.Pending >= foldBound/2 {
		t.Errorf("after %d more appends: %+v, no writer folded", foldBound, s)
	}
	w.check("writers' folds", w.st)
	for round := range 6 {
		for range 40 {
			w.add(ids[w.r.IntN(len(ids))], 1)
		}
		if err := w.st.foldIndex(true, mergeBytes); err != nil {
			t.Fatal(err)
		}
		_ = round
	}
	s, _ := w.st.IndexStats()
	if s.Segments >= 7 {
		t.Errorf("%d segments after 7 folds: merges did not run", s.Segments)
	}
	w.check("after folds", w.st)
	gone := ids[3]
	if err := w.st.DeleteSession(gone); err != nil {
		t.Fatal(err)
	}
	delete(w.nodes, gone)
	w.check("after a removal", w.st)
	mustClose(t, w.st)
	r := open(t, dir, Read)
	w.check("a reader", r)
	mustClose(t, r)
}

// TestIndexRebuiltOnVersion checks that an index of another version is
// not used, and is rebuilt by the first writable query.
func TestIndexRebuiltOnVersion(t *testing.T) {
	dir := t.TempDir()
	w := &searchWorld{t: t, st: open(t, dir, Write), r: rand.New(rand.NewPCG(9, 9)), nodes: map[string][]session.Node{}}
	for i := range 10 {
		w.add(testID(uint32(i)<<26, i), 3)
	}
	w.check("built", w.st)
	// A manifest of version 99, naming a segment that is not there.
	if err := w.st.eng.Update(func(txn kv.Txn) error { return txn.Set(manifestKey, []byte{99, 0, 1, 5, 1, 1, 1, 1, 1, 1, 1}) }); err != nil {
		t.Fatal(err)
	}
	mustClose(t, w.st)
	r := open(t, dir, Read)
	w.check("another version, on a reader", r)
	mustClose(t, r)
	w.st = open(t, dir, Write)
	w.check("another version, rebuilt", w.st)
	if s, _ := w.st.IndexStats(); !s.Built || s.Docs != 30 {
		t.Errorf("after the rebuild: %+v", s)
	}
	mustClose(t, w.st)
}

// TestSearch checks ranking, phrases, prefixes, the hit's seq and
// snippet, and that a removed session is not found.
func TestSearch(t *testing.T) {
	dir := t.TempDir()
	st := open(t, dir, Write)
	commit := func(id string, texts ...string) {
		var nodes []session.Node
		for i, text := range texts {
			var parent *session.Node
			if i > 0 {
				parent = &nodes[i-1]
			}
			nodes = append(nodes, session.Child(parent, uint64(i+1), userMsg(text)))
		}
		m := metaFor(id, nodes)
		if err := st.Commit(&m, nodes); err != nil {
			t.Fatal(err)
		}
	}
	a, b, c, d := testID(0x10000000, 1), testID(0x20000000, 2), testID(0x30000000, 3), testID(0x40000000, 4)
	commit(a, "nothing", "the login test failed once, in a long message about many other things entirely")
	commit(b, "login test login test", "unrelated")
	commit(c, "test the login", "logging out")
	commit(d, "login test")
	search := func(q string) []string {
		var out []string
		err := st.ListJSON(ListQuery{Search: q}, func(line []byte) error {
			var row struct {
				ID      string
				Seq     uint64
				Snippet string
				Score   float64
			}
			if err := json.Unmarshal(line, &row); err != nil {
				t.Fatal(err)
			}
			if row.Score <= 0 || row.Snippet == "" {
				t.Errorf("row %s", line)
			}
			out = append(out, row.ID[:1]+":"+strings.TrimLeft(string(rune('0'+row.Seq)), "")+":"+row.Snippet)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := search(`"login test"`)
	want := []string{"2:1:login test login test", "4:1:login test", "1:2:the login test failed once, in a long message about many other things entirely"}
	if !slices.Equal(got, want) {
		t.Errorf("phrase:\n got %q\nwant %q", got, want)
	}
	if got := search(`login test`); len(got) != 4 {
		t.Errorf("words: %q, want all four", got)
	}
	if got := search(`logg*`); !slices.Equal(got, []string{"3:2:logging out"}) {
		t.Errorf("prefix: %q", got)
	}
	if err := st.DeleteSession(b); err != nil {
		t.Fatal(err)
	}
	if err := st.foldIndex(true, mergeBytes); err != nil {
		t.Fatal(err)
	}
	if got := search(`"login test"`); len(got) != 2 || got[0][:1] != "4" {
		t.Errorf("after removing the best: %q", got)
	}
	if err := st.ListJSON(ListQuery{Search: `"open`}, func([]byte) error { return nil }); err == nil {
		t.Error("a bad query searched")
	}
	mustClose(t, st)
}
