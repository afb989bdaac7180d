package bench

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wctoolkit/wc/internal/bench/gen"
)

// programs are the jq and SQL programs of the peers: the markdown of
// wc-export and the compaction of wc-compact --max-tokens 100000.
//
//go:embed programs
var programs embed.FS

const appendText = "please look at the failing login test in internal/auth and fix it"

// runner holds one run's state.
type runner struct {
	c       Config
	null    *os.File
	dir     string // Config.Work, absolute
	cmdDir  string // the peers' programs, as written for this run
	samples map[string]*sample
	data    map[string]*gen.Summary // by data set: one, many, big, batch
	checks  []string
	notes   []string
	began   time.Time
	load    string
	rand    *rand.Rand // ids of the sqlite3 side's new sessions
	rssFile string     // GNU time's output
	writers map[string]writersResult
	etcdRev int64 // the cluster's newest revision
	// space is the cluster's database size and the part in use: at the
	// start (base), after the etcd rows, and after compacting and
	// defragmenting it.
	space    struct{ base, before, beforeInUse, after, afterInUse int64 }
	markdown []byte   // the markdown export of the long session, before any append
	top50    []string // the ids of the newest 50 sessions, sorted, before any append
}

// Run runs the benchmark c describes and prints its table to c.Out.
func Run(c Config) error {
	if c.Bin == "" || c.Work == "" {
		return errors.New("-bin and -work are required")
	}
	if err := preflight(c.Etcd != ""); err != nil {
		return err
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	r := &runner{c: c, null: null, samples: map[string]*sample{}, data: map[string]*gen.Summary{},
		began: time.Now(), load: loadAverage(), rand: rand.New(rand.NewPCG(c.Seed, 2))}
	if r.dir, err = absolute(c.Work); err != nil {
		return err
	}
	if r.c.Bin, err = absolute(c.Bin); err != nil {
		return err
	}
	r.cmdDir = filepath.Join(r.dir, "cmd")
	r.rssFile = filepath.Join(r.dir, "rss")
	if err := os.MkdirAll(r.cmdDir, 0o755); err != nil {
		return err
	}
	r.logf("work directory %s; load average: %s", r.dir, r.load)
	if c.Etcd != "" {
		if r.space.base, _, err = r.etcdStatus(); err != nil {
			return err
		}
	}
	for _, step := range []func() error{r.generate, r.writePrograms, r.export, r.compact, r.list, r.appends,
		r.search, r.agentLoop, r.cronJob, r.ciBot, r.etcd} {
		if err := step(); err != nil {
			return err
		}
	}
	raw, _ := json.MarshalIndent(r.samples, "", " ")
	if err := os.WriteFile(filepath.Join(r.dir, "samples.json"), raw, 0o644); err != nil {
		return err
	}
	return r.printTable()
}

// preflight says which of the peers' programs are missing.
func preflight(etcd bool) error {
	var missing []string
	progs := []string{"jq", "sqlite3", "grep", "sh", "cp", gnuTime}
	if etcd {
		progs = append(progs, "etcdctl")
	}
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		out, err := exec.Command("sqlite3", ":memory:", `select '{"a":[1]}' ->> '$.a[0]'`).Output()
		if err != nil || strings.TrimSpace(string(out)) != "1" {
			missing = append(missing, "sqlite3(3.38+ with JSON1)")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing: %s (Debian: apt-get install -y jq sqlite3 time)", strings.Join(missing, " "))
	}
	return nil
}

func absolute(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "n/a"
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.c.Log, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func (r *runner) wc(name string, args ...string) command {
	return command{args: append([]string{filepath.Join(r.c.Bin, name)}, args...)}
}

func (r *runner) sqlite(db, file string) command {
	return command{args: []string{"sqlite3", "-batch", db, ".read " + file}}
}

// path is a path under the work directory.
func (r *runner) path(parts ...string) string {
	return filepath.Join(append([]string{r.dir}, parts...)...)
}

// store, jsonl and db are a data set's three copies of the same sessions.
func (r *runner) store(set string) string { return r.path(set, "wc") }
func (r *runner) jsonl(set string) string { return r.path(set, "jsonl") }
func (r *runner) db(set string) string    { return r.path(set, "db.sqlite") }

func (r *runner) generate() error {
	sets := []struct {
		name               string
		sessions, messages int
		first              int
	}{
		{"one", 1, 10, 0},
		{"many", r.c.Sessions, 0, 10},
		{"big", 1, r.c.Big, 0},
		{"batch", r.c.Compact, 0, 0},
	}
	for _, s := range sets {
		r.logf("generating %s: %d sessions", s.name, s.sessions)
		if err := os.RemoveAll(r.path(s.name)); err != nil {
			return err
		}
		if err := os.MkdirAll(r.path(s.name), 0o755); err != nil {
			return err
		}
		gc := gen.NewConfig()
		gc.Sessions, gc.Messages, gc.FirstMessages, gc.Seed = s.sessions, s.messages, s.first, r.c.Seed
		gc.WCDir, gc.JSONLDir, gc.SQLiteFile = r.store(s.name), r.jsonl(s.name), r.db(s.name)
		gc.EtcdURLs, gc.EtcdWriters = r.etcdURLs(s.name), 8
		gc.Progress = r.c.Log
		sum, err := gen.Generate(&gc)
		if err != nil {
			return fmt.Errorf("generating %s: %w", s.name, err)
		}
		r.data[s.name] = sum
		r.logf("  %s: %d sessions, %d messages, %d MB, %.1f s", s.name, sum.Sessions, sum.Messages,
			sum.JSONBytes/1e6, sum.Seconds)
	}
	if err := copyTree(r.path("batch"), r.path("batch.orig")); err != nil {
		return err
	}
	// The generated stores are over a GB of dirty pages: left to the
	// kernel's writeback, they were written out during the first timed
	// rows, and every fsync waited for them.
	r.logf("writing the generated data to disk")
	syscall.Sync()
	return nil
}

func copyTree(from, to string) error {
	if err := os.RemoveAll(to); err != nil {
		return err
	}
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		return fmt.Errorf("cp -a %s %s: %v: %s", from, to, err, out)
	}
	return nil
}

// writePrograms writes the peers' programs into the work directory, with
// this run's ids and settings.
func (r *runner) writePrograms() error {
	read := func(name string) string {
		b, err := programs.ReadFile("programs/" + name)
		if err != nil {
			panic(err) // embedded
		}
		return string(b)
	}
	line := fmt.Sprintf(`{"role":"user","content":"%s","created_at":"2026-08-21T12:00:00Z"}`, appendText)
	project := r.data["many"].Project
	files := map[string]string{
		"md.jq":       read("markdown.jq"),
		"md.sql":      markdownSQL(read("markdown.sql"), r.data["big"].FirstID),
		"compact.jq":  read("compact.jq"),
		"compact.sql": strings.ReplaceAll(read("compact.sql"), "@SYNC@", r.c.SQLiteSync),
		"jq-compact.sh": fmt.Sprintf(`for f in "$1"/sessions/*.jsonl; do
	jq -c -s -f %q "$f" >"$f.tmp" && mv "$f.tmp" "$f"
done
`, filepath.Join(r.cmdDir, "compact.jq")),
		"jq-ls.sh":         `jq -c -s 'sort_by(.updated) | reverse | .[:50][]' "$1"/meta/*.json` + "\n",
		"jq-ls-project.sh": `jq -c -s --arg p "$2" 'map(select(.project == $p or (.project | startswith($p + "/")))) | sort_by(.updated) | reverse | .[:50][]' "$1"/meta/*.json` + "\n",
		"ls.sql":           "SELECT id, title, project, created, updated FROM sessions ORDER BY updated DESC LIMIT 50;\n",
		"ls-project.sql": fmt.Sprintf("SELECT id, title, project, created, updated FROM sessions\n"+
			"WHERE project = '%s' OR substr(project, 1, %d) = '%s/'\nORDER BY updated DESC LIMIT 50;\n",
			project, len(project)+1, project),
		"jsonl-append.sh": fmt.Sprintf("printf '%%s\\n' '%s' >>\"$1\"\n", line),
		"grep.sql":        fmt.Sprintf("SELECT DISTINCT session_id FROM messages WHERE instr(json, '%s');\n", r.c.Grep),
	}
	for _, set := range []string{"one", "many", "big"} {
		id := r.data[set].FirstID
		files["append-"+set+".sql"] = appendSQL(r.c.SQLiteSync, id, line)
		files["append-"+set+"-full.sql"] = appendSQL("FULL", id, line)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(r.cmdDir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func appendSQL(sync, id, line string) string {
	return fmt.Sprintf("PRAGMA synchronous=%s;\nINSERT INTO messages VALUES('%s', "+
		"(SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = '%s'), '%s');\n", sync, id, id, line)
}

// markdownSQL expands the placeholders of programs/markdown.sql: a
// recursive step may not use a subquery, so @L@ (the line), @T@ (it
// without leading spaces) and @N@ (the run of its first character) are
// written out.
func markdownSQL(text, id string) string {
	text = strings.ReplaceAll(text, "@N@", "(length(@T@) - length(ltrim(@T@, substr(@T@, 1, 1))))")
	text = strings.ReplaceAll(text, "@T@", "ltrim(@L@, ' ')")
	text = strings.ReplaceAll(text, "@L@", "rtrim(substr(rest, 1, instr(rest, char(10)) - 1), char(13))")
	return strings.ReplaceAll(text, "SESSION_ID", id)
}

func (r *runner) prog(name string) string { return filepath.Join(r.cmdDir, name) }

func (r *runner) markdownJQ(set, id string) command {
	return command{args: []string{"jq", "-n", "-j", "--slurpfile", "meta", filepath.Join(r.jsonl(set), "meta", id+".json"),
		"-f", r.prog("md.jq"), filepath.Join(r.jsonl(set), "sessions", id+".jsonl")}}
}

func (r *runner) markdownSQLite(db, file string) command {
	return command{args: []string{"sqlite3", "-batch", "-list", "-noheader", "-newline", "", db, ".read " + file}}
}

func (r *runner) export() error {
	id := r.data["big"].FirstID
	r.logf("export: markdown of one session of %d messages", r.c.Big)
	exp := r.wc("wc-export", "--store", r.store("big"), id, "--format", "markdown")
	r.stopResident(r.store("big"))()
	if err := r.slow("export.wc", 1, nil, exp); err != nil {
		return err
	}
	r.residentRSS("export.wc", r.store("big"))
	if err := r.slow("export.wcdirect", 0, nil, exp.direct()); err != nil {
		return err
	}
	jq := r.markdownJQ("big", id)
	sql := r.markdownSQLite(r.db("big"), r.prog("md.sql"))
	if err := r.slow("export.jq", 0, nil, jq); err != nil {
		return err
	}
	if err := r.slow("export.sql", 0, nil, sql); err != nil {
		return err
	}
	var outs [3][]byte
	for i, c := range []command{exp, jq, sql} {
		out, err := r.output(c)
		if err != nil {
			return err
		}
		outs[i] = out
	}
	r.markdown = outs[0]
	if bytes.Equal(outs[0], outs[1]) && bytes.Equal(outs[0], outs[2]) {
		r.checks = append(r.checks, fmt.Sprintf("markdown: identical (%d bytes)", len(outs[0])))
	} else {
		r.keep("md", outs[:]...)
		r.checks = append(r.checks, "markdown: DIFFERENT (see "+r.path("results", "md.*")+")")
	}
	return nil
}

// keep writes outputs that differ to results/NAME.wc, .jq and .sql.
func (r *runner) keep(name string, outs ...[]byte) {
	_ = os.MkdirAll(r.path("results"), 0o755)
	for i, ext := range []string{"wc", "jq", "sql"} {
		if i < len(outs) {
			_ = os.WriteFile(r.path("results", name+"."+ext), outs[i], 0o644)
		}
	}
}

// restore puts back a fresh copy of the batch's store, JSONL files or
// database; removing the store stops its resident process.
func (r *runner) restore(part string) func() error {
	return func() error {
		if part == "db.sqlite" {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if err := os.Remove(r.path("batch", part+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
			}
		}
		return copyTree(r.path("batch.orig", part), r.path("batch", part))
	}
}

func (r *runner) compactCommand() command {
	return r.wc("wc-compact", "--store", r.store("batch"), "--all", "--max-tokens", strconv.Itoa(r.c.MaxTokens))
}

func (r *runner) compact() error {
	r.logf("compact: --all --max-tokens %d over %d sessions", r.c.MaxTokens, r.c.Compact)
	c := r.compactCommand()
	if err := r.slow("compact.wc", 0, r.restore("wc"), c); err != nil {
		return err
	}
	r.residentRSS("compact.wc", r.store("batch"))
	if err := r.slow("compact.wcdirect", 0, r.restore("wc"), c.direct()); err != nil {
		return err
	}
	jq := command{args: []string{"sh", r.prog("jq-compact.sh"), r.jsonl("batch")}}
	if err := r.slow("compact.jq", 0, r.restore("jsonl"), jq); err != nil {
		return err
	}
	if err := r.slow("compact.sql", 0, r.restore("db.sqlite"), r.sqlite(r.db("batch"), r.prog("compact.sql"))); err != nil {
		return err
	}
	// The last timed run of each left its compacted copy: compare them.
	files, _ := filepath.Glob(filepath.Join(r.jsonl("batch"), "sessions", "*.jsonl"))
	n, same := 0, 0
	for _, f := range files[:min(50, len(files))] {
		id := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		exp, err := r.output(command{args: []string{"sh", "-c", `"$0" --store "$1" "$2" --format jsonl | jq -c .message`,
			filepath.Join(r.c.Bin, "wc-export"), r.store("batch"), id}})
		if err != nil {
			return err
		}
		sql, err := r.output(command{args: []string{"sqlite3", "-batch", r.db("batch"),
			"SELECT json FROM messages WHERE session_id = '" + id + "' ORDER BY seq"}})
		if err != nil {
			return err
		}
		file, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		n++
		if bytes.Equal(exp, file) && bytes.Equal(exp, sql) {
			same++
		}
	}
	r.checks = append(r.checks, fmt.Sprintf("compacted sessions identical: %d of the first %d", same, n))
	return nil
}

func (r *runner) list() error {
	many := r.store("many")
	project := r.data["many"].Project
	r.logf("list: the newest 50 of %d sessions, and of project %s", r.c.Sessions, project)
	for _, l := range []struct {
		key string
		wc  command
		sql string
		jq  []string
	}{
		{"ls", r.wc("wc-ls", "--store", many, "-n", "50"), "ls.sql", []string{"jq-ls.sh", r.jsonl("many")}},
		{"lsp", r.wc("wc-ls", "--store", many, "-n", "50", "--project", project), "ls-project.sql",
			[]string{"jq-ls-project.sh", r.jsonl("many"), project}},
	} {
		r.stopResident(many)()
		sql := command{args: []string{"sqlite3", "-batch", "-json", r.db("many"), ".read " + r.prog(l.sql)}}
		if err := r.turns(turn{l.key + ".wc", l.wc}, turn{l.key + ".sql", sql}); err != nil {
			return err
		}
		r.residentRSS(l.key+".wc", many)
		if err := r.fast(l.key+".wcdirect", l.wc.direct()); err != nil {
			return err
		}
		jq := command{args: append([]string{"sh", r.prog(l.jq[0])}, l.jq[1:]...)}
		if err := r.fast(l.key+".jq", jq); err != nil {
			return err
		}
	}
	ids := func(c command, field func(line string) string) ([]string, error) {
		out, err := r.output(c)
		if err != nil {
			return nil, err
		}
		var v []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			v = append(v, field(line))
		}
		slices.Sort(v)
		return v, nil
	}
	jsonID := listedID
	wcIDs, err := ids(r.wc("wc-ls", "--store", many, "-n", "50"), jsonID)
	if err != nil {
		return err
	}
	jqIDs, err := ids(command{args: []string{"sh", r.prog("jq-ls.sh"), r.jsonl("many")}}, jsonID)
	if err != nil {
		return err
	}
	sqlIDs, err := ids(r.sqlite(r.db("many"), r.prog("ls.sql")), func(line string) string {
		id, _, _ := strings.Cut(line, "|")
		return id
	})
	if err != nil {
		return err
	}
	r.top50 = wcIDs
	if slices.Equal(wcIDs, jqIDs) && slices.Equal(wcIDs, sqlIDs) {
		r.checks = append(r.checks, "top-50 ids: identical")
	} else {
		r.checks = append(r.checks, "top-50 ids: DIFFERENT")
	}
	return nil
}

// listedID is the id of a line wc-ls printed.
func listedID(line string) string {
	var s struct{ ID string }
	_ = json.Unmarshal([]byte(line), &s)
	return s.ID
}

// listedIDs are the ids c (a wc-ls) printed, sorted.
func (r *runner) listedIDs(c command) ([]string, error) {
	out, err := r.output(c)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		ids = append(ids, listedID(line))
	}
	slices.Sort(ids)
	return ids, nil
}

func (r *runner) appendCommand(set string) command {
	return r.wc("wc-append", "--store", r.store(set), r.data[set].FirstID, "--role", "user", "--text", appendText)
}

func (r *runner) appends() error {
	r.logf("append: one user message per process")
	// The resident appends of the three stores and the sqlite3 INSERTs
	// (both synchronous settings) take turns: the target's ratio and its
	// flatness compare them.
	var ts []turn
	for _, set := range []string{"one", "many", "big"} {
		r.stopResident(r.store(set))()
		ts = append(ts, turn{"append-" + set + ".wc", r.appendCommand(set)},
			turn{"append-" + set + ".sql", r.sqlite(r.db(set), r.prog("append-"+set+".sql"))},
			turn{"append-" + set + ".sqlfull", r.sqlite(r.db(set), r.prog("append-"+set+"-full.sql"))})
	}
	if err := r.turns(ts...); err != nil {
		return err
	}
	for _, set := range []string{"one", "many", "big"} {
		r.residentRSS("append-"+set+".wc", r.store(set))
	}
	for _, set := range []string{"one", "many", "big"} {
		c := r.appendCommand(set)
		if err := r.bench("append-"+set+".wccold", r.c.Runs, 0, r.stopResident(r.store(set)), c); err != nil {
			return err
		}
		if err := r.fast("append-"+set+".wcdirect", c.direct()); err != nil {
			return err
		}
		file := filepath.Join(r.jsonl(set), "sessions", r.data[set].FirstID+".jsonl")
		if err := r.fast("append-"+set+".jq", command{args: []string{"sh", r.prog("jsonl-append.sh"), file}}); err != nil {
			return err
		}
	}
	return nil
}

// search finds the sessions holding a text: wc-ls --grep, grep -rl over
// the JSONL files, and an SQL instr over the messages.
func (r *runner) search() error {
	many := r.store("many")
	r.logf("search: the sessions of %d holding %q", r.c.Sessions, r.c.Grep)
	wc := r.wc("wc-ls", "--store", many, "-n", "0", "--grep", r.c.Grep)
	r.stopResident(many)()
	if err := r.slow("grep.wc", 1, nil, wc); err != nil {
		return err
	}
	r.residentRSS("grep.wc", many)
	if err := r.slow("grep.wcdirect", 0, nil, wc.direct()); err != nil {
		return err
	}
	grep := command{args: []string{"grep", "-rlF", "--", r.c.Grep, filepath.Join(r.jsonl("many"), "sessions")},
		noMatchOK: true}
	if err := r.slow("grep.jq", 0, nil, grep); err != nil {
		return err
	}
	if err := r.slow("grep.sql", 0, nil, r.sqlite(r.db("many"), r.prog("grep.sql"))); err != nil {
		return err
	}
	count := func(c command, field func(string) string) (map[string]bool, error) {
		out, err := r.output(c)
		if err != nil {
			return nil, err
		}
		found := map[string]bool{}
		for _, line := range strings.Split(string(out), "\n") {
			if line != "" {
				found[field(line)] = true
			}
		}
		return found, nil
	}
	wcFound, err := count(wc, func(line string) string {
		var s struct{ ID string }
		_ = json.Unmarshal([]byte(line), &s)
		return s.ID
	})
	if err != nil {
		return err
	}
	grepFound, err := count(grep, func(line string) string { return strings.TrimSuffix(filepath.Base(line), ".jsonl") })
	if err != nil {
		return err
	}
	sqlFound, err := count(r.sqlite(r.db("many"), r.prog("grep.sql")), func(line string) string { return line })
	if err != nil {
		return err
	}
	same := len(wcFound) == len(grepFound) && len(wcFound) == len(sqlFound)
	for id := range wcFound {
		same = same && grepFound[id] && sqlFound[id]
	}
	verdict := "identical"
	if !same {
		verdict = fmt.Sprintf("DIFFERENT (grep %d, sqlite3 %d)", len(grepFound), len(sqlFound))
	}
	r.checks = append(r.checks, fmt.Sprintf("sessions found by search: %s (%d)", verdict, len(wcFound)))
	return nil
}
