package kvstore

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
	"github.com/wctoolkit/wc/pkg/session/store/etcdkv"
	"github.com/wctoolkit/wc/pkg/session/store/etcdkv/etcdtest"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/storetest"
)

// openOn opens the store on engine e (which it takes) for writing.
func openOn(t testing.TB, e kv.Engine, name string) *Store {
	t.Helper()
	s, err := Open(Options{Engine: e, Name: name, LockTimeout: 60 * time.Second}, Write)
	if err != nil {
		t.Fatalf("open on %s: %v", name, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// badgerEngine is a Badger engine of the test's own, opened as a shared
// engine would be: no directory lock, no maintenance.
func badgerEngine(t testing.TB) kv.Engine {
	t.Helper()
	e, err := badgerkv.Open(badgerkv.Config{Dir: filepath.Join(t.TempDir(), "db")})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// etcdCluster is a store prefix of the test's own on the shared test
// cluster: each etcdStore on it is a writer of its own (a machine).
type etcdCluster struct {
	cfg etcdkv.Config
}

func newEtcdCluster(t testing.TB) etcdCluster {
	t.Helper()
	endpoints := etcdtest.Endpoints(t)
	cfg := etcdtest.Config(t, endpoints)
	t.Cleanup(func() { etcdtest.Wipe(t, endpoints, cfg.Prefix) })
	return etcdCluster{cfg: cfg}
}

func (c etcdCluster) open(t testing.TB) *Store {
	t.Helper()
	e, err := etcdkv.Open(c.cfg)
	if err != nil {
		t.Fatalf("open %s: %v", c.cfg, err)
	}
	return openOn(t, e, c.cfg.String())
}

// unknownResults applies the first `left` Updates' commits and then answers
// kv.ErrUnknownResult, as when a commit's answer is lost.
type unknownResults struct {
	kv.Engine
	left    atomic.Int64
	applied atomic.Int64
}

func (u *unknownResults) Update(fn func(kv.Txn) error) error {
	err := u.Engine.Update(fn)
	if err == nil && u.left.Add(-1) >= 0 {
		u.applied.Add(1)
		return fmt.Errorf("injected: %w", kv.ErrUnknownResult)
	}
	return err
}

// appendChecked appends text at the head of id through the retry loop, as
// a command will: read, apply, commit, and again when the session changed.
func appendChecked(s Handle, id, text string) error {
	return RetryChanged(time.Now().Add(60*time.Second), func() error { return appendOne(s, id, text) })
}

// headTexts is the texts on the path to the head of id, root first.
func headTexts(t testing.TB, s Handle, id string) []string {
	t.Helper()
	m, err := s.Meta(id)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	if err := s.Path(id, m.Head, func(n *session.Node) error {
		texts = append(texts, n.Msg.Content.Text)
		return nil
	}); err != nil {
		t.Fatalf("path of %s: %v", id, err)
	}
	return texts
}

// checkSession fails t when session id's records disagree (checkSessionRange).
func checkSession(t testing.TB, s *Store, id string) {
	t.Helper()
	key, _ := parseID(id)
	if err := s.view(func(txn kv.Txn) error {
		if _, problems := checkSessionRange(txn, key); len(problems) > 0 {
			t.Errorf("session %s: %s", id, strings.Join(problems, "; "))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckListing(); err != nil {
		t.Errorf("listing: %v", err)
	}
}

// A commit whose answer was lost, run again, finds its token and is not
// applied twice: appends through the retry loop with every commit's
// answer lost leave each text once, in order, at dense seqs. So does a
// commit split over many transactions.
func TestUnknownResultAppliedOnce(t *testing.T) {
	u := &unknownResults{Engine: badgerEngine(t)}
	s := openOn(t, u, "faulty")
	id := testID(0x0c0ffee0, 1)
	nodes := chain(3, 10)
	m := metaFor(id, nodes)
	u.left.Store(1 << 30)
	if err := s.Commit(&m, nodes); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range nodes {
		want = append(want, n.Msg.Content.Text)
	}
	for i := range 20 {
		text := fmt.Sprintf("append %d", i)
		if err := appendChecked(s, id, text); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		want = append(want, text)
	}
	if got := headTexts(t, s, id); !slices.Equal(got, want) {
		t.Fatalf("path after lost answers:\n got %q\nwant %q", got, want)
	}
	if m, _ := s.Meta(id); m.NextSeq != uint64(len(want)+1) {
		t.Errorf("next_seq %d after %d nodes: an append was applied twice", m.NextSeq, len(want))
	}
	if u.applied.Load() < 21 {
		t.Fatalf("only %d answers were lost", u.applied.Load())
	}

	// A split commit: every transaction's answer lost, the nodes and the
	// metadata each applied once.
	big := testID(0x0c0ffee0, 2)
	long := chain(300, 8<<10)
	lm := metaFor(big, long)
	applied := u.applied.Load()
	if err := s.Commit(&lm, long); err != nil {
		t.Fatal(err)
	}
	if s.lastTxns.Load() < 2 {
		t.Fatalf("the commit of 300 nodes of 8 KiB took %d transaction(s)", s.lastTxns.Load())
	}
	if u.applied.Load()-applied < 2 {
		t.Fatal("no answer of the split commit was lost")
	}
	if got := headTexts(t, s, big); len(got) != len(long) {
		t.Fatalf("split commit: path of %d nodes, want %d", len(got), len(long))
	}
	checkSession(t, s, id)
	checkSession(t, s, big)
}

// Two writers that read the same metadata: the first commit lands, the
// second fails with ErrChanged (and busy's kind, for the commands' status)
// and writes nothing; read again, it lands.
func TestCommitOverChangedSession(t *testing.T) {
	s := openOn(t, badgerEngine(t), "changed")
	id := testID(0xc4a9, 1)
	nodes := chain(2, 10)
	m := metaFor(id, nodes)
	if err := s.Commit(&m, nodes); err != nil {
		t.Fatal(err)
	}
	a, _ := s.Meta(id)
	b, _ := s.Meta(id)
	if a.Revision == 0 || a.Revision != b.Revision {
		t.Fatalf("revisions %x and %x of one record", a.Revision, b.Revision)
	}
	grow := func(m *session.Meta, text string) []session.Node {
		parent, _ := s.Node(id, m.Head)
		n := session.Child(&parent, m.NextSeq, userMsg(text))
		m.Head, m.NextSeq = n.Seq, n.Seq+1
		return []session.Node{n}
	}
	if err := s.Commit(&a, grow(&a, "first")); err != nil {
		t.Fatal(err)
	}
	err := s.Commit(&b, grow(&b, "second"))
	if !errors.Is(err, ErrChanged) || !errors.Is(err, ErrBusy) || err.Error() != "session "+id+" changed since it was read" {
		t.Fatalf("commit over a changed session: %v", err)
	}
	if got := headTexts(t, s, id); !slices.Equal(got[2:], []string{"first"}) {
		t.Fatalf("path after the refused commit: %q", got)
	}
	// The writer's own commit moved its revision: it commits again.
	a.Title = "again"
	if err := s.Commit(&a, nil); err != nil {
		t.Fatalf("second commit of the same writer: %v", err)
	}
	if err := appendChecked(s, id, "second"); err != nil {
		t.Fatal(err)
	}
	if got := headTexts(t, s, id); !slices.Equal(got[2:], []string{"first", "second"}) {
		t.Fatalf("path after the retry: %q", got)
	}
	checkSession(t, s, id)
}

// RetryChanged gives up at its deadline with the changed error, and
// passes any other error through at once.
func TestRetryChangedDeadline(t *testing.T) {
	calls := 0
	changed := sessionChanged(sid{1})
	err := RetryChanged(time.Now().Add(50*time.Millisecond), func() error { calls++; return changed })
	if err != changed || calls < 2 {
		t.Fatalf("RetryChanged: %v after %d calls", err, calls)
	}
	other := errors.New("other")
	calls = 0
	if err := RetryChanged(time.Now().Add(time.Hour), func() error { calls++; return other }); err != other || calls != 1 {
		t.Fatalf("RetryChanged on another error: %v after %d calls", err, calls)
	}
}

// conflicting answers kv.ErrConflict to the first `left` Updates, as a
// shared engine does when another commit changed what they read.
type conflicting struct {
	kv.Engine
	left atomic.Int64
}

func (c *conflicting) Update(fn func(kv.Txn) error) error {
	if c.left.Add(-1) >= 0 {
		return fmt.Errorf("injected: %w", kv.ErrConflict)
	}
	return c.Engine.Update(fn)
}

// Conflicts are retried inside the store; past the lock timeout the
// operation is busy, with one line naming the store, and wrote nothing.
func TestConflictRetriedThenBusy(t *testing.T) {
	c := &conflicting{Engine: badgerEngine(t)}
	s, err := Open(Options{Engine: c, Name: "etcd://h:1/p", LockTimeout: 200 * time.Millisecond}, Write)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := testID(0xb0b0, 1)
	nodes := chain(1, 10)
	m := metaFor(id, nodes)
	c.left.Store(3)
	if err := s.Commit(&m, nodes); err != nil {
		t.Fatalf("commit through 3 conflicts: %v", err)
	}
	if s.Retries() != 3 {
		t.Errorf("%d retries, want 3", s.Retries())
	}
	c.left.Store(1 << 30)
	blob := []byte("x")
	err = s.PutBlob(id, sha256Of(blob), blob)
	if !errors.Is(err, ErrBusy) || !strings.HasPrefix(err.Error(), "store etcd://h:1/p is busy (injected: kv: transaction conflict; retried for 200ms)") {
		t.Fatalf("endless conflicts: %v", err)
	}
	c.left.Store(0)
	if _, err := s.Blob(id, sha256Of(blob)); !errors.Is(err, ErrNotFound) {
		t.Errorf("the busy write stored the blob: %v", err)
	}
}

func sha256Of(b []byte) [32]byte { return sha256.Sum256(b) }

// writerOpener opens the handle of one writer (a machine, a command) and
// gives the function that closes it.
type writerOpener func(t testing.TB, mode Mode) (Handle, func())

func etcdWriters(c etcdCluster) writerOpener {
	return func(t testing.TB, mode Mode) (Handle, func()) {
		s := c.open(t)
		return s, func() { s.Close() }
	}
}

// concurrentAppends runs writers×each appends to one session, each writer
// through its own handles and the retry loop, with two readers checking
// every path they read; then no acknowledged append is lost, none is
// there twice, and the seqs are dense. perOpen is how many appends a
// writer makes per handle.
func concurrentAppends(t *testing.T, open writerOpener, writers, each, perOpen int) {
	id := testID(0xc0c0a000, 1)
	h, done := open(t, Write)
	m := metaFor(id, nil)
	if err := h.Commit(&m, nil); err != nil {
		t.Fatal(err)
	}
	done()

	var wg sync.WaitGroup
	errs := make(chan error, writers+2)
	stop := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; {
				h, done := open(t, Write)
				for end := min(each, i+perOpen); i < end; i++ {
					if err := appendChecked(h, id, fmt.Sprintf("w%d-%d", w, i)); err != nil {
						done()
						errs <- fmt.Errorf("writer %d, append %d: %w", w, i, err)
						return
					}
				}
				done()
			}
		}()
	}
	var readers sync.WaitGroup
	var reads atomic.Int64
	for r := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				h, done := open(t, Read)
				m, err := h.Meta(id)
				n := uint64(0)
				if err == nil {
					err = h.Path(id, m.Head, func(nd *session.Node) error {
						if n++; nd.Seq != n {
							return fmt.Errorf("node %d at depth %d", nd.Seq, n)
						}
						return nil
					})
				}
				done()
				if err == nil && n != m.Head {
					err = fmt.Errorf("a path of %d nodes to head %d", n, m.Head)
				}
				if err != nil {
					errs <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
				reads.Add(1)
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	h, done = open(t, Read)
	defer done()
	texts := headTexts(t, h, id)
	seen := map[string]int{}
	for _, s := range texts {
		seen[s]++
	}
	for w := range writers {
		for i := range each {
			if k := fmt.Sprintf("w%d-%d", w, i); seen[k] != 1 {
				t.Errorf("append %s is on the path %d times", k, seen[k])
			}
		}
	}
	m, _ = h.Meta(id)
	if total := uint64(writers * each); len(texts) != int(total) || m.Head != total || m.NextSeq != total+1 {
		t.Errorf("%d nodes on the path, head %d, next_seq %d; want %d, dense", len(texts), m.Head, m.NextSeq, total)
	}
	if s, ok := h.(*Store); ok {
		checkSession(t, s, id)
	}
	t.Logf("%d appends, %d reads", writers*each, reads.Load())
}

// 8 writers × 200 appends to one session, on etcd, each its own
// connection, through the revision check and the retry loop.
func TestConcurrentAppendsEtcd(t *testing.T) {
	concurrentAppends(t, etcdWriters(newEtcdCluster(t)), 8, 200, 200)
}

// The same on a directory, through its lock: nothing changes there.
func TestConcurrentAppendsBadger(t *testing.T) {
	dir := t.TempDir()
	concurrentAppends(t, func(t testing.TB, mode Mode) (Handle, func()) {
		s, err := Open(Options{Dir: dir, LockTimeout: 120 * time.Second}, mode)
		if err != nil {
			t.Fatal(err)
		}
		return s, func() { s.Close() }
	}, 8, 200, 20)
}

// Two writers on many sessions, each appending to every session in its
// own order: every session has every append once.
func TestTwoWritersManySessionsEtcd(t *testing.T) {
	c := newEtcdCluster(t)
	const sessions, each = 40, 4
	ids := make([]string, sessions)
	h := c.open(t)
	for i := range ids {
		ids[i] = testID(0x5e550000+uint32(i)<<8, i)
		m := metaFor(ids[i], nil)
		if err := h.Commit(&m, nil); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := c.open(t)
			for i := range each {
				for k := range sessions {
					id := ids[(k+i*7+w*13)%sessions] // a permutation of the sessions for each i
					if err := appendChecked(s, id, fmt.Sprintf("w%d-%d-%s", w, i, id[:8])); err != nil {
						t.Errorf("writer %d: %v", w, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		texts := headTexts(t, h, id)
		slices.Sort(texts)
		var want []string
		for w := range 2 {
			for i := range each {
				want = append(want, fmt.Sprintf("w%d-%d-%s", w, i, id[:8]))
			}
		}
		slices.Sort(want)
		if !slices.Equal(texts, want) {
			t.Errorf("session %s: %q, want %q", id, texts, want)
		}
	}
	checkSession(t, h, ids[0])
}

// extend is nodes appended at m's head carrying texts, with m moved to
// the last of them; parent is m's head node.
func extend(m *session.Meta, parent *session.Node, texts []string) []session.Node {
	nodes := make([]session.Node, len(texts))
	for i, text := range texts {
		nodes[i] = session.Child(parent, m.NextSeq+uint64(i), userMsg(text))
		parent = &nodes[i]
	}
	last := nodes[len(nodes)-1]
	m.Head, m.NextSeq = last.Seq, last.Seq+1
	m.MessageCount, m.UserMessageCount, m.Tokens = last.Depth, last.Users, last.Tokens
	return nodes
}

// A rewrite of a whole path (as a compaction does: new nodes at new seqs,
// the head moved), too big for one transaction, racing appends: each
// rewrite lands whole or fails with ErrChanged, and no acknowledged
// append, nor any message of the path, is lost or doubled.
func TestRewriteRacingAppendsEtcd(t *testing.T) {
	c := newEtcdCluster(t)
	id := testID(0x4e3e0000, 1)
	base := chain(30, 48<<10) // 1.4 MiB: a rewrite takes several transactions
	m := metaFor(id, base)
	w := c.open(t)
	if err := w.Commit(&m, base); err != nil {
		t.Fatal(err)
	}
	var wg, appending sync.WaitGroup
	var landed, changed atomic.Int64
	const appenders, each = 2, 15
	for a := range appenders {
		appending.Add(1)
		go func() {
			defer appending.Done()
			s := c.open(t)
			for i := range each {
				if err := appendChecked(s, id, fmt.Sprintf("a%d-%d", a, i)); err != nil {
					t.Errorf("appender %d: %v", a, err)
					return
				}
			}
		}()
	}
	quiet := make(chan struct{})
	go func() { appending.Wait(); close(quiet) }()
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := c.open(t)
		// Rewrites while the appends go on, then one over a quiet session.
		for last := false; !last; {
			select {
			case <-quiet:
				last = true
			default:
			}
			m, err := s.Meta(id)
			if err != nil {
				t.Error(err)
				return
			}
			var texts []string
			if err := s.Path(id, m.Head, func(n *session.Node) error {
				texts = append(texts, n.Msg.Content.Text)
				return nil
			}); err != nil {
				t.Error(err)
				return
			}
			err = s.Commit(&m, extend(&m, nil, texts))
			switch {
			case err == nil:
				landed.Add(1)
			case errors.Is(err, ErrChanged):
				changed.Add(1)
			default:
				t.Errorf("rewrite: %v", err)
				return
			}
		}
	}()
	wg.Wait()
	if landed.Load() == 0 {
		t.Error("no rewrite landed, not even over the quiet session")
	}
	texts := headTexts(t, w, id)
	seen := map[string]int{}
	for _, s := range texts {
		seen[s]++
	}
	for _, n := range base {
		if k := n.Msg.Content.Text; seen[k] != 1 {
			t.Errorf("message %.8s… is on the path %d times", k, seen[k])
		}
	}
	for a := range appenders {
		for i := range each {
			if k := fmt.Sprintf("a%d-%d", a, i); seen[k] != 1 {
				t.Errorf("append %s is on the path %d times", k, seen[k])
			}
		}
	}
	if len(texts) != len(base)+appenders*each {
		t.Errorf("%d messages on the path, want %d", len(texts), len(base)+appenders*each)
	}
	checkSession(t, w, id)
	t.Logf("rewrites: %d landed, %d changed", landed.Load(), changed.Load())
}

// Two writers committing at once, at the same next seq, commits too big
// for one transaction: the path holds whole commits only, each once, and
// every commit that said it landed is there.
func TestSplitCommitsRacingEtcd(t *testing.T) {
	c := newEtcdCluster(t)
	id := testID(0x5b117000, 1)
	root := chain(1, 10)
	m := metaFor(id, root)
	w := c.open(t)
	if err := w.Commit(&m, root); err != nil {
		t.Fatal(err)
	}
	const writers, rounds, size = 2, 4, 40
	pad := strings.Repeat("y", 40<<10) // 1.6 MiB a commit
	var wg sync.WaitGroup
	var mu sync.Mutex
	landed := map[string]bool{}
	for wr := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := c.open(t)
			for r := range rounds {
				tag := fmt.Sprintf("w%d-r%d", wr, r)
				err := RetryChanged(time.Now().Add(time.Minute), func() error {
					m, err := s.Meta(id)
					if err != nil {
						return err
					}
					head, err := s.Node(id, m.Head)
					if err != nil {
						return err
					}
					texts := make([]string, size)
					for i := range texts {
						texts[i] = fmt.Sprintf("%s-%02d %s", tag, i, pad)
					}
					return s.Commit(&m, extend(&m, &head, texts))
				})
				if err != nil {
					t.Errorf("%s: %v", tag, err)
					return
				}
				mu.Lock()
				landed[tag] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	texts := headTexts(t, w, id)[1:]
	found := map[string]bool{}
	for len(texts) > 0 {
		tag, _, _ := strings.Cut(texts[0], "-0")
		if len(texts) < size {
			t.Fatalf("a commit of %s cut short: %d nodes", tag, len(texts))
		}
		for i := range size {
			if want := fmt.Sprintf("%s-%02d %s", tag, i, pad); texts[i] != want {
				t.Fatalf("commit %s: node %d is %.12s…", tag, i, texts[i])
			}
		}
		if found[tag] {
			t.Errorf("commit %s is on the path twice", tag)
		}
		found[tag] = true
		texts = texts[size:]
	}
	for tag := range landed {
		if !found[tag] {
			t.Errorf("commit %s landed but is not on the path", tag)
		}
	}
	if len(found) != writers*rounds {
		t.Errorf("%d commits on the path, want %d", len(found), writers*rounds)
	}
	checkSession(t, w, id)
}

// chunkCount is how many pieces of large nodes session id keeps.
func chunkCount(t testing.TB, s *Store, id string) int {
	t.Helper()
	key, _ := parseID(id)
	n := 0
	if err := s.view(func(txn kv.Txn) error {
		it := txn.Iterate(kv.IterOptions{Prefix: chunkPrefix(key), KeysOnly: true})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// A 32 MiB message, 32 times etcd's largest value, is stored in pieces
// written ahead of the record naming them, and reads back whole through
// every read; once no path reaches it, Collect deletes its pieces with it.
func TestLargeMessageEtcd(t *testing.T) {
	c := newEtcdCluster(t)
	w := c.open(t)
	id := testID(0x1a26e000, 1)
	var text strings.Builder
	for i := 0; text.Len() < 32<<20-4096; i++ {
		fmt.Fprintf(&text, "line %d of a very long tool output\n", i)
	}
	root := session.Child(nil, 1, userMsg("root"))
	big := session.Child(&root, 2, userMsg(text.String()))
	nodes := []session.Node{root, big}
	m := metaFor(id, nodes)
	if err := w.Commit(&m, nodes); err != nil {
		t.Fatal(err)
	}
	if n := chunkCount(t, w, id); n < 32 {
		t.Fatalf("%d pieces for a 32 MiB message", n)
	}
	r := c.open(t)
	got, err := r.Node(id, 2)
	if err != nil || got.Msg.Content.Text != big.Msg.Content.Text {
		t.Fatalf("node 2 read back: %d bytes, %v", len(got.Msg.Content.Text), err)
	}
	if texts := headTexts(t, r, id); len(texts) != 2 || texts[1] != big.Msg.Content.Text {
		t.Fatalf("path read back: %d nodes", len(texts))
	}
	raw := 0
	if err := r.Nodes(id, func(seq uint64, v []byte) error { raw += len(v); return nil }); err != nil || raw < 32<<20-4096 {
		t.Fatalf("Nodes: %d bytes, %v", raw, err)
	}
	checkSession(t, r, id)

	// Node 2 left behind: collected, and its pieces with it.
	m, _ = w.Meta(id)
	fork := session.Child(&root, 3, userMsg("fork"))
	m.Head, m.NextSeq = 3, 4
	m.MessageCount, m.UserMessageCount, m.Tokens = fork.Depth, fork.Users, fork.Tokens
	if err := w.Commit(&m, []session.Node{fork}); err != nil {
		t.Fatal(err)
	}
	freed, err := w.Collect(&m, false)
	if err != nil || freed.Nodes != 1 {
		t.Fatalf("collect: %+v, %v", freed, err)
	}
	if n := chunkCount(t, w, id); n != 0 {
		t.Errorf("%d pieces left after collecting the node", n)
	}
	checkSession(t, w, id)
}

// Collect over a session changed since its metadata was read fails with
// ErrChanged and deletes nothing.
func TestCollectOverChangedSession(t *testing.T) {
	s := openOn(t, badgerEngine(t), "collect")
	id := testID(0xc011, 1)
	nodes := chain(3, 10)
	m := metaFor(id, nodes)
	if err := s.Commit(&m, nodes); err != nil {
		t.Fatal(err)
	}
	stale, _ := s.Meta(id)
	stale.Head = 1 // would collect 2 and 3
	if err := appendChecked(s, id, "more"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Collect(&stale, false); !errors.Is(err, ErrChanged) {
		t.Fatalf("collect over a changed session: %v", err)
	}
	if got := headTexts(t, s, id); len(got) != 4 {
		t.Fatalf("path after the refused collect: %q", got)
	}
}

// A blob larger than etcd's values is stored in pieces and reads back
// whole; once no node names it, Collect deletes it and its pieces.
func TestLargeBlobEtcd(t *testing.T) {
	c := newEtcdCluster(t)
	w := c.open(t)
	id := testID(0x1a26eb0b, 1)
	data := []byte(strings.Repeat("spilled output of a tool\n", 200_000)) // 5 MB
	sum := sha256.Sum256(data)
	root := session.Child(nil, 1, userMsg("see "+session.BlobRefPrefix+fmt.Sprintf("%x", sum)))
	m := metaFor(id, []session.Node{root})
	if err := w.Commit(&m, []session.Node{root}); err != nil {
		t.Fatal(err)
	}
	if err := w.PutBlob(id, sum, data); err != nil {
		t.Fatal(err)
	}
	r := c.open(t)
	if got, err := r.Blob(id, sum); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("blob read back: %d bytes, %v", len(got), err)
	}
	checkSession(t, r, id)
	if freed, err := w.Collect(&m, false); err != nil || freed.Blobs != 0 {
		t.Fatalf("collect of a session whose node names the blob: %+v, %v", freed, err)
	}
	if _, err := r.Blob(id, sum); err != nil {
		t.Fatalf("the named blob was collected: %v", err)
	}
	// Rewritten without the reference: the blob goes, its pieces with it.
	m, _ = w.Meta(id)
	other := session.Child(nil, 2, userMsg("no blob"))
	m.Head, m.NextSeq = 2, 3
	m.MessageCount, m.UserMessageCount, m.Tokens = other.Depth, other.Users, other.Tokens
	if err := w.Commit(&m, []session.Node{other}); err != nil {
		t.Fatal(err)
	}
	if freed, err := w.Collect(&m, false); err != nil || freed.Blobs != 1 {
		t.Fatalf("collect: %+v, %v", freed, err)
	}
	if _, err := r.Blob(id, sum); !errors.Is(err, ErrNotFound) {
		t.Errorf("collected blob: %v", err)
	}
	if n := chunkCount(t, w, id); n != 0 {
		t.Errorf("%d pieces left after collecting the blob", n)
	}
	checkSession(t, w, id)
}

// A removal whose answer was lost, run again, finds the session gone and
// reports it removed.
func TestDeleteUnknownResult(t *testing.T) {
	u := &unknownResults{Engine: badgerEngine(t)}
	s := openOn(t, u, "faulty")
	id := testID(0xde1e, 1)
	nodes := chain(2, 10)
	m := metaFor(id, nodes)
	if err := s.Commit(&m, nodes); err != nil {
		t.Fatal(err)
	}
	u.left.Store(1)
	if err := s.DeleteSession(id); err != nil {
		t.Fatalf("delete with its answer lost: %v", err)
	}
	if _, err := s.Meta(id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after the delete: %v", err)
	}
	if err := s.DeleteSession(id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

// errUnavailableTest is an engine's error worth waiting out (as etcdkv's
// ErrUnavailable tells itself).
type errUnavailableTest struct{}

func (errUnavailableTest) Error() string     { return "injected: no leader" }
func (errUnavailableTest) Unavailable() bool { return true }

// unavailableViews fails the first `before` Views before they read, and
// the next `after` ones once their fn has read.
type unavailableViews struct {
	kv.Engine
	before, after atomic.Int64
}

func (u *unavailableViews) View(fn func(kv.Txn) error) error {
	if u.before.Add(-1) >= 0 {
		return errUnavailableTest{}
	}
	err := u.Engine.View(fn)
	if err == nil && u.after.Add(-1) >= 0 {
		return errUnavailableTest{}
	}
	return err
}

// A read the engine could not start is run again; one that failed after
// it read (its callbacks may have seen records) is not, and fails.
func TestUnavailableReadRetried(t *testing.T) {
	u := &unavailableViews{Engine: badgerEngine(t)}
	s := openOn(t, u, "unavailable")
	id := testID(0x0a0a, 1)
	nodes := chain(3, 10)
	m := metaFor(id, nodes)
	if err := s.Commit(&m, nodes); err != nil {
		t.Fatal(err)
	}
	before := s.Retries()
	u.before.Store(2)
	if _, err := s.Meta(id); err != nil {
		t.Fatalf("meta through an unavailable engine: %v", err)
	}
	if s.Retries()-before != 2 {
		t.Errorf("%d retries, want 2", s.Retries()-before)
	}
	u.after.Store(1)
	calls := 0
	err := s.Nodes(id, func(uint64, []byte) error { calls++; return nil })
	if err == nil || calls != 3 {
		t.Fatalf("a read that failed after reading: %v after %d nodes, want an error after 3", err, calls)
	}
}

// The contract of store.Handle holds on the shared path too, over a
// Badger engine opened without its directory (so it runs where etcd does
// not): revisions, tokens and guards change nothing a caller sees.
func TestContractShared(t *testing.T) {
	storetest.Run(t, storetest.Target{Open: func(t *testing.T, dir string, mode store.Mode) store.Handle {
		e, err := badgerkv.Open(badgerkv.Config{Dir: filepath.Join(dir, "db")})
		if err != nil {
			t.Fatal(err)
		}
		s, err := Open(Options{Engine: e, Name: dir, LockTimeout: 10 * time.Second}, mode)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}})
}

// Purge on a shared engine deletes what removals and interrupted commits
// left, but not the nodes a commit under way (its guard there) is writing.
func TestPurgeShared(t *testing.T) {
	s := openOn(t, badgerEngine(t), "purge")
	a, b, c := testID(0x9a11, 1), testID(0x9b22, 2), testID(0x9c33, 3)
	nodes := chain(2, 10)
	m := metaFor(a, nodes)
	if err := s.Commit(&m, nodes); err != nil {
		t.Fatal(err)
	}
	ka, _ := parseID(a)
	kb, _ := parseID(b)
	kc, _ := parseID(c)
	leftovers := map[string]bool{string(nodeKey(ka, 3)): false, string(nodeKey(kb, 1)): false, string(nodeKey(kc, 1)): true, string(guardKey(kc)): true}
	if err := s.eng.Update(func(txn kv.Txn) error {
		for k := range leftovers {
			if err := txn.Set([]byte(k), []byte(`{"parent":0,"n":1,"tok":1,"users":1,"msg":{}}`)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(); err != nil {
		t.Fatal(err)
	}
	if err := s.view(func(txn kv.Txn) error {
		for k, kept := range leftovers {
			_, err := txn.Get([]byte(k))
			if gone := errors.Is(err, kv.ErrNotFound); gone == kept {
				t.Errorf("key %x: kept %v after the purge, want %v", k, !gone, kept)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := headTexts(t, s, a); len(got) != 2 {
		t.Fatalf("session after the purge: %q", got)
	}
}
