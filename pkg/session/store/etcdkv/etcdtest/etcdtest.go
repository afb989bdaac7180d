package etcdtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/wctoolkit/wc/pkg/session/store/etcdkv"
)

// EnvEndpoints names the variable holding the shared test cluster's
// endpoints, HOST:PORT separated by commas (scripts/etcd-cluster.sh
// writes them to DIR/endpoints).
const EnvEndpoints = "WC_TEST_ETCD"

// unavailable skips a test locally and fails it in CI, where etcd must be.
func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: the etcd tests must run; .ci/run starts the cluster)", why)
	}
	t.Skipf("%s: skipping the etcd tests (they fail under CI=true)", why)
}

// Endpoints are the shared test cluster's.
func Endpoints(t testing.TB) []string {
	t.Helper()
	v := os.Getenv(EnvEndpoints)
	if v == "" {
		unavailable(t, EnvEndpoints+" is not set (scripts/etcd-cluster.sh start DIR; export "+EnvEndpoints+"=$(cat DIR/endpoints))")
	}
	return strings.Split(v, ",")
}

// Open opens an engine on the shared cluster under a prefix no other test
// uses, and deletes the prefix's keys when the test ends.
func Open(t testing.TB) *etcdkv.Engine {
	t.Helper()
	return OpenOn(t, Endpoints(t))
}

// OpenOn is Open on the given endpoints.
func OpenOn(t testing.TB, endpoints []string) *etcdkv.Engine {
	t.Helper()
	cfg := Config(t, endpoints)
	e, err := etcdkv.Open(cfg)
	if err != nil {
		t.Fatalf("open %s: %v", cfg, err)
	}
	t.Cleanup(func() {
		e.Close()
		Wipe(t, endpoints, cfg.Prefix)
	})
	return e
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Config is a configuration for a prefix of the test's own.
func Config(t testing.TB, endpoints []string) etcdkv.Config {
	var b [4]byte
	rand.Read(b[:])
	name := strings.Trim(unsafeChars.ReplaceAllString(t.Name(), "-"), "-")
	if len(name) > 80 {
		name = name[:80]
	}
	return etcdkv.Config{
		Endpoints:      endpoints,
		Prefix:         "wc-test/" + name + "-" + hex.EncodeToString(b[:]),
		DialTimeout:    5 * time.Second,
		RequestTimeout: 5 * time.Second,
	}
}

// Client is a raw client of the cluster, for what a test checks behind
// the engine's back.
func Client(t testing.TB, endpoints []string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Wipe deletes every key of a store's prefix (and of those below it).
func Wipe(t testing.TB, endpoints []string, prefix string) {
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Errorf("etcd client: %v", err)
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Delete(ctx, "/"+prefix+"/", clientv3.WithPrefix()); err != nil {
		t.Errorf("wipe %s: %v", prefix, err)
	}
}

// Cluster is a 3-member cluster of one test's own, run by
// scripts/etcd-cluster.sh in a temporary directory and stopped at the
// test's end.
type Cluster struct {
	t         testing.TB
	Dir       string
	Endpoints []string // member i (1-3) is Endpoints[i-1]
}

// script is scripts/etcd-cluster.sh of this checkout.
func script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "..", "scripts", "etcd-cluster.sh")
}

// Binary is the path of the etcd server.
func Binary(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("etcd")
	if err != nil {
		unavailable(t, "etcd is not installed (apt-get install etcd-server etcd-client)")
	}
	return path
}

// EnvBasePort, when set, is the first port of the clusters a test
// process starts (StartCluster): the n-th takes the ten ports from
// BASE+10n, so that tests on a machine shared with other clusters keep to
// ports they were given. Unset, the script picks free ports.
const EnvBasePort = "WC_TEST_ETCD_BASEPORT"

var clustersStarted atomic.Int64

// StartCluster starts a cluster of the test's own on free loopback ports.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	Binary(t)
	c := &Cluster{t: t, Dir: t.TempDir()}
	t.Cleanup(func() { c.run("stop") })
	if v := os.Getenv(EnvBasePort); v != "" {
		base, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s=%q: not a port", EnvBasePort, v)
		}
		c.run("start", strconv.Itoa(base+10*int(clustersStarted.Add(1)-1)))
	} else {
		c.run("start")
	}
	eps, err := os.ReadFile(filepath.Join(c.Dir, "endpoints"))
	if err != nil {
		t.Fatal(err)
	}
	c.Endpoints = strings.Split(strings.TrimSpace(string(eps)), ",")
	return c
}

func (c *Cluster) run(args ...string) {
	c.t.Helper()
	cmd := exec.Command("sh", append([]string{script(), args[0], c.Dir}, args[1:]...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		c.t.Fatalf("etcd-cluster.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Pid is member i's process id.
func (c *Cluster) Pid(i int) int {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Dir, fmt.Sprintf("m%d.pid", i)))
	if err != nil {
		c.t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		c.t.Fatal(err)
	}
	return pid
}

// Signal sends sig to member i.
func (c *Cluster) Signal(i int, sig syscall.Signal) {
	c.t.Helper()
	if err := syscall.Kill(c.Pid(i), sig); err != nil {
		c.t.Fatalf("signal member %d: %v", i, err)
	}
}

// Kill kills member i with SIGKILL and waits for it to be gone.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	pid := c.Pid(i)
	c.Signal(i, syscall.SIGKILL)
	for syscall.Kill(pid, 0) == nil {
		// The script started it: it is not our child to wait for, and
		// it is reaped by init once it dies.
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err != nil || strings.Contains(string(stat), ") Z ") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	os.Remove(filepath.Join(c.Dir, fmt.Sprintf("m%d.pid", i)))
}

// StartMember starts member i again on its data and waits until it is
// healthy.
func (c *Cluster) StartMember(i int) { c.t.Helper(); c.run("member", strconv.Itoa(i)) }

// Stop stops every member; Start starts them again on their data.
func (c *Cluster) Stop()  { c.t.Helper(); c.run("stop") }
func (c *Cluster) Start() { c.t.Helper(); c.run("start") }

// Leader is the member (1-3) that is the leader, asked of every member
// that answers; 0 when none knows one.
func (c *Cluster) Leader() int {
	c.t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.t.Fatalf("etcd client: %v", err)
	}
	defer cli.Close()
	for i, ep := range c.Endpoints {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := cli.Status(ctx, ep)
		cancel()
		if err == nil && st.Leader != 0 {
			if st.Leader == st.Header.MemberId {
				return i + 1
			}
			for j, ep2 := range c.Endpoints {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				st2, err := cli.Status(ctx, ep2)
				cancel()
				if err == nil && st2.Header.MemberId == st.Leader {
					return j + 1
				}
			}
		}
	}
	return 0
}

// CaughtUp waits until every member answers a status (what etcdctl
// endpoint status prints) with the same revision and applied index, and
// returns that revision; it fails the test when they have not met within a
// minute. Call it once nothing writes.
func (c *Cluster) CaughtUp() int64 {
	c.t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.t.Fatalf("etcd client: %v", err)
	}
	defer cli.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		var states []string
		var rev int64
		for _, ep := range c.Endpoints {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			st, err := cli.Status(ctx, ep)
			cancel()
			if err != nil {
				states = append(states, ep+": "+err.Error())
				continue
			}
			rev = st.Header.Revision
			states = append(states, fmt.Sprintf("revision %d, applied index %d", st.Header.Revision, st.RaftAppliedIndex))
		}
		if states[0] == states[1] && states[1] == states[2] && strings.HasPrefix(states[0], "revision") {
			return rev
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the members did not catch up: %q", states)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
