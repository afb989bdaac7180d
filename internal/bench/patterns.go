package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/wctoolkit/wc/internal/bench/gen"
)

// The usage patterns of issue 25, each against sqlite3 in the same run,
// each side of a row taking turns with the other.

// agentLoop appends one message to the large store after a pause longer
// than the resident process's idle timeout, as an agent appends once per
// model step: each append is the cold path.
func (r *runner) agentLoop() error {
	many := r.store("many")
	r.logf("agent loop: %d appends, %s apart", r.c.AgentRuns, r.c.AgentPause)
	r.stopResident(many)()
	wc := r.appendCommand("many")
	if r.c.AgentIdle != "" {
		wc.env = append(wc.env, "WC_RESIDENT_IDLE="+r.c.AgentIdle)
	}
	lingered, appends := 0, 0
	err := r.alternate(r.c.AgentRuns, r.c.AgentPause,
		pattern{key: "agent.wc", prepare: func() error {
			appends++
			if len(residentPIDs(many)) > 0 {
				lingered++
			}
			return nil
		}, run: func() job { return r.runs(wc) }},
		pattern{key: "agent.sql", run: func() job { return r.runs(r.sqlite(r.db("many"), r.prog("append-many.sql"))) }})
	if lingered > 0 {
		r.notes = append(r.notes, fmt.Sprintf("agent loop: a resident process still served %d of %d appends (the pause is not past its idle timeout)",
			lingered, appends))
	}
	return err
}

// cronJob runs wc-compact over the whole compaction batch with no
// resident process, as a cron job does once an hour. The batch is already
// compacted (the compaction rows left it so), as a store is that an hourly
// job keeps: the run reads every session and changes few.
func (r *runner) cronJob() error {
	r.logf("cron job: wc-compact --all over %d compacted sessions, %d runs", r.c.Compact, r.c.CronRuns)
	wc := r.compactCommand()
	return r.alternate(r.c.CronRuns, 0,
		pattern{key: "cron.wc", prepare: r.stopResident(r.store("batch")), run: func() job { return r.runs(wc) }},
		pattern{key: "cron.sql", run: func() job { return r.runs(r.sqlite(r.db("batch"), r.prog("compact.sql"))) }})
}

// ciAppends is how many messages the CI bot appends to its session.
const ciAppends = 10

// ciBot creates a session in the large store, appends ten messages and
// exports it as markdown, from no resident process, as a CI job does.
func (r *runner) ciBot() error {
	many := r.store("many")
	r.logf("CI bot: wc-new, %d appends, an export; %d runs", ciAppends, r.c.CIRuns)
	project := "/home/dev/src/ci-bot"
	wcJob := func() job {
		return func(rss bool) (time.Duration, int64, error) {
			var out bytes.Buffer
			total, peak, err := r.execTo(r.wc("wc-new", "--store", many, "--project", project, "--title", "ci job"), &out, rss)
			if err != nil {
				return 0, 0, err
			}
			var info struct{ ID string }
			if err := json.Unmarshal(out.Bytes(), &info); err != nil || info.ID == "" {
				return 0, 0, fmt.Errorf("wc-new printed %q", out.String())
			}
			var cs []command
			for i := range ciAppends {
				cs = append(cs, r.wc("wc-append", "--store", many, info.ID, "--role", "user", "--text",
					fmt.Sprintf("%s (step %d)", appendText, i+1)))
			}
			cs = append(cs, r.wc("wc-export", "--store", many, info.ID, "--format", "markdown"))
			took, kib, err := r.runs(cs...)(rss)
			return total + took, max(peak, kib), err
		}
	}
	sqlJob := func() job {
		id := gen.UUID(r.rand)
		now := time.Now().UTC().Format(time.RFC3339)
		db := r.db("many")
		file := r.prog("ci-export.sql")
		// Written before the job's clock starts, as wc's programs are.
		text, err := programs.ReadFile("programs/markdown.sql")
		if err == nil {
			err = os.WriteFile(file, []byte(markdownSQL(string(text), id)), 0o644)
		}
		if err != nil {
			return func(bool) (time.Duration, int64, error) { return 0, 0, err }
		}
		cs := []command{{args: []string{"sqlite3", "-batch", db, fmt.Sprintf("PRAGMA synchronous=%s; "+
			"INSERT INTO sessions VALUES('%s', 'ci job', '%s', '%s', '%s');", r.c.SQLiteSync, id, project, now, now)}}}
		for i := range ciAppends {
			line := fmt.Sprintf(`{"role":"user","content":"%s (step %d)","created_at":"%s"}`, appendText, i+1, now)
			cs = append(cs, command{args: []string{"sqlite3", "-batch", db, appendSQL(r.c.SQLiteSync, id, line)}})
		}
		cs = append(cs, r.markdownSQLite(db, file))
		return r.runs(cs...)
	}
	return r.alternate(r.c.CIRuns, 0,
		pattern{key: "ci.wc", prepare: r.stopResident(many), run: wcJob},
		pattern{key: "ci.sql", run: sqlJob})
}
