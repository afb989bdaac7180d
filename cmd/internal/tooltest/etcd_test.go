package tooltest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wctoolkit/wc/cmd/internal/open"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/etcdkv/etcdtest"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
	"github.com/wctoolkit/wc/pkg/session/store/storetest"
)

// etcdRun runs the wc commands of a test against one store, as a user on
// one machine: its own runtime directory (where the resident wc-store of
// an etcd store keeps its socket), HOME and environment.
type etcdRun struct {
	t   *testing.T
	env []string
}

func newRun(t *testing.T, storeArg, runtimeDir string, extra ...string) *etcdRun {
	t.Helper()
	if err := os.MkdirAll(runtimeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+Binaries(t)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"WC_STORE="+storeArg, "XDG_RUNTIME_DIR="+runtimeDir, "HOME="+t.TempDir(), "XDG_DATA_HOME=", "WC_DIRECT=", "WC_RESIDENT=")
	r := &etcdRun{t: t, env: append(env, extra...)}
	t.Cleanup(func() {
		// The resident wc-store of this "machine", if any.
		if out, err := r.cmd("wc-store --stop").CombinedOutput(); err != nil {
			t.Logf("wc-store --stop: %v: %s", err, out)
		}
	})
	return r
}

func (r *etcdRun) cmd(pipeline string) *exec.Cmd {
	c := exec.Command("sh", "-c", pipeline)
	c.Env = r.env
	c.Dir = r.t.TempDir()
	return c
}

// sh runs a shell pipeline and returns its stdout; it fails the test
// when the pipeline fails.
func (r *etcdRun) sh(pipeline string) string {
	r.t.Helper()
	var out, errOut bytes.Buffer
	c := r.cmd("set -e; " + pipeline)
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		r.t.Fatalf("%s: %v\n%s", pipeline, err, errOut.String())
	}
	return out.String()
}

var (
	uuidRe = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRe = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	// A default title ends in the id's first hex digits.
	titleRe = regexp.MustCompile(`"title":"([^"]*)-[0-9a-f]+","title_source":"default"`)
)

// normal is out without what differs from run to run: ids and times.
func normal(out string) string {
	out = titleRe.ReplaceAllString(out, `"title":"$1-ID","title_source":"default"`)
	return timeRe.ReplaceAllString(uuidRe.ReplaceAllString(out, "ID"), "TIME")
}

// etcdURL is a store of the test's own on the shared test cluster,
// wiped when the test ends.
func etcdURL(t *testing.T) string {
	endpoints := etcdtest.Endpoints(t)
	cfg := etcdtest.Config(t, endpoints)
	t.Cleanup(func() { etcdtest.Wipe(t, endpoints, cfg.Prefix) })
	return "etcd://" + strings.Join(endpoints, ",") + "/" + cfg.Prefix
}

// The quickstart pipeline and wc-ls, wc-compact --all, wc-branch and
// wc-rm print the same on a store on etcd as on a directory, through the resident wc-store of
// the URL and through a private one (WC_DIRECT=1).
func TestEtcdSameAsDirectory(t *testing.T) {
	etcdtest.Endpoints(t)
	script := `wc-new --project /p | wc-append --role user --text hi | wc-compact --max-tokens 8000 | wc-export --format markdown
id=$(wc-ls | head -1 | cut -c8-43)
echo "how are you" | wc-append --role user $id
wc-new --project /q >/dev/null
wc-ls
wc-compact --all --max-tokens 8000 </dev/null | cut -d, -f2- | sort
wc-branch $id mark first
wc-branch $id tree
wc-branch $id revert 1
wc-branch $id switch first
wc-export --format jsonl --tree $id
wc-rm $id
wc-ls
exits 3 wc-export $id
`
	script = strings.ReplaceAll(script, "exits 3 ", "! ")
	dir := newRun(t, filepath.Join(t.TempDir(), "store"), t.TempDir()).sh(script)
	if !strings.Contains(dir, "how are you") {
		t.Fatalf("the script on a directory printed:\n%s", dir)
	}
	for _, direct := range []string{"", "1"} {
		got := newRun(t, etcdURL(t), t.TempDir(), "WC_DIRECT="+direct).sh(script)
		if normal(got) != normal(dir) {
			t.Errorf("WC_DIRECT=%q: on etcd the script printed\n%s\non a directory\n%s", direct, got, dir)
		}
	}
}

// Two machines (two resident wc-store processes of one URL, each in its
// runtime directory) append to one session at once: every append is in
// it once, on one path, and the message count says so.
func TestEtcdTwoMachinesAppend(t *testing.T) {
	url := etcdURL(t)
	machines := []*etcdRun{newRun(t, url, t.TempDir()), newRun(t, url, t.TempDir())}
	id := strings.TrimSpace(machines[0].sh("wc-new --project /p | cut -c8-43"))
	const each = 20
	var wg sync.WaitGroup
	for m, r := range machines {
		wg.Go(func() {
			r.sh(fmt.Sprintf(`for i in $(seq 1 %d); do wc-append --role user --text "m%d-$i" %s >/dev/null; done`, each, m, id))
		})
	}
	wg.Wait()
	for _, r := range machines {
		pids := strings.Fields(r.sh(`for p in $(pgrep -x wc-store); do tr '\0' ' ' </proc/$p/environ | grep -q "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR " && echo $p; done; true`))
		if len(pids) != 1 {
			t.Errorf("resident wc-store processes of %s: %v, want one", r.env[len(r.env)-1], pids)
		}
	}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(machines[1].sh("wc-export --format jsonl "+id)), "\n") {
		seen[regexp.MustCompile(`"content":"([^"]*)"`).FindStringSubmatch(line)[1]]++
	}
	for m := range machines {
		for i := 1; i <= each; i++ {
			if text := fmt.Sprintf("m%d-%d", m, i); seen[text] != 1 {
				t.Errorf("%s is in the session %d times", text, seen[text])
			}
		}
	}
	if len(seen) != 2*each {
		t.Errorf("the session holds %d messages, want %d: %v", len(seen), 2*each, seen)
	}
	if ls := machines[0].sh("wc-ls"); !strings.Contains(ls, fmt.Sprintf(`"message_count":%d,`, 2*each)) {
		t.Errorf("wc-ls: %s", ls)
	}
}

// The password (WC_STORE_PASSWORD) reaches wc-store through the
// environment only: never in a command's output or error, nor in the
// arguments of the wc-store it starts (the test cluster has no users, so
// the command works). A URL wc-store refuses comes back as one line, with
// the status 1 and nothing on stdout.
func TestEtcdPasswordNeverShown(t *testing.T) {
	url := etcdURL(t)
	const secret = "s3cret-Pa55"
	r := newRun(t, url+"?user=bot", t.TempDir(), "WC_STORE_PASSWORD="+secret)
	c := r.cmd(`wc-ls; echo "status $?" >&2; for p in $(pgrep -x wc-store); do tr '\0' ' ' </proc/$p/cmdline; echo; done`)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	_ = c.Run()
	if strings.Contains(out.String()+errOut.String(), secret) {
		t.Errorf("the password was shown:\n%s\n%s", out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "status 0") || !strings.Contains(out.String(), "wc-store") {
		t.Errorf("wc-ls as a user printed:\n%s\n%s", out.String(), errOut.String())
	}
	for _, bad := range []string{url + "/x?cacert=/nonexistent", strings.Replace(url, "etcd://", "etcd://u:"+secret+"@", 1)} {
		r := newRun(t, bad, t.TempDir(), "WC_STORE_PASSWORD="+secret)
		c := r.cmd("wc-ls")
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		err := c.Run()
		msg := strings.TrimSpace(errOut.String())
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || out.Len() != 0 || strings.Contains(msg, secret) || !strings.HasPrefix(msg, "wc-ls: ") || strings.Count(msg, "\n") > 1 {
			t.Errorf("wc-ls --store %s: %v, stdout %q, stderr:\n%s", strings.ReplaceAll(bad, secret, "SECRET"), err, out.String(), strings.ReplaceAll(msg, secret, "SECRET"))
		}
	}
}

// The clients of both kinds of wc-store of a store on etcd meet the
// contract of store.Handle, opened as commands open them: each directory
// the suite uses is a store URL of its own.
func TestEtcdContract(t *testing.T) {
	etcdtest.Endpoints(t)
	t.Setenv("WC_STORE_PROGRAM", filepath.Join(Binaries(t), "wc-store"))
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	ask := func(mode store.Mode) remote.Ask { return remote.Ask{Mode: mode, LockTimeout: 10 * time.Second} }
	var mu sync.Mutex
	urls := map[string]string{}
	urlFor := func(t *testing.T, dir string) string {
		mu.Lock()
		defer mu.Unlock()
		if urls[dir] == "" {
			urls[dir] = etcdURL(t)
		}
		return urls[dir]
	}
	t.Run("resident", func(t *testing.T) {
		storetest.Run(t, storetest.Target{Shared: true, Open: func(t *testing.T, dir string, mode store.Mode) store.Handle {
			url := urlFor(t, dir)
			h, err := open.DialShared(url, ask(mode))
			if err != nil || h == nil {
				t.Fatalf("no resident store process for %s: %v", url, err)
			}
			t.Cleanup(func() {
				if _, err := open.ShutdownShared(url, 30*time.Second); err != nil {
					t.Log(err)
				}
			})
			return h
		}})
	})
	t.Run("private", func(t *testing.T) {
		storetest.Run(t, storetest.Target{Open: func(t *testing.T, dir string, mode store.Mode) store.Handle {
			h, err := open.OpenPrivate(urlFor(t, dir), ask(mode), false, false)
			if err != nil {
				t.Fatalf("private store process: %v", err)
			}
			return h
		}})
	})
}

// A batch compaction on one machine (--full-replace: each changes the
// session while a new user turn came) while another appends to the same
// sessions: no session fails (one that changed under the batch is
// skipped, its line says so), and every append is still in its session's
// tree afterwards.
func TestEtcdBatchBesideAnotherMachine(t *testing.T) {
	url := etcdURL(t)
	a, b := newRun(t, url, t.TempDir()), newRun(t, url, t.TempDir())
	const sessions, rounds = 12, 4
	ids := strings.Fields(a.sh(fmt.Sprintf(`for i in $(seq %d); do wc-new --project /p | wc-append --role user --text u1 | wc-append --role assistant --text a2 | wc-append --role user --text u3 | cut -c8-43; done`, sessions)))
	if len(ids) != sessions {
		t.Fatalf("ids %v", ids)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		b.sh(fmt.Sprintf(`for r in $(seq %d); do for id in %s; do wc-append --role user --text "b-$r" $id >/dev/null; done; done`, rounds, strings.Join(ids, " ")))
	})
	var lines []string
	for range 3 {
		lines = append(lines, strings.Split(strings.TrimSpace(a.sh("wc-compact --all --full-replace </dev/null")), "\n")...)
	}
	wg.Wait()
	skipped := 0
	for _, line := range lines {
		switch {
		case strings.Contains(line, `"skipped":"changed since it was read"`):
			skipped++
		case strings.Contains(line, `"error"`) || !strings.Contains(line, `"changed":`):
			t.Errorf("batch line %s", line)
		}
	}
	t.Logf("%d of %d batch lines skipped a session changed under the batch; %d compacted", skipped, len(lines), strings.Count(strings.Join(lines, "\n"), `"changed":true`))
	for _, id := range ids {
		tree := a.sh("wc-export --format jsonl --tree " + id)
		for r := 1; r <= rounds; r++ {
			if !strings.Contains(tree, fmt.Sprintf(`"content":"b-%d"`, r)) {
				t.Errorf("session %s lost the append b-%d", id, r)
			}
		}
	}
}

// A cluster that no member of answers is the busy status, one line and a
// hint, with nothing on stdout, through the resident wc-store and a
// private one alike, and by the lock timeout: the command then names the
// cluster, not a store process that did not answer.
func TestEtcdUnreachable(t *testing.T) {
	Binaries(t)
	for _, direct := range []string{"", "1"} {
		r := newRun(t, "etcd://127.0.0.1:1/nobody", t.TempDir(), "WC_DIRECT="+direct)
		c := r.cmd("wc-ls --lock-timeout 1s")
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		err := c.Run()
		lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 75 || out.Len() != 0 || len(lines) != 2 ||
			!strings.HasPrefix(lines[0], "wc-ls: store etcd://127.0.0.1:1/nobody: ") || !strings.Contains(lines[0], "answered") ||
			!strings.HasPrefix(lines[1], "wc-ls: hint: ") {
			t.Errorf("WC_DIRECT=%s: %v, stdout %q, stderr:\n%s", direct, err, out.String(), errOut.String())
		}
	}
}
