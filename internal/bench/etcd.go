package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The etcd column (issue 26): the same operations on a store on a
// 3-member etcd cluster, in the same run as Badger's and sqlite3's.

// etcdPrefix names this run's stores in the cluster, so that runs
// against one cluster never meet each other's sessions.
func (r *runner) etcdPrefix() string { return "wcbench/" + r.began.UTC().Format("20060102-150405") }

// etcdStore is the URL of a data set's copy on etcd.
func (r *runner) etcdStore(set string) string {
	return "etcd://" + r.c.Etcd + "/" + r.etcdPrefix() + "/" + set
}

// etcdBatch is the I-th copy of the compaction batch on etcd: each timed
// run compacts a fresh one, as each run on a directory compacts a copy.
func (r *runner) etcdBatch(i int) string { return r.etcdStore("batch-" + strconv.Itoa(i)) }

// etcdURLs are the stores on etcd a data set is written to, if any.
func (r *runner) etcdURLs(set string) []string {
	if r.c.Etcd == "" {
		return nil
	}
	if set == "batch" {
		var urls []string
		for i := range r.c.SlowRuns {
			urls = append(urls, r.etcdBatch(i))
		}
		return urls
	}
	return []string{r.etcdStore(set)}
}

// stopServer stops the resident process of a store on etcd, if one runs.
func (r *runner) stopServer(url string) func() error {
	return func() error {
		_, err := r.exec(r.wc("wc-store", "--stop", "--store", url))
		return err
	}
}

func (r *runner) appendTo(store, id string) command {
	return r.wc("wc-append", "--store", store, id, "--role", "user", "--text", appendText)
}

func (r *runner) etcd() error {
	if r.c.Etcd == "" {
		return nil
	}
	r.logf("etcd: the same operations on a store on the cluster at %s", r.c.Etcd)
	many := r.etcdStore("many")
	for _, l := range []struct {
		key  string
		args []string
	}{
		{"ls", []string{"-n", "50"}},
		{"lsp", []string{"-n", "50", "--project", r.data["many"].Project}},
	} {
		if err := r.stopServer(many)(); err != nil {
			return err
		}
		if err := r.fastOrSlow(l.key+".etcd", r.wc("wc-ls", append([]string{"--store", many}, l.args...)...)); err != nil {
			return err
		}
		r.residentRSS(l.key+".etcd", many)
	}
	ids, err := r.listedIDs(r.wc("wc-ls", "--store", many, "-n", "50"))
	if err != nil {
		return err
	}
	r.checks = append(r.checks, "top-50 ids on etcd: "+map[bool]string{true: "identical", false: "DIFFERENT"}[slices.Equal(ids, r.top50)])

	big, id := r.etcdStore("big"), r.data["big"].FirstID
	if err := r.stopServer(big)(); err != nil {
		return err
	}
	exp := r.wc("wc-export", "--store", big, id, "--format", "markdown")
	if err := r.slow("export.etcd", 1, nil, exp); err != nil {
		return err
	}
	r.residentRSS("export.etcd", big)
	md, err := r.output(exp)
	if err != nil {
		return err
	}
	if bytes.Equal(md, r.markdown) {
		r.checks = append(r.checks, "markdown on etcd: identical")
	} else {
		r.keep("md-etcd", md)
		r.checks = append(r.checks, "markdown on etcd: DIFFERENT (see "+r.path("results", "md-etcd.wc")+")")
	}

	if err := r.etcdCompact(); err != nil {
		return err
	}
	var ts []turn
	for _, set := range []string{"one", "many", "big"} {
		if err := r.stopServer(r.etcdStore(set))(); err != nil {
			return err
		}
		ts = append(ts, turn{"append-" + set + ".etcd", r.appendTo(r.etcdStore(set), r.data[set].FirstID)},
			turn{"append-" + set + ".sqletcd", r.sqlite(r.db(set), r.prog("append-"+set+".sql"))})
	}
	if err := r.turns(ts...); err != nil {
		return err
	}
	for _, set := range []string{"one", "many", "big"} {
		r.residentRSS("append-"+set+".etcd", r.etcdStore(set))
	}

	if err := r.etcdWriters(); err != nil {
		return err
	}
	return r.etcdSpace()
}

// fastOrSlow times c as a fast operation, or as a slow one (SlowRuns
// runs) when its first run took longer than slowerThan: on etcd without
// a listing cache, a listing of 10,000 sessions took seconds.
func (r *runner) fastOrSlow(key string, c command) error {
	took, err := r.exec(c)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if took > slowerThan {
		r.notes = append(r.notes, fmt.Sprintf("%s took %.0f ms in its first run: timed as a slow operation, %d runs",
			key, took.Seconds()*1000, r.c.SlowRuns))
		return r.slow(key, 0, nil, c)
	}
	return r.fast(key, c)
}

const slowerThan = 200 * time.Millisecond

// etcdCompact compacts a fresh copy of the batch on etcd in each timed
// run, then checks that the last one left the sessions the directory's
// compaction did.
func (r *runner) etcdCompact() error {
	r.logf("  compact.etcd: wc-compact --all over %d copies of the batch", r.c.SlowRuns)
	for i := range r.c.SlowRuns {
		c := r.wc("wc-compact", "--store", r.etcdBatch(i), "--all", "--max-tokens", strconv.Itoa(r.c.MaxTokens))
		if err := r.timeRuns("compact.etcd", 1, 0, nil, c, true); err != nil {
			return err
		}
	}
	out, err := r.output(r.wc("wc-ls", "--store", r.store("batch"), "-n", "50"))
	if err != nil {
		return err
	}
	same, n := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id := listedID(line)
		path := func(store string) command {
			return command{args: []string{"sh", "-c", `"$0" --store "$1" "$2" --format jsonl | jq -c .message`,
				filepath.Join(r.c.Bin, "wc-export"), store, id}}
		}
		a, err := r.output(path(r.etcdBatch(r.c.SlowRuns - 1)))
		if err != nil {
			return err
		}
		b, err := r.output(path(r.store("batch")))
		if err != nil {
			return err
		}
		n++
		if bytes.Equal(a, b) {
			same++
		}
	}
	r.checks = append(r.checks, fmt.Sprintf("compacted on etcd as on a directory: %d of %d", same, n))
	return nil
}

// writersResult is what one row of concurrent writers measured.
type writersResult struct {
	perSec           float64
	changed, retries int64 // -1: not visible
	lost             int64 // appends acknowledged but not in the session (negative: more there)
}

// etcdWriters appends from Writers writers at once to one session:
// through the commands (resident: one machine's resident process lets
// one writer at a time through; direct: each command with a wc-store of
// its own, as commands on many machines), on etcd and on a directory;
// and at the store's level, where the refused commits can be counted.
func (r *runner) etcdWriters() error {
	n, total := r.c.Writers, r.c.WriterAppends
	r.logf("  writers: %d writers, %d appends to one session", n, total)
	r.writers = map[string]writersResult{}
	for _, w := range []struct {
		key, store string
		direct     bool
	}{
		{"writers.wc", r.store("one"), false},
		{"writers.etcd", r.etcdStore("one"), false},
		{"writers.etcddirect", r.etcdStore("one"), true},
	} {
		res, err := r.commandWriters(w.store, r.data["one"].FirstID, n, total, w.direct)
		if err != nil {
			return fmt.Errorf("%s: %w", w.key, err)
		}
		r.writers[w.key] = res
	}
	out, err := r.output(command{args: []string{filepath.Join(r.c.Bin, "wcbench"), "writers", "-store", r.etcdStore("one"),
		"-id", r.data["one"].FirstID, "-writers", strconv.Itoa(n), "-appends", strconv.Itoa(total)}})
	if err != nil {
		return err
	}
	var res struct {
		PerSec  float64 `json:"appends_per_second"`
		Changed int64   `json:"changed"`
		Retries int64   `json:"retries"`
		Before  int64   `json:"messages_before"`
		After   int64   `json:"messages_after"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("wcbench writers printed %q: %v", out, err)
	}
	r.writers["writers.etcdstore"] = writersResult{perSec: res.PerSec, changed: res.Changed, retries: res.Retries,
		lost: int64(total) - (res.After - res.Before)}
	return nil
}

// messageCount is a session's message count, from wc-export --format info.
func (r *runner) messageCount(store, id string) (int64, error) {
	out, err := r.output(r.wc("wc-export", "--store", store, id, "--format", "info"))
	if err != nil {
		return 0, err
	}
	var info struct {
		MessageCount int64 `json:"message_count"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return 0, fmt.Errorf("wc-export --format info printed %q: %v", out, err)
	}
	return info.MessageCount, nil
}

// commandWriters runs total wc-append commands, n at a time.
func (r *runner) commandWriters(store, id string, n, total int, direct bool) (writersResult, error) {
	before, err := r.messageCount(store, id)
	if err != nil {
		return writersResult{}, err
	}
	var mu sync.Mutex
	var first error
	next := 0
	var wg sync.WaitGroup
	began := time.Now()
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i, failed := next, first != nil
				next++
				mu.Unlock()
				if i >= total || failed {
					return
				}
				c := r.wc("wc-append", "--store", store, id, "--role", "user", "--text",
					fmt.Sprintf("writer %d, append %d", w, i))
				if direct {
					c = c.direct()
				}
				if _, err := r.output(c); err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(began)
	if first != nil {
		return writersResult{}, first
	}
	after, err := r.messageCount(store, id)
	if err != nil {
		return writersResult{}, err
	}
	return writersResult{perSec: float64(total) / took.Seconds(), changed: -1, retries: -1,
		lost: int64(total) - (after - before)}, nil
}

// etcdStatus is the cluster's members' database sizes in bytes: the
// largest file and the largest part of it in use.
func (r *runner) etcdStatus() (size, inUse int64, err error) {
	out, err := exec.Command("etcdctl", "--endpoints", r.c.Etcd, "endpoint", "status", "-w", "json").Output()
	if err != nil {
		return 0, 0, fmt.Errorf("etcdctl endpoint status: %v", err)
	}
	var members []struct {
		Status struct {
			Header struct {
				Revision int64 `json:"revision"`
			} `json:"header"`
			DBSize      int64 `json:"dbSize"`
			DBSizeInUse int64 `json:"dbSizeInUse"`
		}
	}
	if err := json.Unmarshal(out, &members); err != nil {
		return 0, 0, fmt.Errorf("etcdctl endpoint status printed %q: %v", out, err)
	}
	for _, m := range members {
		size, inUse = max(size, m.Status.DBSize), max(inUse, m.Status.DBSizeInUse)
		r.etcdRev = max(r.etcdRev, m.Status.Header.Revision)
	}
	return size, inUse, nil
}

// etcdSpace measures the space the cluster's members use for the
// sessions written to it, before and after compacting its key history
// and defragmenting, as docs/etcd.md tells a store's owner to schedule.
func (r *runner) etcdSpace() error {
	r.logf("  space: etcdctl endpoint status, compact, defrag --cluster")
	for _, set := range []string{"one", "many", "big"} {
		_ = r.stopServer(r.etcdStore(set))()
	}
	var err error
	if r.space.before, r.space.beforeInUse, err = r.etcdStatus(); err != nil {
		return err
	}
	for _, args := range [][]string{{"compact", strconv.FormatInt(r.etcdRev, 10)}, {"defrag", "--cluster"}} {
		c := exec.Command("etcdctl", append([]string{"--endpoints", r.c.Etcd, "--command-timeout", "5m"}, args...)...)
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("etcdctl %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	r.space.after, r.space.afterInUse, err = r.etcdStatus()
	return err
}
