package reliability

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// TestCrashSearchIndex kills a writer with SIGKILL while it appends, one
// wc-append per message (each one a commit with its pending index mark,
// every eighth also folding the marks into a segment), and then checks
// the index against the store: every acknowledged message (its wc-append
// exited 0) is found by wc-ls --grep and by wc-ls --search, the hit's seq
// holding it, and no text that was never stored is found. It checks
// through a reader (WC_DIRECT=1: the marks are scanned) and through the
// resident process (which folds them first). WC_CRASH_ITERATIONS sets the
// rounds (default 6, 3 with -short).
func TestCrashSearchIndex(t *testing.T) {
	rounds := envInt("WC_CRASH_ITERATIONS", 6)
	if testing.Short() {
		rounds = min(rounds, 3)
	}
	seed := crashSeed(t)
	rng := rand.New(rand.NewPCG(seed, 25))
	dir := t.TempDir()
	r := newRunner(t, filepath.Join(dir, "store")).direct()
	id := idOf(r.must(nil, "wc-new", "--title", "crash search"))
	// A query through the resident process builds the index, so that the
	// writers' marks and folds are what the rounds test.
	r.resident().must(nil, "wc-ls", "--grep", "crashword")
	word := func(i int) string { return fmt.Sprintf("crashword%05d", i) }
	acked := map[int]bool{}
	next := 0
	for round := range rounds {
		script := fmt.Sprintf(`i=%d; while :; do %s %s --role user --text "%s$(printf %%05d $i) marker" >/dev/null || exit 1; echo $i; i=$((i+1)); done`,
			next, filepath.Join(r.bin, "wc-append"), id, "crashword")
		p := r.start(nil, "sh", "-c", script)
		p.killAfter(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
		res := p.wait()
		if !res.Killed {
			t.Fatalf("round %d: the writer was not killed: %v", round, res)
		}
		last := next - 1
		for _, line := range strings.Fields(res.Stdout) {
			i, err := strconv.Atoi(line)
			if err != nil {
				t.Fatalf("round %d: stdout %q", round, res.Stdout)
			}
			acked[i] = true
			last = i
		}
		inFlight := last + 1
		next = inFlight + 1 // a number never reused: the in-flight one may be stored
		stored := map[string]uint64{}
		out := r.must(nil, "wc-export", id, "--format", "jsonl", "--tree")
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			l := gjson.Parse(line)
			stored[l.Get("message.content").Str] = l.Get("seq").Uint()
		}
		for i := range acked {
			if _, ok := stored[word(i)+" marker"]; !ok {
				t.Fatalf("round %d: acknowledged message %d is not stored", round, i)
			}
		}
		// Every message this round acknowledged, a sample of the earlier
		// ones, the one in flight and two never written.
		var check []int
		for i := range acked {
			if i > last-12 || rng.IntN(len(acked)) < 4 {
				check = append(check, i)
			}
		}
		check = append(check, inFlight, next+5, next+50)
		q := r
		if round%2 == 1 {
			q = r.resident()
		}
		for _, i := range check {
			text := word(i) + " marker"
			seq, isStored := stored[text]
			grep := q.must(nil, "wc-ls", "--grep", word(i))
			search := q.must(nil, "wc-ls", "--search", word(i))
			hit := gjson.Get(search, "seq").Uint()
			switch {
			case isStored && (!strings.Contains(grep, id) || hit != seq):
				t.Errorf("round %d: stored message %d (seq %d) not found: grep %q, search %q", round, i, seq, grep, search)
			case !isStored && (grep != "" || search != ""):
				t.Errorf("round %d: message %d was never stored, and is found: grep %q, search %q", round, i, grep, search)
			}
		}
		t.Logf("round %d: %d acknowledged in all, %d checked, the one in flight stored: %v", round, len(acked), len(check), stored[word(inFlight)+" marker"] != 0)
	}
	if len(acked) < 8 {
		t.Errorf("only %d appends acknowledged: no fold ran between the kills", len(acked))
	}
}
