package bench

import (
	"flag"
	"io"
	"os"
	"time"
)

// Config is one benchmark run. NewConfig gives the full run's sizes, or
// the quick run's (tiny data, one or two runs of each, for the test).
type Config struct {
	Bin        string // the wc programs
	Work       string // scratch data and raw figures
	Rev        string // what Bin was built from, for the header
	Quick      bool
	Sessions   int // sessions of the listing and append store
	Big        int // messages of the long session (appends, export)
	Compact    int // sessions of the compaction batch
	MaxTokens  int
	Runs       int // timed runs of the other fast operations
	TurnRuns   int // timed runs of those a target compares
	Rounds     int // turns they take
	SlowRuns   int // timed runs of export, compaction and search
	Warmup     int // untimed runs before the fast operations
	RSSRuns    int // runs under GNU time of the fast operations, for their peak RSS
	AgentRuns  int // appends of the agent loop
	AgentPause time.Duration
	AgentIdle  string // WC_RESIDENT_IDLE of the agent loop; "" keeps the default
	CronRuns   int
	CIRuns     int
	SQLiteSync string // PRAGMA synchronous of the sqlite3 writers
	Seed       uint64
	Grep       string // the text of the search row
	// Etcd is the client endpoints (HOST:PORT,...) of an etcd cluster for
	// the etcd column; "" leaves it out.
	Etcd          string
	Writers       int // concurrent writers on one session
	WriterAppends int // their appends in all
	Out, Log      io.Writer
}

// NewConfig is the full run, or with quick the quick one.
func NewConfig(quick bool) Config {
	c := Config{Quick: quick, MaxTokens: 100000, SQLiteSync: "NORMAL", Seed: 1, Grep: "login test",
		Out: os.Stdout, Log: os.Stderr}
	if quick {
		c.Sessions, c.Big, c.Compact = 30, 200, 10
		c.Runs, c.TurnRuns, c.Rounds, c.SlowRuns, c.Warmup, c.RSSRuns = 2, 2, 2, 1, 1, 1
		// The agent loop's pause must outlast the resident process's idle
		// timeout: both shortened, so the quick run stays short.
		c.AgentRuns, c.AgentPause, c.AgentIdle = 2, 800*time.Millisecond, "250ms"
		c.CronRuns, c.CIRuns = 2, 2
		c.Writers, c.WriterAppends = 4, 12
		return c
	}
	c.Sessions, c.Big, c.Compact = 10000, 20000, 1000
	c.Runs, c.TurnRuns, c.Rounds, c.SlowRuns, c.Warmup, c.RSSRuns = 30, 150, 15, 3, 3, 10
	c.AgentRuns, c.AgentPause = 20, 3*time.Second // the default idle timeout is 2 s
	c.CronRuns, c.CIRuns = 5, 10
	c.Writers, c.WriterAppends = 8, 200
	return c
}

// Flags registers the flags that override c's sizes on fs.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Bin, "bin", c.Bin, "the wc programs are in `DIR`")
	fs.StringVar(&c.Work, "work", c.Work, "scratch data and raw figures go under `DIR`")
	fs.StringVar(&c.Rev, "rev", c.Rev, "what the programs were built from, for the header")
	fs.IntVar(&c.Sessions, "sessions", c.Sessions, "sessions of the listing and append store")
	fs.IntVar(&c.Big, "big-messages", c.Big, "messages of the long session")
	fs.IntVar(&c.Compact, "compact-sessions", c.Compact, "sessions of the compaction batch")
	fs.IntVar(&c.MaxTokens, "max-tokens", c.MaxTokens, "wc-compact --max-tokens")
	fs.IntVar(&c.Runs, "runs", c.Runs, "timed runs of the other fast operations")
	fs.IntVar(&c.TurnRuns, "turn-runs", c.TurnRuns, "timed runs of the operations a target compares")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "rounds those take turns in")
	fs.IntVar(&c.SlowRuns, "slow-runs", c.SlowRuns, "timed runs of export, compaction and search")
	fs.IntVar(&c.Warmup, "warmup", c.Warmup, "untimed runs before the fast operations")
	fs.IntVar(&c.RSSRuns, "rss-runs", c.RSSRuns, "runs under GNU time of the fast operations, for their peak RSS")
	fs.IntVar(&c.AgentRuns, "agent-runs", c.AgentRuns, "appends of the agent loop")
	fs.DurationVar(&c.AgentPause, "agent-pause", c.AgentPause, "pause before each append of the agent loop")
	fs.IntVar(&c.CronRuns, "cron-runs", c.CronRuns, "runs of the cron job")
	fs.IntVar(&c.CIRuns, "ci-runs", c.CIRuns, "runs of the CI bot's job")
	fs.StringVar(&c.SQLiteSync, "sqlite-sync", c.SQLiteSync, "PRAGMA synchronous of the sqlite3 writers")
	fs.StringVar(&c.Etcd, "etcd", c.Etcd, "measure the etcd column on the cluster at `ENDPOINTS` (HOST:PORT,...)")
	fs.IntVar(&c.Writers, "writers", c.Writers, "concurrent writers on one session")
	fs.IntVar(&c.WriterAppends, "writer-appends", c.WriterAppends, "appends of the concurrent writers, in all")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "the generator's seed")
}
