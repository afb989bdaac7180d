package reliability

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/cmd/internal/tooltest"
	"github.com/wctoolkit/wc/pkg/session"
)

// The concurrency suite runs many real processes at once against one store,
// with a lock timeout long enough that no command may give up: writers
// queue on the store lock, readers share it, and nothing fails.

// failures collects what goroutines find; the test reports it at the end.
type failures struct {
	mu   sync.Mutex
	errs []error
}

func (f *failures) add(format string, a ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Errorf(format, a...))
}

func (f *failures) fatal(t *testing.T, what string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	fatalErrs(t, what, f.errs)
}

// appendsPerWriter is the 200 (8 × 200 = 1,600 processes that each
// hold the store's exclusive lock in turn: about a minute on a shared
// two-core machine for both modes), 10 with -short.
func appendsPerWriter() int {
	if testing.Short() {
		return 10
	}
	return 200
}

// reader runs wc-ls, wc-export --format jsonl and --format info on id in
// a loop until stop, pausing a little between commands so that the writers
// get their turns on the lock, and checks every read: a consistent path,
// counts that agree, and a message count that never goes down.
func reader(r *runner, id string, stop *atomic.Bool, fails *failures, reads *atomic.Int64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	last := uint64(0)
	for i := 0; !stop.Load(); i++ {
		var count uint64
		switch i % 3 {
		case 0:
			res := r.run(nil, "wc-ls")
			if res.Code != 0 || res.Stderr != "" {
				fails.add("wc-ls: %v", res)
				return
			}
			rows, err := jsonLines(res.Stdout)
			if err != nil {
				fails.add("wc-ls: %v", err)
				return
			}
			for _, row := range rows {
				if row.Get("id").Str == id {
					count = row.Get("message_count").Uint()
					if row.Get("head").Uint() != count && count != 0 {
						// Appends only: the path is 1..head.
						fails.add("wc-ls row with %d messages and head %d", count, row.Get("head").Uint())
					}
				}
			}
		case 1:
			res := r.run(nil, "wc-export", id, "--format", "jsonl")
			if res.Code != 0 || res.Stderr != "" {
				fails.add("wc-export --format jsonl: %v", res)
				return
			}
			lines, err := jsonLines(res.Stdout)
			if err != nil {
				fails.add("wc-export --format jsonl: %v", err)
				return
			}
			for j, l := range lines {
				if l.Get("seq").Uint() != uint64(j+1) || l.Get("parent").Uint() != uint64(j) {
					fails.add("wc-export line %d is %.200s: not the path 1..n", j, l.Raw)
					return
				}
			}
			count = uint64(len(lines))
		case 2:
			res := r.run(nil, "wc-export", id, "--format", "info")
			if res.Code != 0 || res.Stderr != "" {
				fails.add("wc-export --format info: %v", res)
				return
			}
			info := gjson.Parse(res.Stdout)
			count = info.Get("message_count").Uint()
			if info.Get("user_message_count").Uint() != count || info.Get("head").Uint() != count {
				fails.add("inconsistent info: %s", res.Stdout)
			}
		}
		if count < last {
			fails.add("a reader saw %d messages after %d", count, last)
		}
		last = count
		reads.Add(1)
		time.Sleep(time.Duration(10+rng.IntN(30)) * time.Millisecond) // pacing, not a timed assertion
	}
}

// TestConcurrentAppends: 8 writers each append their messages to one
// session, one process per message, while 4 readers list and export it.
// Every command succeeds, every message is there once, the seqs are
// 1..8×N, and each writer's messages are in its own order.
//
// It runs twice: with every command opening the store itself, and through
// the resident store process (the default).
func TestConcurrentAppends(t *testing.T) { inModes(t, concurrentAppends) }

// inModes runs a test with the store opened by each command (WC_DIRECT=1)
// and through the resident store process (the default).
func inModes(t *testing.T, test func(*testing.T, func(*runner) *runner)) {
	t.Run("direct", func(t *testing.T) { test(t, (*runner).direct) })
	t.Run("resident", func(t *testing.T) { test(t, (*runner).resident) })
}

func concurrentAppends(t *testing.T, mode func(*runner) *runner) {
	const writers, readers = 8, 4
	each := appendsPerWriter()
	r := mode(newRunner(t, filepath.Join(t.TempDir(), "store")))
	id := idOf(r.must(nil, "wc-new", "--title", "shared"))

	var fails failures
	var stop atomic.Bool
	var reads atomic.Int64
	var rwg sync.WaitGroup
	for i := range readers {
		rwg.Go(func() { reader(r, id, &stop, &fails, &reads, uint64(i)) })
	}
	start := time.Now()
	seqs := make([][]uint64, writers)
	var wwg sync.WaitGroup
	for w := range writers {
		wwg.Go(func() {
			for j := range each {
				res := r.run(nil, "wc-append", id, "--role", "user", "--text", fmt.Sprintf("w%d-%d", w, j))
				if res.Code != 0 || res.Stderr != "" {
					fails.add("writer %d append %d: %v", w, j, res)
					return
				}
				app := gjson.Get(res.Stdout, "appended").Array()
				if len(app) != 1 {
					fails.add("writer %d append %d printed %s", w, j, res.Stdout)
					return
				}
				seqs[w] = append(seqs[w], app[0].Uint())
			}
		})
	}
	wwg.Wait()
	elapsed := time.Since(start)
	stop.Store(true)
	rwg.Wait()
	fails.fatal(t, "while appending")

	total := writers * each
	tooltest.StopResidents(t, filepath.Dir(r.store)) // the store to this process
	st, err := readState(r.store)
	if err != nil {
		t.Fatal(err)
	}
	fatalErrs(t, "after the appends", append(st.checkAll(), checkViaCommands(r, st)...))
	s := st[id]
	path, _ := s.path(s.meta.Head)
	if len(path) != total || s.meta.MessageCount != uint64(total) || s.meta.NextSeq != uint64(total+1) {
		t.Fatalf("%d messages on the path, meta %d, next_seq %d; want %d", len(path), s.meta.MessageCount, s.meta.NextSeq, total)
	}
	seen := map[string]uint64{}
	for i, n := range path {
		if n.seq != uint64(i+1) {
			t.Fatalf("path position %d holds seq %d", i, n.seq)
		}
		txt, _ := n.msg.AsText()
		if _, dup := seen[txt]; dup {
			t.Fatalf("message %q is stored twice", txt)
		}
		seen[txt] = n.seq
	}
	all := map[uint64]bool{}
	for w := range writers {
		if !slices.IsSorted(seqs[w]) {
			t.Errorf("writer %d got seqs out of its own order: %v", w, seqs[w])
		}
		for j, seq := range seqs[w] {
			if all[seq] {
				t.Errorf("seq %d printed twice", seq)
			}
			all[seq] = true
			if got := seen[fmt.Sprintf("w%d-%d", w, j)]; got != seq {
				t.Errorf("w%d-%d is at seq %d, its append printed %d", w, j, got, seq)
			}
		}
	}
	t.Logf("concurrency: %d writers × %d appends (%d processes) with %d readers (%d reads) in %v",
		writers, each, total, readers, reads.Load(), elapsed.Round(time.Millisecond))
}

// TestCompactWhileAppending: batch compactions of every session run again
// and again while one writer per session keeps appending turns. Nothing
// fails, no acknowledged message is lost, every printed compaction's head
// is an ancestor of the session's head or of one of its branches, and each
// session ends with its last appended answer.
func TestCompactWhileAppending(t *testing.T) { inModes(t, compactWhileAppending) }

func compactWhileAppending(t *testing.T, mode func(*runner) *runner) {
	const sessions, compactors = 4, 2
	turns := 15
	if testing.Short() {
		turns = 5
	}
	r := mode(newRunner(t, filepath.Join(t.TempDir(), "store")))
	g := &gen{rng: rand.New(rand.NewPCG(7, 7))}
	var ids []string
	for i := range sessions {
		ids = append(ids, idOf(r.must(g.share(fmt.Sprintf("s%d", i), 12, 2500), "wc-new", "--import", "native")))
	}

	var fails failures
	type ack struct {
		id   string
		seq  uint64
		text string
	}
	var mu sync.Mutex
	var acks []ack
	var compactions []gjson.Result
	var stop atomic.Bool
	var cwg sync.WaitGroup
	for c := range compactors {
		cwg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				args := []string{"--max-tokens", fmt.Sprint(4000 + 1000*((i+c)%4))}
				if (i+c)%2 == 0 {
					args = append(args, "--spill")
				}
				res := r.run([]byte(strings.Join(ids, "\n")+"\n"), "wc-compact", args...)
				if res.Code != 0 || res.Stderr != "" {
					fails.add("wc-compact: %v", res)
					return
				}
				lines, err := jsonLines(res.Stdout)
				if err != nil || len(lines) != sessions {
					fails.add("wc-compact printed %q (%v)", res.Stdout, err)
					return
				}
				mu.Lock()
				compactions = append(compactions, lines...)
				mu.Unlock()
			}
		})
	}
	start := time.Now()
	var wwg sync.WaitGroup
	lastAnswer := make([]string, sessions)
	for s := range sessions {
		wwg.Go(func() {
			for j := range turns {
				q := fmt.Sprintf("question %d.%d", s, j)
				a := fmt.Sprintf("answer %d.%d: %s", s, j, strings.Repeat("x", 600))
				in := msgJSON(map[string]any{"role": "user", "content": q, "created_at": stamp}) + "\n" +
					msgJSON(map[string]any{"role": "assistant", "content": a, "created_at": stamp}) + "\n"
				res := r.run([]byte(in), "wc-append", ids[s])
				if res.Code != 0 || res.Stderr != "" {
					fails.add("append to %s: %v", ids[s], res)
					return
				}
				app := gjson.Get(res.Stdout, "appended").Array()
				if len(app) != 2 {
					fails.add("append printed %s", res.Stdout)
					return
				}
				mu.Lock()
				acks = append(acks, ack{ids[s], app[0].Uint(), q}, ack{ids[s], app[1].Uint(), a})
				mu.Unlock()
				lastAnswer[s] = a
			}
		})
	}
	wwg.Wait()
	stop.Store(true)
	cwg.Wait()
	elapsed := time.Since(start)
	fails.fatal(t, "while compacting and appending")

	tooltest.StopResidents(t, filepath.Dir(r.store)) // the store to this process
	st, err := readState(r.store)
	if err != nil {
		t.Fatal(err)
	}
	errs := append(st.checkAll(), checkViaCommands(r, st)...)
	for _, a := range acks {
		n := st[a.id].nodes[a.seq]
		if n == nil {
			errs = append(errs, fmt.Errorf("acknowledged message %d of %s (%.40q) is lost", a.seq, a.id, a.text))
		} else if txt, _ := n.msg.AsText(); txt != a.text {
			errs = append(errs, fmt.Errorf("acknowledged message %d of %s (%.40q) is lost", a.seq, a.id, a.text))
		}
	}
	changed := 0
	for _, l := range compactions {
		s := st[l.Get("id").Str]
		head := l.Get("head").Uint()
		if l.Get("changed").Bool() {
			changed++
		}
		roots := []uint64{s.meta.Head}
		for _, b := range s.meta.Branches {
			roots = append(roots, b.Seq)
		}
		if !slices.ContainsFunc(roots, func(leaf uint64) bool { return isAncestor(s, head, leaf) }) {
			errs = append(errs, fmt.Errorf("printed compaction %s: head %d is on no path to the head or a branch", l.Raw, head))
			continue
		}
		p, err := s.path(head)
		var tokens uint64
		for _, n := range p {
			tokens += session.MessageTokens(&n.msg)
		}
		if err != nil || uint64(len(p)) != l.Get("messages_after").Uint() || tokens != l.Get("tokens_after").Uint() {
			errs = append(errs, fmt.Errorf("printed compaction %s: the stored path to its head has %d messages, %d tokens", l.Raw, len(p), tokens))
		}
	}
	for i, id := range ids {
		p, _ := st[id].path(st[id].meta.Head)
		if txt, _ := p[len(p)-1].msg.AsText(); txt != lastAnswer[i] {
			errs = append(errs, fmt.Errorf("session %s ends with %.60q, not its last answer", id, txt))
		}
	}
	fatalErrs(t, "after compacting while appending", errs)
	if changed == 0 {
		t.Errorf("none of %d compactions changed anything: the test did not test", len(compactions))
	}
	t.Logf("concurrency: %d writers × %d appends and %d compactors (%d batch compactions, %d sessions changed) in %v",
		sessions, turns, compactors, len(compactions)/sessions, changed, elapsed.Round(time.Millisecond))
}

// isAncestor: seq is on the path root..leaf.
func isAncestor(s *sessRec, seq, leaf uint64) bool {
	for n := leaf; n != 0; {
		if n == seq {
			return true
		}
		node := s.nodes[n]
		if node == nil {
			return false
		}
		n = node.parent
	}
	return seq == 0
}

// TestTwoPipelines: two shell pipelines, each on its own session, run side
// by side; every stage of every round works on the output of the one
// before, and neither session sees the other's messages.
func TestTwoPipelines(t *testing.T) { inModes(t, twoPipelines) }

func twoPipelines(t *testing.T, mode func(*runner) *runner) {
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	dir := t.TempDir()
	r := mode(newRunner(t, filepath.Join(dir, "store")))
	script := `set -eu
name=$1 rounds=$2
wc-new --title "$name" > "$name.json"
i=1
while [ "$i" -le "$rounds" ]; do
	wc-append --role user --text "$name question $i" < "$name.json" \
		| wc-append --role assistant --text "$name answer $i $(printf '%0300d' 0)" \
		| wc-compact --max-tokens 400 \
		| wc-export --format jsonl | tail -n 1 | grep -F "\"text\":\"$name answer $i " > /dev/null \
		|| { echo "round $i: the pipeline lost the answer" >&2; exit 1; }
	i=$((i + 1))
done
`
	var wg sync.WaitGroup
	res := make([]result, 2)
	for i, name := range []string{"left", "right"} {
		wg.Go(func() { res[i] = r.run(nil, "sh", "-c", script, "sh", name, fmt.Sprint(rounds)) })
	}
	wg.Wait()
	for i, rr := range res {
		if rr.Code != 0 || rr.Stderr != "" {
			t.Fatalf("pipeline %d: %v", i, rr)
		}
	}
	tooltest.StopResidents(t, filepath.Dir(r.store)) // the store to this process
	st, err := readState(r.store)
	if err != nil {
		t.Fatal(err)
	}
	fatalErrs(t, "after the pipelines", append(st.checkAll(), checkViaCommands(r, st)...))
	if len(st) != 2 {
		t.Fatalf("%d sessions, want 2", len(st))
	}
	for _, s := range st {
		name := s.meta.Title
		users := 0
		for _, n := range s.nodes {
			raw := string(n.raw)
			other := map[string]string{"left": "right", "right": "left"}[name]
			if strings.Contains(raw, other+" question") || strings.Contains(raw, other+" answer") {
				t.Errorf("session %s holds a message of the other pipeline: %.100s", name, raw)
			}
			if n.msg.Role == session.RoleUser && strings.Contains(raw, name+" question") && n.msg.Kind == session.KindNone {
				users++
			}
		}
		if users < rounds {
			t.Errorf("session %s: %d of its %d questions are stored", name, users, rounds)
		}
		if len(s.meta.Branches) == 0 {
			t.Errorf("session %s was never compacted: the test did not test", name)
		}
		p, _ := s.path(s.meta.Head)
		if txt, _ := p[len(p)-1].msg.AsText(); !strings.HasPrefix(txt, fmt.Sprintf("%s answer %d ", name, rounds)) {
			t.Errorf("session %s ends with %.40q", name, txt)
		}
	}
}
