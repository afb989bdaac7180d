package bench

import (
	"fmt"
	"io"
)

// etcdBytes is the message JSON written to the cluster: every data set,
// the batch once per copy.
func (r *runner) etcdBytes() int64 {
	n := r.data["one"].JSONBytes + r.data["many"].JSONBytes + r.data["big"].JSONBytes
	return n + int64(r.c.SlowRuns)*r.data["batch"].JSONBytes
}

func perSec(v float64) string {
	if v <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f/s", v)
}

// printEtcd prints the etcd column: each operation on etcd beside the
// same on a directory (Badger) and sqlite3's, all of this run.
func (r *runner) printEtcd(out io.Writer) {
	if r.c.Etcd == "" {
		return
	}
	table := [][]string{{"operation", "etcd", "badger", "sqlite3", "badger/etcd", "sqlite/etcd", "RSS etcd", "RSS res", "target"}}
	rss := func(key string) []string { return []string{mib(r.peak(key)), mib(r.server(key))} }
	for _, set := range []struct{ key, label string }{
		{"append-one", "append, store of 1 session of 10 msgs (resident)"},
		{"append-many", fmt.Sprintf("append, store of %s sessions (resident)", commas(r.c.Sessions))},
		{"append-big", fmt.Sprintf("append, session of %s msgs (resident)", commas(r.c.Big))},
	} {
		e, b, s := r.median(set.key+".etcd"), r.median(set.key+".wc"), r.median(set.key+".sqletcd")
		t := verdict(e > 0 && s > 0 && e <= 3*s, "<=3x sqlite") + r.spread(set.key+".etcd", set.key+".sqletcd")
		if one := r.median("append-one.etcd"); set.key != "append-one" && one > 0 {
			t += fmt.Sprintf(", flat %s (%.2fx%s)", map[bool]string{true: "ok", false: "FAIL"}[e/one <= 1.25], e/one,
				r.spread(set.key+".etcd", "append-one.etcd"))
		}
		table = append(table, append([]string{set.label, cell(e, 0), cell(b, 0), cell(s, 0), ratio(b, e), ratio(s, e)},
			append(rss(set.key+".etcd"), t)...))
	}
	for _, l := range []struct{ key, label string }{
		{"ls", fmt.Sprintf("list newest 50 of %s (resident)", commas(r.c.Sessions))},
		{"lsp", fmt.Sprintf("list --project (%d of %s), newest 50 (resident)", r.data["many"].ProjectSessions, commas(r.c.Sessions))},
	} {
		e, b, s := r.median(l.key+".etcd"), r.median(l.key+".wc"), r.median(l.key+".sql")
		table = append(table, append([]string{l.label, cell(e, 0), cell(b, 0), cell(s, 0), ratio(b, e), ratio(s, e)},
			append(rss(l.key+".etcd"), verdict(e > 0 && e <= 0.020, "<=20 ms"))...))
	}
	big, batch := r.data["big"].JSONBytes, r.data["batch"].JSONBytes
	for _, x := range []struct {
		key, label string
		bytes      int64
	}{
		{"export", fmt.Sprintf("export markdown, %.1f MB session (resident)", float64(big)/1e6), big},
		{"compact", fmt.Sprintf("compact %s sessions, %.1f MB (--all)", commas(r.c.Compact), float64(batch)/1e6), batch},
	} {
		e, b, s := r.median(x.key+".etcd"), r.median(x.key+".wc"), r.median(x.key+".sql")
		table = append(table, append([]string{x.label, cell(e, x.bytes), cell(b, x.bytes), cell(s, x.bytes), ratio(b, e), ratio(s, e)},
			append(rss(x.key+".etcd"), "(no target)")...))
	}
	for _, w := range []struct{ key, badger, label string }{
		{"writers.etcd", "writers.wc", "commands, resident"},
		{"writers.etcddirect", "", "commands, a wc-store each"},
		{"writers.etcdstore", "", "store level, a connection each"},
	} {
		e, ok := r.writers[w.key]
		if !ok {
			continue
		}
		b := r.writers[w.badger]
		t := verdict(e.lost == 0, "none lost or doubled")
		if b.perSec > 0 {
			t = verdict(e.lost == 0 && b.lost == 0, "none lost or doubled")
		}
		if e.changed >= 0 {
			t += fmt.Sprintf("; %d commits refused as changed (%.2f per append), %d transactions run again",
				e.changed, float64(e.changed)/float64(r.c.WriterAppends), e.retries)
		} else {
			t += "; retries not visible to a command"
		}
		table = append(table, []string{fmt.Sprintf("%d writers, %d appends to one session (%s)", r.c.Writers, r.c.WriterAppends, w.label),
			perSec(e.perSec), perSec(b.perSec), "n/a", ratio(e.perSec, b.perSec), "n/a", "n/a", "n/a", t})
	}
	data := r.etcdBytes()
	for _, sp := range []struct {
		label       string
		size, inUse int64
	}{
		{"space per GB of sessions, before compaction and defrag", r.space.before, r.space.beforeInUse},
		{"space per GB of sessions, after compaction and defrag", r.space.after, r.space.afterInUse},
	} {
		if sp.size <= 0 || data <= 0 {
			continue
		}
		sp.size -= r.space.base
		sp.inUse -= r.space.base
		table = append(table, []string{sp.label, fmt.Sprintf("%.2f GB", float64(sp.size)/float64(data)), "n/a", "n/a", "n/a", "n/a", "n/a", "n/a",
			fmt.Sprintf("dbSize %.0f MB, in use %.0f MB (%.2f GB per GB), for %.0f MB of JSONL", float64(sp.size)/1e6,
				float64(sp.inUse)/1e6, float64(sp.inUse)/float64(data), float64(data)/1e6)})
	}
	fmt.Fprintf(out, "\netcd column: a 3-member etcd cluster at %s (this run's stores under %s), load average %s\n",
		r.c.Etcd, r.etcdPrefix(), loadAverage())
	writeColumns(out, table)
	fmt.Fprint(out, `etcd, badger, sqlite3: median wall time, MB of message JSON per second, or appends per second;
badger is the resident row of the table above; badger/etcd, sqlite/etcd: the other's time over
etcd's (above 1: etcd is faster). The appends on etcd take turns with sqlite3's INSERT on the same
data (its column), the spread is of etcd/sqlite3 per round. Writers: wc-append commands n at a
time (resident: one machine's resident process lets one writer at a time through; a wc-store
each: WC_DIRECT=1, as commands on n machines), or wcbench writers (package writers: n handles
through the revision check and RetryChanged); "none lost or doubled": the session's message count
grew by exactly the appends. Space: etcdctl endpoint status, the largest member's dbSize and
dbSizeInUse, less its dbSize at the start of the run, over the message JSON of every data set written to the cluster (the batch once per
copy; its compaction rewrote some), before and after etcdctl compact and defrag --cluster.
Targets (issue 26): append within 3x of sqlite3's INSERT, flat (within 1.25x of the 1-session
store's); listing <= 20 ms.
`)
}
