package kvstore

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
	"github.com/wctoolkit/wc/pkg/session/store/wire"
)

// serve runs a resident store process in this test process and returns a
// channel that yields Serve's result when it stops.
func serve(t testing.TB, dir string, idle time.Duration) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- Serve(Options{Dir: dir}, served(ServeConfig{Idle: idle})) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := dialStore(Options{Dir: dir, LockTimeout: time.Second}, Read); err == nil {
			c.Close()
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the server stopped at once: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the server never answered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Cleanup(func() {
		if _, err := remote.Shutdown(dir, 10*time.Second); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return done
}

func dial(t *testing.T, dir string, mode Mode) *remote.Client {
	t.Helper()
	c, err := dialStore(Options{Dir: dir, LockTimeout: 5 * time.Second}, mode)
	if err != nil {
		t.Fatalf("dial %v: %v", mode, err)
	}
	return c
}

// Everything a command does through a *Store works the same through the
// resident process, errors included.
func TestResidentRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	serve(t, dir, time.Minute)
	id := testID(0xabcdef01, 1)
	nodes := chain(600, 200) // more than two stream chunks
	w := dial(t, dir, Write)
	m := metaFor(id, nodes)
	if err := w.Commit(&m, nodes); err != nil {
		t.Fatal(err)
	}
	if err := appendOne(w, id, "one more"); err != nil {
		t.Fatal(err)
	}
	sum := [32]byte{1}
	if err := w.PutBlob(id, sum, []byte("x")); err == nil {
		t.Error("a blob under the wrong sum was stored")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	r := dial(t, dir, Read)
	defer r.Close()
	if got, err := r.Resolve("abcdef"); err != nil || got != id {
		t.Errorf("resolve: %q, %v", got, err)
	}
	got, err := r.Meta(id)
	if err != nil || got.Head != 601 || got.MessageCount != 601 {
		t.Fatalf("meta: %+v, %v", got, err)
	}
	n, err := r.Node(id, 300)
	if err != nil || n.Msg.Content.Text != nodes[299].Msg.Content.Text || n.Parent != 299 {
		t.Errorf("node 300: %+v, %v", n, err)
	}
	var path []uint64
	if err := r.Path(id, 601, func(n *session.Node) error { path = append(path, n.Seq); return nil }); err != nil || len(path) != 601 || path[600] != 601 {
		t.Errorf("path: %d nodes, %v", len(path), err)
	}
	// A walk stopped early leaves the connection usable.
	var walked []uint64
	if err := r.Walk(id, 601, 0, func(n *session.Node) bool { walked = append(walked, n.Seq); return len(walked) < 300 }); err != nil {
		t.Fatal(err)
	}
	if len(walked) != 300 || walked[0] != 601 || walked[299] != 302 {
		t.Errorf("walk: %d nodes from %d", len(walked), walked[0])
	}
	stop := errors.New("enough")
	count := 0
	if err := r.Nodes(id, func(uint64, []byte) error { count++; return map[bool]error{true: stop}[count == 400] }); !errors.Is(err, stop) || count != 400 {
		t.Errorf("nodes: %d, %v", count, err)
	}
	var ids []string
	if err := r.ListInfo(ListQuery{}, func(i *session.Info) error { ids = append(ids, i.ID); return nil }); err != nil || !reflect.DeepEqual(ids, []string{id}) {
		t.Errorf("list: %v, %v", ids, err)
	}
	// Errors keep their kind and text.
	if _, err := r.Meta(testID(1, 1)); !errors.Is(err, ErrNotFound) || err.Error() != "session "+testID(1, 1)+" not found" {
		t.Errorf("meta of nothing: %v", err)
	}
	var ref *RefError
	if _, err := r.Resolve("zz"); !errors.As(err, &ref) || ref.Ref != "zz" {
		t.Errorf("bad ref: %v", err)
	}
	if err := r.Commit(&got, nil); err == nil || !strings.Contains(err.Error(), "opened for reading") {
		t.Errorf("a reader committed: %v", err)
	}
}

// The resident process keeps the lock discipline of Dir/lock: one writer,
// many readers, a bounded wait, and a lock freed when a client vanishes.
func TestResidentLocking(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	serve(t, dir, time.Minute)
	conn, err := remote.DialSocket(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Attach(conn, remote.Ask{Mode: Write, LockTimeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := dialStore(Options{Dir: dir, LockTimeout: 100 * time.Millisecond}, Write); !errors.Is(err, ErrBusy) ||
		!strings.HasSuffix(err.Error(), "is busy (timed out waiting for the other commands its store process serves)") {
		t.Fatalf("second writer: %v", err)
	}
	if _, err := dialStore(Options{Dir: dir, LockTimeout: 100 * time.Millisecond}, Read); !errors.Is(err, ErrBusy) {
		t.Fatalf("reader beside a writer: %v", err)
	}
	// A client that dies without ending its session frees the lock.
	conn.Close()
	r1 := dial(t, dir, Read)
	r2 := dial(t, dir, Read) // readers share
	waiting := make(chan error, 1)
	go func() {
		c, err := dialStore(Options{Dir: dir, LockTimeout: 10 * time.Second}, Write)
		if err == nil {
			err = c.Close()
		}
		waiting <- err
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-waiting:
		t.Fatalf("a writer got in beside readers: %v", err)
	default:
	}
	r1.Close()
	r2.Close()
	if err := <-waiting; err != nil {
		t.Fatalf("the writer never got in: %v", err)
	}
}

// A second server finds the store taken; the first stops when idle and
// leaves a store that a command can open directly.
func TestResidentLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	done := serve(t, dir, 300*time.Millisecond)
	if err := Serve(Options{Dir: dir}, served(ServeConfig{Idle: time.Second})); !errors.Is(err, ErrBusy) {
		t.Errorf("second server: %v", err)
	}
	id := testID(0x12345678, 2)
	w := dial(t, dir, Write)
	m := metaFor(id, nil)
	if err := w.Commit(&m, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the idle server did not stop")
	}
	if _, err := os.Stat(remote.SocketPath(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind: %v", err)
	}
	s, err := Open(Options{Dir: dir}, Write)
	if err != nil {
		t.Fatalf("direct open after the server: %v", err)
	}
	defer mustClose(t, s)
	if _, err := s.Meta(id); err != nil {
		t.Errorf("the session written through the server: %v", err)
	}
}

// TestResidentKilledMidCommit kills the resident store process with SIGKILL
// at random moments while clients append, round after round. Every append
// a client saw acknowledged (committed and synced: what a command prints)
// must survive, in order, and every session must stay consistent.
func TestResidentKilledMidCommit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	ids := []string{testID(0xa0000001, 1), testID(0xa0000002, 2), testID(0xa0000003, 3)}
	create(t, dir, map[string][]session.Node{ids[0]: nil, ids[1]: nil, ids[2]: nil})
	acked := map[string][]string{}
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(7, 11))
	rounds := 8
	if testing.Short() {
		rounds = 3
	}
	for round := 0; round < rounds; round++ {
		srv := childCmd("serve", dir)
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			c, err := dialStore(Options{Dir: dir, LockTimeout: time.Second}, Read)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				srv.Process.Kill()
				t.Fatalf("round %d: the server never answered: %v", round, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
		var wg sync.WaitGroup
		for w, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					c, err := dialStore(Options{Dir: dir, LockTimeout: 5 * time.Second}, Write)
					if err != nil {
						return // the server is gone
					}
					text := fmt.Sprintf("r%d-w%d-%d", round, w, i)
					if err := appendOne(c, id, text); err != nil {
						c.Close()
						return
					}
					if err := c.Close(); err != nil {
						return // not acknowledged
					}
					mu.Lock()
					acked[id] = append(acked[id], text)
					mu.Unlock()
				}
			}()
		}
		time.Sleep(time.Duration(20+rng.IntN(150)) * time.Millisecond) // lands the kill somewhere; nothing is timed
		srv.Process.Signal(syscall.SIGKILL)
		srv.Wait()
		wg.Wait()
	}
	s := open(t, dir, Read) // after a crash: the reader falls back to a read-write open
	defer mustClose(t, s)
	total := 0
	for _, id := range ids {
		m, err := s.Meta(id)
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		var tokens, users uint64
		if err := s.Path(id, m.Head, func(n *session.Node) error {
			texts = append(texts, n.Msg.Content.Text)
			tokens += session.MessageTokens(&n.Msg)
			users++
			return nil
		}); err != nil {
			t.Fatalf("%s: path: %v", id, err)
		}
		if uint64(len(texts)) != m.MessageCount || tokens != m.Tokens || users != m.UserMessageCount {
			t.Errorf("%s: counts %d/%d/%d, recount %d/%d/%d", id, m.MessageCount, m.Tokens, m.UserMessageCount, len(texts), tokens, users)
		}
		// Acknowledged appends are a subsequence of the path: an append in
		// flight at a kill may or may not be there, the acknowledged ones are.
		j := 0
		for _, text := range texts {
			if j < len(acked[id]) && text == acked[id][j] {
				j++
			}
		}
		if j != len(acked[id]) {
			t.Errorf("%s: acknowledged append %q is missing (%d of %d found)", id, acked[id][j], j, len(acked[id]))
		}
		total += len(acked[id])
	}
	if total == 0 {
		t.Fatal("no append was acknowledged: the test showed nothing")
	}
	t.Logf("%d rounds, %d acknowledged appends, all present", rounds, total)
}

// A resident process whose program was replaced, or that a client of
// another protocol reaches, serves no new client: the client is told to
// start its own, and the process stops once its clients are done.
func TestResidentMakesWay(t *testing.T) {
	for _, why := range []string{"stale", "protocol"} {
		t.Run(why, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			var stale atomic.Bool
			done := make(chan error, 1)
			ready := make(chan struct{})
			go func() {
				done <- Serve(Options{Dir: dir}, served(ServeConfig{Idle: time.Minute, Ready: func() { close(ready) }, Stale: stale.Load}))
			}()
			<-ready
			busy := dial(t, dir, Read) // a client being served when it happens
			switch why {
			case "stale":
				stale.Store(true)
				if _, err := dialStore(Options{Dir: dir, LockTimeout: time.Second}, Read); !errors.Is(err, remote.ErrNoServer) {
					t.Fatalf("a stale process took a client: %v", err)
				}
			case "protocol":
				conn, err := remote.DialSocket(dir)
				if err != nil {
					t.Fatal(err)
				}
				wc := wire.NewConn(conn)
				var welcome wire.Welcome
				if err := wc.Send(&wire.Hello{Proto: wire.ProtocolVersion + 1, Op: "begin", Build: "another build"}); err == nil {
					err = wc.Recv(&welcome)
				}
				conn.Close()
				if welcome.Err == nil || welcome.Err.Kind != "stale" {
					t.Fatalf("a client of another protocol was answered %+v", welcome)
				}
			}
			if _, err := busy.Meta(testID(1, 1)); !errors.Is(err, ErrNotFound) {
				t.Errorf("the client being served lost its connection: %v", err)
			}
			select {
			case err := <-done:
				t.Fatalf("the process stopped under its client: %v", err)
			case <-time.After(50 * time.Millisecond):
			}
			busy.Close()
			if err := <-done; err != nil {
				t.Fatalf("serve: %v", err)
			}
		})
	}
}

// A resident process started while another process holds the store's
// lock waits for it, unless a resident process already answers; one
// started while a command that opens the store itself waits for it or
// holds it (the turnstile) leaves the store to that command at once.
func TestResidentWaitsForTheStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	direct := open(t, dir, Write)
	if err := Serve(Options{Dir: dir}, served(ServeConfig{Idle: time.Minute, Wait: time.Hour})); !errors.Is(err, ErrBusy) {
		t.Errorf("a resident process beside a command that opened the store itself: %v", err)
	}
	mustClose(t, direct)
	held, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		done <- Serve(Options{Dir: dir}, served(ServeConfig{Idle: time.Minute, Wait: time.Minute, Ready: func() { close(ready) }}))
	}()
	select {
	case <-ready:
		t.Fatal("served a store another process holds")
	case err := <-done:
		t.Fatalf("gave up on a held store: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	held.Close()
	<-ready
	if err := Serve(Options{Dir: dir}, served(ServeConfig{Idle: time.Minute, Wait: time.Hour})); !errors.Is(err, ErrBusy) {
		t.Errorf("a second process beside an answering one: %v", err)
	}
	if _, err := remote.Shutdown(dir, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// What a client wrote is synced before Close returns, once per command
// where possible: the first commit before it is answered (no round trip at
// Close), later writes together at Close.
func TestResidentSyncs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	serve(t, dir, time.Minute)
	ids := []string{testID(0x51, 1), testID(0x52, 2), testID(0x53, 3)}
	cases := []struct {
		name  string
		write func(c *remote.Client) error
		want  int64
	}{
		{"one commit", func(c *remote.Client) error { m := metaFor(ids[0], nil); return c.Commit(&m, nil) }, 1},
		{"three commits", func(c *remote.Client) error {
			for _, id := range ids {
				m := metaFor(id, nil)
				if err := c.Commit(&m, nil); err != nil {
					return err
				}
			}
			return nil
		}, 2},
		{"a blob, then a commit", func(c *remote.Client) error {
			data := []byte("spilled")
			if err := c.PutBlob(ids[0], sha256.Sum256(data), data); err != nil {
				return err
			}
			m := metaFor(ids[0], nil)
			return c.Commit(&m, nil)
		}, 1},
		{"a commit, then a blob", func(c *remote.Client) error {
			m := metaFor(ids[1], nil)
			if err := c.Commit(&m, nil); err != nil {
				return err
			}
			data := []byte("later")
			return c.PutBlob(ids[1], sha256.Sum256(data), data)
		}, 2},
		{"reads only", func(c *remote.Client) error { _, err := c.Meta(ids[0]); return err }, 0},
	}
	for _, tc := range cases {
		before := residentSyncs.Load()
		c := dial(t, dir, Write)
		if err := tc.write(c); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("%s: close: %v", tc.name, err)
		}
		if got := residentSyncs.Load() - before; got != tc.want {
			t.Errorf("%s: %d syncs, want %d", tc.name, got, tc.want)
		}
	}
}

// A resident process reaches its store through the directory's descriptor;
// the rebuild that closing a store with too many tables does (renames
// inside the directory) works that way too, and leaves the store at its
// path.
func TestResidentRebuildsOnClose(t *testing.T) {
	old := RebuildThreshold
	defer func() { RebuildThreshold = old }()
	RebuildThreshold = 0
	dir := filepath.Join(t.TempDir(), "store")
	const sessions = 30
	for i := range sessions { // one table each
		create(t, dir, map[string][]session.Node{testID(uint32(i), i): chain(3, 200)})
	}
	RebuildThreshold = 10
	done := serve(t, dir, time.Minute)
	w := dial(t, dir, Write)
	if err := appendOne(w, testID(0, 0), "through the resident process"); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Shutdown(dir, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	for _, p := range []string{"db.new", "db.old"} {
		if exists(filepath.Join(dir, p)) {
			t.Errorf("%s left behind", p)
		}
	}
	r := open(t, dir, Read)
	defer mustClose(t, r)
	if total, _ := r.Tables(); total > 10 {
		t.Errorf("%d tables: the close did not rebuild", total)
	}
	n := 0
	if err := r.List(func(*session.Meta) error { n++; return nil }); err != nil || n != sessions {
		t.Errorf("%d sessions after the rebuild (%v), want %d", n, err, sessions)
	}
	m, err := r.Meta(testID(0, 0))
	if err != nil || m.MessageCount != 4 {
		t.Errorf("the session written through the process: %+v, %v", m, err)
	}
}

// The references given to Dial are answered with the welcome, as a
// resolve request would answer them, errors included, and resolving them
// then costs no request; each answer is used once.
func TestResidentResolvesWithHello(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	serve(t, dir, time.Minute)
	a, b := testID(0xabcdef01, 1), testID(0xabcdef02, 2)
	w := dial(t, dir, Write)
	for _, id := range []string{a, b} {
		nodes := chain(3, 10)
		m := metaFor(id, nodes)
		if err := w.Commit(&m, nodes); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	refs := []string{"abcdef01", "zz", "abcdef0", "ffffffff", b}
	plain := dial(t, dir, Read)
	want := map[string]string{}
	for _, ref := range refs {
		id, err := plain.Resolve(ref)
		want[ref] = fmt.Sprint(id, err)
	}
	plain.Close()

	c, err := dialStore(Options{Dir: dir, LockTimeout: 5 * time.Second}, Read, refs...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := residentRequests.Load()
	for _, ref := range refs {
		id, err := c.Resolve(ref)
		if got := fmt.Sprint(id, err); got != want[ref] {
			t.Errorf("resolve %q with the hello: %s, want %s", ref, got, want[ref])
		}
	}
	if m, err := c.Meta(a); err != nil || m.ID != a || m.Head != 3 {
		t.Errorf("meta: %+v, %v", m, err)
	}
	if n := residentRequests.Load() - before; n != 0 {
		t.Errorf("%d requests after a hello that resolved everything", n)
	}
	if id, err := c.Resolve("abcdef01"); err != nil || id != a || residentRequests.Load() == before {
		t.Errorf("resolving again: %q, %v, asked the server: %v", id, err, residentRequests.Load() != before)
	}
}

// A command that may not wait (--lock-timeout 0) does not find the store
// busy because of the command before it, whose lock the server releases a
// moment after that command has gone.
func TestResidentLockFreedForTheNextCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	serve(t, dir, time.Minute)
	busy := 0
	for range 200 {
		r := dial(t, dir, Read)
		if err := r.ListInfo(ListQuery{}, func(*session.Info) error { return nil }); err != nil {
			t.Fatal(err)
		}
		r.Close()
		w, err := dialStore(Options{Dir: dir, LockTimeout: 0}, Write)
		if errors.Is(err, ErrBusy) {
			busy++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	if busy > 0 {
		t.Errorf("%d of 200 writers found the store busy right after a reader", busy)
	}
}

// A client of another build that speaks the protocol is served: it knows
// the store only through the protocol (go run's binaries, a second
// install on PATH), and turning it away would restart the resident process
// at every command.
func TestResidentServesOtherBuilds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	serve(t, dir, time.Minute)
	conn, err := remote.DialSocket(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	wc := wire.NewConn(conn)
	var welcome wire.Welcome
	if err := wc.Send(&wire.Hello{Proto: wire.ProtocolVersion, Op: "begin", Build: "another build", Mode: Read, Timeout: time.Second}); err == nil {
		err = wc.Recv(&welcome)
	}
	if err != nil || welcome.Err != nil {
		t.Fatalf("a client of another build was answered %+v, %v", welcome, err)
	}
}

// A dry run of a collection only counts: a reader may ask for it.
func TestResidentReaderDryRunCollect(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	serve(t, dir, time.Minute)
	w := dial(t, dir, Write)
	nodes := chain(3, 20)
	m := metaFor(testID(1, 1), nodes)
	if err := w.Commit(&m, nodes); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := dial(t, dir, Read)
	defer r.Close()
	if _, err := r.Collect(&m, true); err != nil {
		t.Errorf("a reader's dry run: %v", err)
	}
	if _, err := r.Collect(&m, false); err == nil || !strings.Contains(err.Error(), "opened for reading") {
		t.Errorf("a reader collected: %v", err)
	}
}
