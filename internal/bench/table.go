package bench

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"
)

// row is one line of the table: wc in one mode against its peers.
type row struct {
	label string
	key   string // the operation: append-one, ls, export, ci, ...
	mode  string // wc (resident, warm), wccold, wcdirect
	bytes int64  // > 0: the cells are MB/s of these bytes
}

var modeNames = map[string]string{"wc": "resident", "wccold": "resident, cold", "wcdirect": "direct"}

func (r *runner) rows() []row {
	var rows []row
	for _, m := range []string{"wc", "wccold", "wcdirect"} {
		how := modeNames[m]
		rows = append(rows,
			row{fmt.Sprintf("append, store of 1 session of 10 msgs (%s)", how), "append-one", m, 0},
			row{fmt.Sprintf("append, store of %s sessions (%s)", commas(r.c.Sessions), how), "append-many", m, 0},
			row{fmt.Sprintf("append, session of %s msgs (%s)", commas(r.c.Big), how), "append-big", m, 0})
	}
	big, batch := r.data["big"].JSONBytes, r.data["batch"].JSONBytes
	for _, m := range []string{"wc", "wcdirect"} {
		how := modeNames[m]
		compactHow := "default"
		if m == "wcdirect" {
			compactHow = "direct"
		}
		rows = append(rows,
			row{fmt.Sprintf("list newest 50 of %s (%s)", commas(r.c.Sessions), how), "ls", m, 0},
			row{fmt.Sprintf("list --project (%d of %s), newest 50 (%s)", r.data["many"].ProjectSessions,
				commas(r.c.Sessions), how), "lsp", m, 0},
			row{fmt.Sprintf("export markdown, %.1f MB session (%s)", float64(big)/1e6, how), "export", m, big},
			row{fmt.Sprintf("compact %s sessions, %.1f MB (%s)", commas(r.c.Compact), float64(batch)/1e6, compactHow),
				"compact", m, batch},
			row{fmt.Sprintf("search %q in %s sessions (%s)", r.c.Grep, commas(r.c.Sessions), how), "grep", m, 0})
	}
	return append(rows,
		row{fmt.Sprintf("agent loop: an append every %s, %s sessions (cold)", r.c.AgentPause, commas(r.c.Sessions)),
			"agent", "wc", 0},
		row{fmt.Sprintf("cron job: compact --all, %s compacted sessions (cold)", commas(r.c.Compact)), "cron", "wc", 0},
		row{fmt.Sprintf("CI bot: new, %d appends, export (cold)", ciAppends), "ci", "wc", 0})
}

// commas writes n with thousands separators: 10000 -> 10,000.
func commas(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// median of key's times, -1 when it was not measured.
func (r *runner) median(key string) float64 {
	if s, ok := r.samples[key]; ok {
		return s.median()
	}
	return -1
}

func (r *runner) mean(key string) float64 {
	if s, ok := r.samples[key]; ok {
		return mean(s.Times)
	}
	return -1
}

func (r *runner) peak(key string) int64 {
	if s, ok := r.samples[key]; ok {
		return s.peakRSS()
	}
	return -1
}

func (r *runner) server(key string) int64 {
	if s, ok := r.samples[key]; ok && s.Server > 0 {
		return s.Server
	}
	return -1
}

func cell(sec float64, bytes int64) string {
	switch {
	case sec < 0:
		return "n/a"
	case bytes > 0:
		return fmt.Sprintf("%.1f MB/s", float64(bytes)/1e6/sec)
	case sec < 0.01:
		return fmt.Sprintf("%.2f ms", sec*1000)
	}
	return fmt.Sprintf("%.1f ms", sec*1000)
}

func ratio(other, wc float64) string {
	switch {
	case other < 0 || wc <= 0:
		return "n/a"
	case other/wc >= 10:
		return fmt.Sprintf("%.0fx", other/wc)
	}
	return fmt.Sprintf("%.2fx", other/wc)
}

func mib(kib int64) string {
	if kib < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", float64(kib)/1024)
}

// spread is ", rounds LO-HIx": the quartiles of the ratios a/b of the
// rounds the two keys took turns in, or "" with fewer than two rounds.
func (r *runner) spread(a, b string) string {
	sa, sb := r.samples[a], r.samples[b]
	if sa == nil || sb == nil {
		return ""
	}
	var ratios []float64
	for i := range min(len(sa.Rounds), len(sb.Rounds)) {
		if sb.Rounds[i] > 0 {
			ratios = append(ratios, sa.Rounds[i]/sb.Rounds[i])
		}
	}
	n := len(ratios)
	if n < 2 {
		return ""
	}
	slices.Sort(ratios)
	return fmt.Sprintf(", rounds %.2f-%.2fx", ratios[(n+3)/4-1], ratios[(3*n+3)/4-1])
}

func verdict(ok bool, target string) string {
	if ok {
		return target + " ok"
	}
	return target + " FAIL"
}

// target is the row's verdict against its targets, and its RSS limit.
func (r *runner) target(w row) string {
	k, m := w.key, w.mode
	wc, peer, sql := r.median(k+"."+m), r.median(k+".jq"), r.median(k+".sql")
	var t string
	atMostSQLite := func() string {
		t := verdict(sql > 0 && wc <= sql, "<=sqlite")
		if m == "wc" {
			t += r.spread(k+".sql", k+".wc")
		}
		return t
	}
	switch k {
	case "append-one", "append-many", "append-big":
		t = atMostSQLite()
		// Flat: median and mean (which carries the periodic level-0
		// flatten) within 1.25x of those of the small store, same mode.
		if one, oneMean := r.median("append-one."+m), r.mean("append-one."+m); k != "append-one" && one > 0 && oneMean > 0 {
			rm, ra := wc/one, r.mean(k+"."+m)/oneMean
			spread := ""
			if m == "wc" {
				spread = r.spread(k+".wc", "append-one.wc")
			}
			t += fmt.Sprintf(", flat %s (median %.2fx, mean %.2fx%s)", map[bool]string{true: "ok", false: "FAIL"}[rm <= 1.25 && ra <= 1.25],
				rm, ra, spread)
		}
	case "ls", "lsp", "agent", "cron", "ci":
		t = atMostSQLite()
	case "export":
		t = verdict(wc > 0 && peer/wc >= 5, ">=5x jq")
	case "compact":
		t = verdict(wc > 0 && float64(w.bytes)/1e6/wc >= 100, ">=100 MB/s")
	case "grep":
		t = verdict(wc > 0 && peer/wc >= 10, ">=10x grep")
	}
	limit := int64(64)
	if k == "compact" || k == "cron" {
		limit = 256
	}
	peak := max(r.peak(k+"."+m), r.server(k+"."+m))
	return t + "; " + verdict(peak >= 0 && peak/1024 < limit, fmt.Sprintf("RSS<%d", limit))
}

func (r *runner) printTable() error {
	header := []string{"operation", "wc", "jsonl+jq", "sqlite3", "jq/wc", "sqlite/wc", "RSS wc", "RSS res", "RSS jq", "RSS sql", "target"}
	table := [][]string{header}
	for _, w := range r.rows() {
		k, m := w.key, w.mode
		wc, peer, sql := r.median(k+"."+m), r.median(k+".jq"), r.median(k+".sql")
		table = append(table, []string{w.label, cell(wc, w.bytes), cell(peer, w.bytes), cell(sql, w.bytes), ratio(peer, wc), ratio(sql, wc),
			mib(r.peak(k + "." + m)), mib(r.server(k + "." + m)), mib(r.peak(k + ".jq")), mib(r.peak(k + ".sql")), r.target(w)})
	}
	out := r.c.Out
	mode := "full"
	if r.c.Quick {
		mode = "quick"
	}
	fmt.Fprintf(out, "\nwc benchmark, %s, %d CPUs, load average %s (at start: %s)\n",
		time.Now().UTC().Format("2006-01-02T15:04Z"), runtime.NumCPU(), loadAverage(), r.load)
	fmt.Fprintf(out, "tree %s; mode: %s; medians of %d runs in %d rounds (compared pairs) / %d runs (other fast) / "+
		"%d runs (export, compact, search); Go exec, no shell; sqlite synchronous=%s\n",
		orNA(r.c.Rev), mode, r.c.TurnRuns, r.c.Rounds, r.c.Runs, r.c.SlowRuns, r.c.SQLiteSync)
	writeColumns(out, table)
	fmt.Fprint(out, legend(r.c))
	fmt.Fprint(out, "sqlite3 INSERT with synchronous=FULL (fsyncs its commit, as wc syncs before printing):")
	for _, set := range []string{"one", "many", "big"} {
		if t := r.median("append-" + set + ".sqlfull"); t > 0 {
			fmt.Fprintf(out, " %s %.2f ms;", set, t*1000)
		}
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "checks: %s\n", strings.Join(r.checks, "; "))
	keys := make([]string, 0, len(r.samples))
	for k := range r.samples {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		s := r.samples[k]
		if len(s.Times) == 0 {
			continue
		}
		if med, top := s.median(), slices.Max(s.Times); top > 5*med && top > 0.05 {
			fmt.Fprintf(out, "note: %s median %.1f ms, mean %.1f ms, max %.1f ms\n", k, med*1000, mean(s.Times)*1000, top*1000)
		}
		if peak, med := s.peakRSS(), s.medianRSS(); peak > 2*med {
			fmt.Fprintf(out, "note: %s peak RSS %.0f MiB, median %.0f MiB\n", k, float64(peak)/1024, float64(med)/1024)
		}
	}
	r.printEtcd(out)
	for _, n := range r.notes {
		fmt.Fprintf(out, "note: %s\n", n)
	}
	fmt.Fprintf(out, "took %.0f s; raw figures in %s\n", time.Since(r.began).Seconds(), r.path("samples.json"))
	return nil
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}

// writeColumns prints table with its columns aligned: the first to the
// left, the others to the right, the last as it is; a rule under the
// header.
func writeColumns(out io.Writer, table [][]string) {
	widths := make([]int, len(table[0]))
	for _, line := range table {
		for i, c := range line {
			widths[i] = max(widths[i], len(c))
		}
	}
	for n, line := range table {
		var b strings.Builder
		for i, c := range line {
			switch {
			case i == len(line)-1:
				b.WriteString(c)
			case i == 0:
				fmt.Fprintf(&b, "%-*s  ", widths[i], c)
			default:
				fmt.Fprintf(&b, "%*s  ", widths[i], c)
			}
		}
		fmt.Fprintln(out, b.String())
		if n == 0 {
			var rule []string
			for _, w := range widths {
				rule = append(rule, strings.Repeat("-", w))
			}
			fmt.Fprintln(out, strings.Join(rule, "  "))
		}
	}
}

func legend(c Config) string {
	return `wc, jsonl+jq, sqlite3: median wall time, or MB of message JSON per second. jq/wc, sqlite/wc: the
other's time over wc's (above 1: wc is faster). wc modes: resident (the default; a resident store
process started by the warmup serves the timed runs), resident, cold (stopped before each run, so
each run starts one), direct (WC_DIRECT=1). RSS: peak resident set in MiB (GNU time %M, the largest
of the runs); RSS res: the resident process's own peak (VmHWM, a fresh process per operation).
Search: wc-ls --grep, grep -rlF over the JSONL files (in the jsonl+jq column), an SQL instr().
Usage patterns (each run from no resident process, taking turns with sqlite3): the agent loop
appends once after a pause past the idle timeout; the cron job runs wc-compact --all over a store
it compacted before; the CI bot runs wc-new, 10 wc-append and wc-export --format markdown (sqlite3:
an INSERT of the session, 10 INSERTs, the markdown query; one process each).
Targets: append <= sqlite3 INSERT and within 1.25x of the 10-message store (median and mean: the
mean carries the level-0 flatten every 8th direct writer pays); list <= sqlite3; export >= 5x jq;
compaction >= 100 MB/s; search >= 10x grep (issue 25); usage patterns <= sqlite3; RSS < 64 MiB
(batch < 256 MiB), the resident process's included.
` + fmt.Sprintf(`rounds: the quartiles of the ratio of each round's medians (the commands a target compares take
%d turns; a usage pattern's runs are rounds of one); a range that spans 1.00x (or 1.25x) is a
verdict within the machine's noise.
`, c.Rounds)
}
