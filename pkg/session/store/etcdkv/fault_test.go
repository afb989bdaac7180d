package etcdkv_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wctoolkit/wc/pkg/session/store/etcdkv"
	"github.com/wctoolkit/wc/pkg/session/store/etcdkv/etcdtest"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// The fault tests' load: writers append to a few "sessions" (a metadata
// key holding the count, a node key per append), as the store does, with
// a token in each node; a commit whose result is unknown is retried with
// a check, inside the retry's own transaction, for the token where it may
// have landed.
const (
	faultWriters  = 8
	faultSessions = 3
)

type faultLoad struct {
	t    *testing.T
	e    *etcdkv.Engine
	stop chan struct{}
	wg   sync.WaitGroup

	mu    sync.Mutex
	acked map[string]int // token → the node it is at
	errs  []error

	acks, conflicts, unknown, unknownApplied, unavailable atomic.Int64
	lastAck                                               atomic.Int64 // unix nanos
	longestStall                                          atomic.Int64
}

func metaKey(s int) []byte          { return fmt.Appendf(nil, "s/%d/meta", s) }
func nodeKey(s, n int) []byte       { return fmt.Appendf(nil, "s/%d/n/%08d", s, n) }
func nodePrefix(s int) []byte       { return fmt.Appendf(nil, "s/%d/n/", s) }
func countOf(v []byte) (int, error) { return strconv.Atoi(string(v)) }

var errApplied = errors.New("the token is already there")

func startLoad(t *testing.T, e *etcdkv.Engine) *faultLoad {
	l := &faultLoad{t: t, e: e, stop: make(chan struct{}), acked: map[string]int{}}
	l.lastAck.Store(time.Now().UnixNano())
	for w := 0; w < faultWriters; w++ {
		l.wg.Add(1)
		go l.writer(w)
	}
	t.Cleanup(l.halt)
	return l
}

func (l *faultLoad) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

func (l *faultLoad) fail(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
}

func (l *faultLoad) writer(w int) {
	defer l.wg.Done()
	s := w % faultSessions
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			return
		default:
		}
		token := fmt.Sprintf("w%d-%d", w, i)
		var uncertain []int // nodes an unknown commit of this token may have written
		for attempt := 0; ; attempt++ {
			if attempt > 2000 {
				l.fail(fmt.Errorf("writer %d: %s not committed after %d attempts", w, token, attempt))
				return
			}
			var at int
			err := l.e.Update(func(tx kv.Txn) error {
				for _, n := range uncertain {
					v, err := tx.Get(nodeKey(s, n))
					if err == nil && string(v) == token {
						at = n
						return errApplied
					}
					if err != nil && !errors.Is(err, kv.ErrNotFound) {
						return err
					}
				}
				count := 0
				v, err := tx.Get(metaKey(s))
				switch {
				case errors.Is(err, kv.ErrNotFound):
				case err != nil:
					return err
				default:
					if count, err = countOf(v); err != nil {
						return err
					}
				}
				at = count + 1
				if err := tx.Set(nodeKey(s, at), []byte(token)); err != nil {
					return err
				}
				return tx.Set(metaKey(s), []byte(strconv.Itoa(at)))
			})
			var ue interface{ Unavailable() bool }
			switch {
			case err == nil || errors.Is(err, errApplied):
				if errors.Is(err, errApplied) {
					l.unknownApplied.Add(1)
				}
				l.ack(token, at)
			case errors.Is(err, kv.ErrConflict):
				l.conflicts.Add(1)
				continue
			case errors.Is(err, kv.ErrUnknownResult):
				l.unknown.Add(1)
				uncertain = append(uncertain, at)
				continue
			case errors.As(err, &ue) && ue.Unavailable():
				l.unavailable.Add(1)
				time.Sleep(50 * time.Millisecond)
				continue
			default:
				l.fail(fmt.Errorf("writer %d: an error of no documented kind: %v", w, err))
				return
			}
			break
		}
	}
}

func (l *faultLoad) ack(token string, at int) {
	now := time.Now().UnixNano()
	if gap := now - l.lastAck.Swap(now); gap > l.longestStall.Load() {
		l.longestStall.Store(gap)
	}
	l.mu.Lock()
	l.acked[token] = at
	l.mu.Unlock()
	l.acks.Add(1)
}

// waitProgress waits for more acknowledged appends, failing if none come
// for a minute: the cluster is expected to recover, not to be fast.
func (l *faultLoad) waitProgress(what string, more int64) {
	l.t.Helper()
	target := l.acks.Load() + more
	deadline := time.Now().Add(time.Minute)
	for l.acks.Load() < target {
		if time.Now().After(deadline) {
			l.t.Fatalf("%s: no progress (%d acknowledged appends, waiting for %d)", what, l.acks.Load(), target)
		}
		l.mu.Lock()
		errs := l.errs
		l.mu.Unlock()
		if len(errs) > 0 {
			l.t.Fatal(errs[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// finish stops the writers and checks the sessions: each holds nodes 1..N
// with N its count, every token at most once, and exactly the tokens
// acknowledged, each where its writer was told.
func (l *faultLoad) finish() {
	l.t.Helper()
	l.halt()
	for _, err := range l.errs {
		l.t.Error(err)
	}
	found := map[string]int{}
	err := l.e.View(func(tx kv.Txn) error {
		for s := 0; s < faultSessions; s++ {
			v, err := tx.Get(metaKey(s))
			if err != nil {
				return fmt.Errorf("session %d: %v", s, err)
			}
			count, err := countOf(v)
			if err != nil {
				return err
			}
			it := tx.Iterate(kv.IterOptions{Prefix: nodePrefix(s)})
			n := 0
			for it.Seek(nil); it.Valid(); it.Next() {
				n++
				if string(it.Key()) != string(nodeKey(s, n)) {
					it.Close()
					return fmt.Errorf("session %d: node %q where node %d belongs", s, it.Key(), n)
				}
				v, _ := it.Value()
				if prev, dup := found[string(v)]; dup {
					it.Close()
					return fmt.Errorf("session %d: token %s twice (node %d and %d)", s, v, prev, n)
				}
				found[string(v)] = n
			}
			it.Close()
			if n != count {
				return fmt.Errorf("session %d: %d nodes, count %d", s, n, count)
			}
		}
		return nil
	})
	if err != nil {
		l.t.Fatal(err)
	}
	for token, at := range l.acked {
		if got, ok := found[token]; !ok || got != at {
			l.t.Errorf("acknowledged %s at node %d, found at %d (%v)", token, at, got, ok)
		}
	}
	for token := range found {
		if _, ok := l.acked[token]; !ok {
			l.t.Errorf("%s is stored but was never acknowledged", token)
		}
	}
	l.t.Logf("%d appends acknowledged; %d conflicts, %d unknown results (%d found applied), %d unavailable retried; longest stall %s",
		l.acks.Load(), l.conflicts.Load(), l.unknown.Load(), l.unknownApplied.Load(), l.unavailable.Load(),
		time.Duration(l.longestStall.Load()).Round(time.Millisecond))
}

// caughtUp waits until every member serves, from its own data, the same
// revision and the same keys of the store.
func caughtUp(t *testing.T, c *etcdtest.Cluster, prefix string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var states []string
		for _, ep := range c.Endpoints {
			cli := etcdtest.Client(t, []string{ep})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := cli.Get(ctx, "/"+prefix+"/", clientv3.WithPrefix(), clientv3.WithSerializable(), clientv3.WithKeysOnly())
			cancel()
			cli.Close()
			if err != nil {
				states = append(states, err.Error())
				continue
			}
			states = append(states, fmt.Sprintf("rev %d, %d keys", resp.Header.Revision, len(resp.Kvs)))
		}
		if states[0] == states[1] && states[1] == states[2] && strings.HasPrefix(states[0], "rev") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the members did not converge: %q", states)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func openOwn(t *testing.T, c *etcdtest.Cluster) (*etcdkv.Engine, string) {
	cfg := etcdtest.Config(t, c.Endpoints)
	cfg.RequestTimeout = 2 * time.Second
	e, err := etcdkv.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, cfg.Prefix
}

func otherThan(i int) int { return i%3 + 1 }

// TestFaultKillLeaderThenFollower: kill -9 of the leader, then of a
// follower, each started again, during 8 writers.
func TestFaultKillLeaderThenFollower(t *testing.T) {
	c := etcdtest.StartCluster(t)
	e, prefix := openOwn(t, c)
	l := startLoad(t, e)
	l.waitProgress("before the faults", 100)

	leader := c.Leader()
	if leader == 0 {
		t.Fatal("no leader")
	}
	c.Kill(leader)
	l.waitProgress("after the leader's kill", 100)
	c.StartMember(leader)
	l.waitProgress("after the old leader's return", 50)

	follower := otherThan(c.Leader())
	c.Kill(follower)
	l.waitProgress("after a follower's kill", 100)
	c.StartMember(follower)
	l.waitProgress("after the follower's return", 50)

	l.finish()
	caughtUp(t, c, prefix)
}

// TestFaultStopLeader: the leader stopped (SIGSTOP) for three election
// timeouts, as a partition would cut it off, then let go.
func TestFaultStopLeader(t *testing.T) {
	c := etcdtest.StartCluster(t)
	e, prefix := openOwn(t, c)
	l := startLoad(t, e)
	l.waitProgress("before the fault", 100)

	leader := c.Leader()
	if leader == 0 {
		t.Fatal("no leader")
	}
	c.Signal(leader, syscall.SIGSTOP)
	t.Cleanup(func() { syscall.Kill(c.Pid(leader), syscall.SIGCONT) })
	before := l.acks.Load()
	time.Sleep(3 * time.Second) // three of etcd's default 1s election timeouts
	during := l.acks.Load() - before
	c.Signal(leader, syscall.SIGCONT)
	l.waitProgress("after the old leader's return", 100)
	t.Logf("%d appends acknowledged while the leader was stopped", during)

	l.finish()
	caughtUp(t, c, prefix)
}

// TestFaultRestartCluster: every member killed at once and started again
// on its data.
func TestFaultRestartCluster(t *testing.T) {
	c := etcdtest.StartCluster(t)
	e, prefix := openOwn(t, c)
	l := startLoad(t, e)
	l.waitProgress("before the fault", 100)
	for i := 1; i <= 3; i++ {
		c.Kill(i)
	}
	c.Start()
	l.waitProgress("after the restart", 100)
	l.finish()
	caughtUp(t, c, prefix)
}

// TestNoLeader: with two members of three gone, reads and commits fail at
// once with one line of kind ErrUnavailable, nothing written; with them
// back, the same engine works again.
func TestNoLeader(t *testing.T) {
	c := etcdtest.StartCluster(t)
	e, _ := openOwn(t, c)
	if err := e.Update(func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	leader := c.Leader()
	down := []int{leader, otherThan(leader)}
	for _, i := range down {
		c.Kill(i)
	}
	// The last member notices within an election timeout or two.
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for {
		err = e.View(func(tx kv.Txn) error { _, err := tx.Get([]byte("k")); return err })
		if err != nil && strings.Contains(err.Error(), "no leader") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var ue interface{ Unavailable() bool }
	if !errors.Is(err, etcdkv.ErrUnavailable) || !errors.As(err, &ue) || !ue.Unavailable() {
		t.Fatalf("a read without a leader: %v, want ErrUnavailable", err)
	}
	if want := "etcd: read failed: the cluster has no leader"; err.Error() != want {
		t.Fatalf("a read without a leader says %q, want %q", err, want)
	}
	err = e.Update(func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("2")) })
	if !errors.Is(err, etcdkv.ErrUnavailable) || errors.Is(err, kv.ErrUnknownResult) {
		t.Fatalf("a commit without a leader: %v, want ErrUnavailable", err)
	}
	if want := "etcd: commit failed: the cluster has no leader"; err.Error() != want {
		t.Fatalf("a commit without a leader says %q, want %q", err, want)
	}
	for _, i := range down {
		c.StartMember(i)
	}
	var v []byte
	for {
		err = e.View(func(tx kv.Txn) error { v, err = tx.Get([]byte("k")); return err })
		if err == nil || time.Now().After(deadline.Add(30*time.Second)) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || string(v) != "1" {
		t.Fatalf("after the members' return: %q, %v; want the value before the outage", v, err)
	}
}
