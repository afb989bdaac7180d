package tooltest

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session/store/etcdkv/etcdtest"
)

// The fault tests through the commands: each has a 3-member cluster of
// its own (etcdtest.StartCluster; WC_TEST_ETCD_BASEPORT picks its ports)
// that it kills or stops while commands run, through the resident
// wc-store of the URL and through a private one (WC_DIRECT=1).

const faultSessions = 3

// fleet is a cluster of the test's own, a few sessions on it, and two
// users of them: through the resident wc-store and WC_DIRECT=1.
type fleet struct {
	t    *testing.T
	c    *etcdtest.Cluster
	runs []*etcdRun // 0: through the resident wc-store; 1: WC_DIRECT=1
	ids  []string
}

func newFleet(t *testing.T) *fleet {
	c := etcdtest.StartCluster(t)
	url := "etcd://" + strings.Join(c.Endpoints, ",") + "/wc-fault"
	rt := t.TempDir()
	f := &fleet{t: t, c: c,
		runs: []*etcdRun{newRun(t, url, filepath.Join(rt, "r")), newRun(t, url, filepath.Join(rt, "d"), "WC_DIRECT=1")}}
	f.ids = strings.Fields(f.runs[0].sh(fmt.Sprintf(`for i in $(seq %d); do wc-new --project /fleet | cut -c8-43; done`, faultSessions)))
	if len(f.ids) != faultSessions {
		t.Fatalf("sessions %v", f.ids)
	}
	return f
}

// other is a member other than i.
func other(i int) int { return i%3 + 1 }

// unanswered runs a command the cluster cannot answer: it must exit 75
// within its lock timeout and a margin for process starts, print nothing
// on stdout and one line (and a hint) on stderr naming the store and
// saying what the cluster did.
func unanswered(t *testing.T, r *etcdRun, command, why string, lockTimeout time.Duration) {
	t.Helper()
	c := r.cmd(fmt.Sprintf("%s --lock-timeout %s", command, lockTimeout))
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	start := time.Now()
	err := c.Run()
	took := time.Since(start)
	name := strings.Fields(command)[0]
	ee, ok := err.(*exec.ExitError)
	msg := errOut.String()
	if !ok || ee.ExitCode() != 75 || out.Len() != 0 ||
		!regexp.MustCompile(`^`+name+`: store etcd://[^\n]*`+why+`[^\n]*\n`+name+`: hint: [^\n]+\n$`).MatchString(msg) {
		t.Errorf("%s: %v, stdout %q, stderr:\n%s", command, err, out.String(), msg)
	}
	// Not a speed figure: a bound well short of the 30s a resident
	// wc-store retried before it kept to the client's lock timeout.
	if took > lockTimeout+8*time.Second {
		t.Errorf("%s answered after %s, --lock-timeout %s", command, took.Round(time.Millisecond), lockTimeout)
	}
	t.Logf("%s: status 75 after %s: %s", command, took.Round(10*time.Millisecond), strings.SplitN(msg, "\n", 2)[0])
}

// TestEtcdFaultNoLeader: with two members of three killed, the last has
// no leader: a command, through the resident wc-store and a private one,
// exits 75 by its lock timeout with one line saying so, and changes
// nothing; with the members back, the same resident wc-store serves again.
func TestEtcdFaultNoLeader(t *testing.T) {
	f := newFleet(t)
	id := f.ids[0]
	for _, r := range f.runs {
		r.sh("wc-append --role user --text before " + id + " >/dev/null")
	}
	leader := f.c.Leader()
	down := []int{leader, other(leader)}
	for _, i := range down {
		f.c.Kill(i)
	}
	// The last member notices within an election timeout or two.
	time.Sleep(3 * time.Second)
	for _, r := range f.runs {
		unanswered(t, r, "wc-append --role user --text lost "+id, "(no leader|answered)", 2*time.Second)
		unanswered(t, r, "wc-export "+id, "(no leader|answered)", 2*time.Second)
		unanswered(t, r, "wc-ls", "(no leader|answered)", 2*time.Second)
	}
	for _, i := range down {
		f.c.StartMember(i)
	}
	f.checkUnchanged(id, 2)
}

// TestEtcdFaultClusterStopped: every member stopped (SIGSTOP): requests
// hang rather than fail, and still a command exits 75 by its lock timeout
// with one line; the resident wc-store gives up on it then, so that once
// the members continue, the next command is served at once.
func TestEtcdFaultClusterStopped(t *testing.T) {
	f := newFleet(t)
	id := f.ids[0]
	for _, r := range f.runs {
		r.sh("wc-append --role user --text before " + id + " >/dev/null")
	}
	for i := 1; i <= 3; i++ {
		f.c.Signal(i, syscall.SIGSTOP)
		t.Cleanup(func() { syscall.Kill(f.c.Pid(i), syscall.SIGCONT) })
	}
	for _, r := range f.runs {
		unanswered(t, r, "wc-append --role user --text lost "+id, "answered", 2*time.Second)
		unanswered(t, r, "wc-ls", "answered", 2*time.Second)
	}
	for i := 1; i <= 3; i++ {
		f.c.Signal(i, syscall.SIGCONT)
	}
	f.checkUnchanged(id, 2)
}

// checkUnchanged: the session holds exactly its first `want` messages
// (those before the fault), and takes an append through both kinds of
// wc-store, with a lock timeout shorter than the 30s a resident wc-store
// once went on retrying the command that had given up, holding the
// session's lock.
func (f *fleet) checkUnchanged(id string, want int) {
	f.t.Helper()
	for i, r := range f.runs {
		r.sh(fmt.Sprintf("wc-append --lock-timeout 5s --role user --text after-%d %s >/dev/null", i, id))
	}
	got := strings.Fields(f.runs[0].sh("wc-export --format jsonl " + id + " | grep -o '\"content\":\"[^\"]*\"'"))
	if strings.Join(got, " ") != `"content":"before" "content":"before" "content":"after-0" "content":"after-1"` {
		f.t.Errorf("the session after the fault holds %q, want %d messages from before and the two after", got, want)
	}
	f.c.CaughtUp()
}

// A runtime directory too long for the socket of an etcd store's resident
// wc-store (a Unix socket's path is at most 107 bytes) is one line and a
// hint, status 1, nothing on stdout, before any cluster is asked; with
// WC_DIRECT=1, which needs no socket there, the command reaches the
// cluster (here none: busy).
func TestEtcdSocketPathTooLong(t *testing.T) {
	Binaries(t)
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	r := newRun(t, "etcd://127.0.0.1:1/nobody", long)
	for _, command := range []string{"wc-ls", "wc-store --stop"} {
		c := r.cmd(command + " --lock-timeout 1s")
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		err := c.Run()
		name := strings.Fields(command)[0]
		want := regexp.MustCompile(`^` + name + `: store: the socket path ` + regexp.QuoteMeta(long) + `/wc/etcd-[0-9a-f]{16}\.sock is \d+ bytes, longer than a Unix socket's 107\n` +
			name + `: hint: set XDG_RUNTIME_DIR to a shorter directory [^\n]*\n$`)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || out.Len() != 0 || !want.MatchString(errOut.String()) {
			t.Errorf("%s: %v, stdout %q, stderr:\n%s", command, err, out.String(), errOut.String())
		}
	}
	c := r.cmd("WC_DIRECT=1 wc-ls --lock-timeout 1s")
	var errOut bytes.Buffer
	c.Stderr = &errOut
	if err := c.Run(); err == nil || err.(*exec.ExitError).ExitCode() != 75 || strings.Contains(errOut.String(), "socket path") {
		t.Errorf("WC_DIRECT=1 wc-ls: %v, stderr:\n%s", err, errOut.String())
	}
}
