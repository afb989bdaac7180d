package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// command is one program run without a shell, as hyperfine -N runs it:
// stdin and stdout are /dev/null, env is added to the benchmark's own.
type command struct {
	args []string
	env  []string
	// noMatchOK takes exit status 1 as success, as grep exits when it
	// finds nothing.
	noMatchOK bool
}

func (c command) String() string {
	s := strings.Join(c.args, " ")
	if len(c.env) > 0 {
		s = strings.Join(c.env, " ") + " " + s
	}
	return s
}

// direct is c with WC_DIRECT=1: the command opens the store itself.
func (c command) direct() command {
	c.env = append(slices.Clip(c.env), "WC_DIRECT=1")
	return c
}

// sample holds what the runs of one key measured: wall seconds, peak RSS
// in KiB (getrusage of the child, as GNU time's %M), and for commands that
// take turns each round's median.
type sample struct {
	Times  []float64 `json:"times"`
	RSS    []int64   `json:"rss_kib"`
	Rounds []float64 `json:"rounds,omitempty"`
	Server int64     `json:"server_rss_kib,omitempty"` // the resident process's VmHWM
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return -1
	}
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return -1
	}
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t / float64(len(v))
}

func (s *sample) median() float64 { return median(s.Times) }

func (s *sample) peakRSS() int64 {
	if len(s.RSS) == 0 {
		return -1
	}
	return slices.Max(s.RSS)
}

func (s *sample) medianRSS() int64 {
	if len(s.RSS) == 0 {
		return -1
	}
	r := slices.Sorted(slices.Values(s.RSS))
	return r[(len(r)-1)/2]
}

// exec runs c once and returns its wall time. The child's stderr goes to
// /dev/null as stdout does; a failed run is run again with stderr kept,
// for the error.
func (r *runner) exec(c command) (time.Duration, error) {
	took, _, err := r.execTo(c, nil, false)
	return took, err
}

// execTo runs c with stdout to w, if not nil, and with rss under GNU time,
// whose %M (the peak RSS in KiB) it returns; else -1. The peak must come
// from a small parent: a child of this process forks its memory map, and
// the kernel counts that map's peak as the child's.
func (r *runner) execTo(c command, w io.Writer, rss bool) (time.Duration, int64, error) {
	run := c
	if rss {
		run.args = append([]string{gnuTime, "-f", "%M", "-o", r.rssFile}, c.args...)
	}
	cmd := r.cmd(run)
	cmd.Stderr = r.null
	if w != nil {
		cmd.Stdout = w
	}
	began := time.Now()
	err := cmd.Run()
	took := time.Since(began)
	var exit *exec.ExitError
	if c.noMatchOK && errors.As(err, &exit) && exit.ExitCode() == 1 {
		err = nil
	}
	if err != nil {
		again := r.cmd(c)
		var stderr bytes.Buffer
		again.Stderr = &stderr
		_ = again.Run()
		return 0, 0, fmt.Errorf("%s: %v: %s", c, err, strings.TrimSpace(stderr.String()))
	}
	if !rss {
		return took, -1, nil
	}
	// GNU time says "Command exited with non-zero status 1" first when grep
	// finds nothing: the figure is the last line.
	out, err := os.ReadFile(r.rssFile)
	if err != nil {
		return 0, 0, err
	}
	lines := strings.Fields(string(out))
	if len(lines) == 0 {
		return 0, 0, fmt.Errorf("%s: no peak RSS from %s", c, gnuTime)
	}
	kib, err := strconv.ParseInt(lines[len(lines)-1], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: peak RSS from %s: %v", c, gnuTime, err)
	}
	return took, kib, nil
}

// gnuTime measures a command's peak RSS, as it did for bench.sh.
const gnuTime = "/usr/bin/time"

func (r *runner) cmd(c command) *exec.Cmd {
	cmd := exec.Command(c.args[0], c.args[1:]...)
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Stdin, cmd.Stdout = r.null, r.null
	return cmd
}

// output runs c and returns its stdout, for the checks and the CI bot.
func (r *runner) output(c command) ([]byte, error) {
	cmd := r.cmd(c)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if c.noMatchOK && errors.As(err, &exit) && exit.ExitCode() == 1 {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %s", c, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

func (r *runner) sample(key string) *sample {
	s, ok := r.samples[key]
	if !ok {
		s = &sample{}
		r.samples[key] = s
	}
	return s
}

// timeRuns adds runs timed runs of c to key's sample, after warm untimed
// ones; prepare, if not nil, runs before each run. With rss each run is
// under GNU time, and its peak RSS is kept too.
func (r *runner) timeRuns(key string, runs, warm int, prepare func() error, c command, rss bool) error {
	s := r.sample(key)
	for i := range warm + runs {
		if err := prepared(key, prepare); err != nil {
			return err
		}
		took, kib, err := r.execTo(c, nil, rss)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		if i >= warm {
			s.Times = append(s.Times, took.Seconds())
			if rss {
				s.RSS = append(s.RSS, kib)
			}
		}
	}
	return nil
}

// prepared runs prepare, if not nil, before a run of key.
func prepared(key string, prepare func() error) error {
	if prepare == nil {
		return nil
	}
	if err := prepare(); err != nil {
		return fmt.Errorf("%s: preparing: %w", key, err)
	}
	return nil
}

// bench times runs of c, then takes its peak RSS over RSSRuns more
// runs under GNU time (on the timed runs it would add its own start).
func (r *runner) bench(key string, runs, warm int, prepare func() error, c command) error {
	r.logf("  %s: %s", key, c)
	if err := r.timeRuns(key, runs, warm, prepare, c, false); err != nil {
		return err
	}
	return r.rssRuns(key, prepare, c)
}

func (r *runner) rssRuns(key string, prepare func() error, c command) error {
	s := r.sample(key)
	for range r.c.RSSRuns {
		if err := prepared(key, prepare); err != nil {
			return err
		}
		_, kib, err := r.execTo(c, nil, true)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		s.RSS = append(s.RSS, kib)
	}
	return nil
}

// fast times an operation that takes milliseconds.
func (r *runner) fast(key string, c command) error {
	return r.bench(key, r.c.Runs, r.c.Warmup, nil, c)
}

// slow times an operation that takes seconds (export, compaction,
// search), each run after prepare and under GNU time.
func (r *runner) slow(key string, warm int, prepare func() error, c command) error {
	r.logf("  %s: %s", key, c)
	return r.timeRuns(key, r.c.SlowRuns, warm, prepare, c, true)
}

// turn is one of the commands that take turns.
type turn struct {
	key string
	cmd command
}

// turns times the commands in turns: Rounds rounds of about
// TurnRuns/Rounds runs each (after Warmup untimed runs in the first round
// and one in the others), every other round in reverse order, so that a
// change of the machine's pace weighs on each alike. Each round's median
// goes to the key's Rounds.
func (r *runner) turns(ts ...turn) error {
	slices.SortFunc(ts, func(a, b turn) int { return strings.Compare(a.key, b.key) })
	for _, t := range ts {
		r.logf("  %s: %s", t.key, t.cmd)
	}
	per := (r.c.TurnRuns + r.c.Rounds - 1) / r.c.Rounds
	for round := range r.c.Rounds {
		warm := 1
		if round == 0 {
			warm = r.c.Warmup
		}
		order := slices.Clone(ts)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, t := range order {
			roundKey := t.key + ".round"
			delete(r.samples, roundKey)
			if err := r.timeRuns(roundKey, per, warm, nil, t.cmd, false); err != nil {
				return err
			}
			rs := r.samples[roundKey]
			delete(r.samples, roundKey)
			s := r.sample(t.key)
			s.Times = append(s.Times, rs.Times...)
			s.Rounds = append(s.Rounds, rs.median())
		}
	}
	for _, t := range ts {
		if err := r.rssRuns(t.key, nil, t.cmd); err != nil {
			return err
		}
	}
	return nil
}

// job is one run of a usage pattern: a few commands whose times add up;
// with rss each runs under GNU time and the job returns their peak RSS.
type job func(rss bool) (time.Duration, int64, error)

// runs is a job of the commands cs run one after the other.
func (r *runner) runs(cs ...command) job {
	return func(rss bool) (time.Duration, int64, error) {
		var total time.Duration
		var peak int64 = -1
		for _, c := range cs {
			took, kib, err := r.execTo(c, nil, rss)
			if err != nil {
				return 0, 0, err
			}
			total += took
			peak = max(peak, kib)
		}
		return total, peak, nil
	}
}

// pattern is one side of a usage pattern's row.
type pattern struct {
	key     string
	prepare func() error // before each run, untimed; nil for none
	run     func() job   // the next run
}

// alternate runs the sides of a usage pattern n times, one run of each in
// turn (every other time in reverse order), waiting pause before each
// pair. Each run is a round of its own. Then it takes each side's peak RSS
// over a few more runs.
func (r *runner) alternate(n int, pause time.Duration, sides ...pattern) error {
	for _, p := range sides {
		r.logf("  %s", p.key)
	}
	for i := range n {
		time.Sleep(pause)
		order := slices.Clone(sides)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, p := range order {
			if err := prepared(p.key, p.prepare); err != nil {
				return err
			}
			took, _, err := p.run()(false)
			if err != nil {
				return fmt.Errorf("%s: %w", p.key, err)
			}
			s := r.sample(p.key)
			s.Times = append(s.Times, took.Seconds())
			s.Rounds = append(s.Rounds, took.Seconds())
		}
	}
	for _, p := range sides {
		for range min(r.c.RSSRuns, 3) {
			time.Sleep(pause)
			if err := prepared(p.key, p.prepare); err != nil {
				return err
			}
			_, kib, err := p.run()(true)
			if err != nil {
				return fmt.Errorf("%s: %w", p.key, err)
			}
			r.sample(p.key).RSS = append(r.sample(p.key).RSS, kib)
		}
	}
	return nil
}

// noID is a full id no session has: a direct read of it stops the store's
// resident process (WC_DIRECT=1 asks it to, and the read waits for its
// lock).
const noID = "ffffffff-ffff-4fff-bfff-ffffffffffff"

// stopResident stops the resident process serving store, if one runs.
func (r *runner) stopResident(store string) func() error {
	return func() error {
		_, _ = r.exec(r.wc("wc-export", "--store", store, noID, "--format", "info").direct())
		return nil
	}
}

// residentPIDs are the processes serving store as its resident process
// (WC_STORE_SERVE=store in their environment).
func residentPIDs(store string) []string {
	want := []byte("WC_STORE_SERVE=" + store)
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []string
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				pids = append(pids, filepath.Base(d))
				break
			}
		}
	}
	return pids
}

// residentRSS records the peak RSS (VmHWM) of the resident process serving
// store under key.
func (r *runner) residentRSS(key, store string) {
	var peak int64
	for _, pid := range residentPIDs(store) {
		status, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
				if kib, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					peak = max(peak, kib)
				}
			}
		}
	}
	if peak > 0 {
		r.sample(key).Server = peak
	}
}
