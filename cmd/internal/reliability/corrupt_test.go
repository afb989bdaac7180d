package reliability

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// The corruption suite damages a copy of a stopped store, one file at a
// time, as a disk, a filesystem bug or a careless copy would: a byte
// changed at a seeded offset, a file cut short, a file removed. After each
// damage every reader either prints exactly what it printed before the
// damage or fails with the damaged-store status (one error line, no Go
// trace), and wc-store --check reports the damage. WC_CORRUPT_TRIALS sets
// the number of trials (scripts/corrupt-test.sh runs hundreds), and
// WC_CORRUPT_SEED repeats an earlier run.

// exitDamaged is the commands' status for a damaged store.
const exitDamaged = 74

// corruptStore builds the store the trials damage: sessions of several
// shapes, over several tables and a value log, stopped and closed.
func corruptStore(t *testing.T, r *runner, g *gen) []string {
	t.Helper()
	var ids []string
	// Sessions written by separate commands, so that the store has several
	// tables; one long enough to span several blocks.
	for i := range 5 {
		id := idOf(r.must(nil, "wc-new", "--title", fmt.Sprintf("session %d", i), "--system", "be brief"))
		r.must(g.turns(1+i*3, 500+i*400), "wc-append", id)
		ids = append(ids, id)
	}
	// A message above the value threshold lives in the value log.
	big := g.filler("big", 100<<10)
	r.must([]byte(big), "wc-append", ids[1], "--role", "tool", "--no-cap")
	// A branch, a compaction and a spilled blob.
	r.must(nil, "wc-branch", ids[2], "mark", "before")
	r.must(nil, "wc-compact", ids[2], "--max-tokens", "800", "--spill")
	r.must(g.turns(2, 300), "wc-append", ids[3])
	r.must(nil, "wc-branch", ids[3], "undo")
	r.must(g.turns(1, 300), "wc-append", ids[3])
	for i := range 3 {
		id := idOf(r.must(nil, "wc-new", "--title", fmt.Sprintf("late %d", i)))
		r.must(g.turns(1, 200), "wc-append", id)
		ids = append(ids, id)
	}
	return ids
}

// readerRun is one reader's command line and what it printed.
type readerRun struct {
	args []string
	res  result
}

// readers runs the commands whose answers a trial compares: the listing,
// every session as a share, and each session's whole tree.
func readers(r *runner, ids []string) []readerRun {
	runs := []readerRun{{args: []string{"wc-ls"}}, {args: []string{"wc-ls", "--grep", "answer"}},
		{args: append([]string{"wc-export"}, ids...)}}
	for _, id := range ids {
		runs = append(runs, readerRun{args: []string{"wc-export", id, "--format", "jsonl", "--tree"}})
	}
	for i := range runs {
		runs[i].res = r.run(nil, runs[i].args[0], runs[i].args[1:]...)
	}
	return runs
}

// damage is one way to damage a file.
type damage struct {
	file   string // relative to the store
	action string // "flip", "truncate" or "remove"
	offset int64
	xor    byte
}

func (d damage) String() string {
	switch d.action {
	case "flip":
		return fmt.Sprintf("%s: byte %d ^= %#02x", d.file, d.offset, d.xor)
	case "truncate":
		return fmt.Sprintf("%s: cut to %d bytes", d.file, d.offset)
	}
	return d.file + ": removed"
}

func (d damage) apply(storeDir string) error {
	path := filepath.Join(storeDir, d.file)
	switch d.action {
	case "flip":
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		var b [1]byte
		if _, err := f.ReadAt(b[:], d.offset); err != nil {
			return err
		}
		b[0] ^= d.xor
		_, err = f.WriteAt(b[:], d.offset)
		return err
	case "truncate":
		return os.Truncate(path, d.offset)
	}
	return os.Remove(path)
}

// fileKinds are the kinds of file a stopped store holds. Not among them:
// DISCARD, the value log's garbage statistics (wc runs no value-log GC and
// never reads it), and the lock file, whose content only tells which
// tables were verified (a damaged record is ignored, and every table
// verified again).
var fileKinds = []string{".sst", ".vlog", "MANIFEST", "KEYREGISTRY"}

// pickDamage chooses a file of the kind, and a damage to it.
func pickDamage(rng *rand.Rand, storeDir, kind string) (damage, error) {
	names, err := filepath.Glob(filepath.Join(storeDir, "db", "*"))
	if err != nil {
		return damage{}, err
	}
	var files []string
	for _, n := range names {
		fi, err := os.Stat(n)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		base := filepath.Base(n)
		// A value log of its header alone holds no value.
		if (strings.HasSuffix(base, kind) || base == kind) && !(kind == ".vlog" && fi.Size() <= 20) {
			files = append(files, n)
		}
	}
	if len(files) == 0 {
		return damage{}, fmt.Errorf("no %s file in the store", kind)
	}
	slices.Sort(files)
	path := files[rng.IntN(len(files))]
	fi, err := os.Stat(path)
	if err != nil {
		return damage{}, err
	}
	d := damage{file: filepath.Join("db", filepath.Base(path))}
	switch p := rng.IntN(10); {
	case p < 7:
		d.action, d.offset, d.xor = "flip", rng.Int64N(fi.Size()), byte(1+rng.IntN(255))
	case p < 9:
		d.action, d.offset = "truncate", rng.Int64N(fi.Size())
	default:
		d.action = "remove"
	}
	return d, nil
}

// goTrace tells a Go panic or runtime crash in a command's stderr.
func goTrace(stderr string) bool {
	return strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic:") || strings.Contains(stderr, "fatal error:")
}

// oneErrorLine checks the documented error form: one line naming the
// command, then hints.
func oneErrorLine(name, stderr string) bool {
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if !strings.HasPrefix(lines[0], name+": ") {
		return false
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, name+": hint: ") {
			return false
		}
	}
	return true
}

// TestCorruption damages a copy of a store in WC_CORRUPT_TRIALS ways
// (default 24, 8 with -short; scripts/corrupt-test.sh runs hundreds), each
// one file of one kind in turn: after each, every reader prints what it
// printed before or fails with status 74, wc-store --check finds the
// damage, and wc-store --salvage copies every session it can prove intact,
// byte for byte.
func TestCorruption(t *testing.T) {
	trials := envInt("WC_CORRUPT_TRIALS", 24)
	if testing.Short() && os.Getenv("WC_CORRUPT_TRIALS") == "" {
		trials = 8
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("WC_CORRUPT_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (WC_CORRUPT_SEED=%d repeats these trials)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0xc0de))
	base := t.TempDir()
	ref := newRunner(t, filepath.Join(base, "ref")).direct()
	ids := corruptStore(t, ref, &gen{rng: rand.New(rand.NewPCG(1, 2))})
	want := readers(ref, ids)
	for _, w := range want {
		if w.res.Code != 0 {
			t.Fatalf("%s on the undamaged store: %v", strings.Join(w.args, " "), w.res)
		}
	}

	var wrong, traces, missed []string
	outcomes := map[string]int{}
	for i := range trials {
		kind := fileKinds[i%len(fileKinds)]
		d, err := pickDamage(rng, ref.store, kind)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(base, fmt.Sprintf("trial%d", i), "store")
		if err := copyDir(dir, ref.store); err != nil {
			t.Fatal(err)
		}
		if err := d.apply(dir); err != nil {
			t.Fatalf("%v: %v", d, err)
		}
		r := ref.withStore(dir)
		mode := "direct"
		if i%3 == 2 {
			r, mode = r.resident().withEnv(longIdle), "resident"
		}
		// --check first, on the store as damaged, before any command could
		// have written to it.
		check := r.run(nil, "wc-store", "--check")
		got := readers(r, ids)
		if mode == "resident" {
			killResidents(t, dir)
		}
		detected, identical := false, true
		for j, g := range got {
			name := g.args[0]
			switch {
			case goTrace(g.res.Stderr):
				traces = append(traces, fmt.Sprintf("%v (%s): %s: %s", d, mode, strings.Join(g.args, " "), firstLine(g.res.Stderr)))
			case g.res.Code == 0 && g.res.Stdout == want[j].res.Stdout && g.res.Stderr == "":
			case g.res.Code == exitDamaged && oneErrorLine(name, g.res.Stderr) &&
				(g.res.Stdout == "" || name == "wc-export" && strings.HasPrefix(want[j].res.Stdout, g.res.Stdout)):
				// An export prints as it reads: what it printed before the
				// damage is what it prints from the undamaged store.
				detected, identical = true, false
			default:
				identical = false
				wrong = append(wrong, fmt.Sprintf("%v (%s): %s: exit %d, %d of %d bytes out, stderr %s", d, mode, strings.Join(g.args, " "), g.res.Code, len(g.res.Stdout), len(want[j].res.Stdout), firstLine(g.res.Stderr)))
			}
		}
		checkFound := check.Code == exitDamaged && !gjson.Get(check.Stdout, "ok").Bool()
		switch {
		case goTrace(check.Stderr):
			traces = append(traces, fmt.Sprintf("%v: wc-store --check: %s", d, firstLine(check.Stderr)))
		case check.Code == 0 && gjson.Get(check.Stdout, "ok").Bool():
			if detected {
				missed = append(missed, fmt.Sprintf("%v: the commands found damage, wc-store --check did not: %s", d, check.Stdout))
			}
		case !checkFound:
			wrong = append(wrong, fmt.Sprintf("%v: wc-store --check: %v", d, check))
		}
		switch {
		case detected && checkFound:
			outcomes["refused, found by --check"]++
		case identical && checkFound:
			outcomes["read back whole, found by --check"]++
		case identical:
			outcomes["read back whole, --check finds nothing"]++
			missed = append(missed, fmt.Sprintf("%v: nothing read differs and wc-store --check finds nothing", d))
		}
		if detected {
			salvaged, lost := salvageTrial(t, r, d, ids, want, &wrong, &traces)
			outcomes["sessions salvaged"] += salvaged
			outcomes["sessions lost"] += lost
		}
		_ = os.RemoveAll(filepath.Dir(dir))
	}
	t.Logf("%d trials: %v", trials, outcomes)
	for _, c := range []struct {
		what string
		msgs []string
	}{{"Go traces", traces}, {"wrong answers", wrong}, {"damage wc-store --check missed", missed}} {
		if len(c.msgs) > 0 {
			t.Errorf("%s (%d):\n%s", c.what, len(c.msgs), strings.Join(c.msgs[:min(len(c.msgs), 40)], "\n"))
		}
	}
}

// firstLine is the first line of s, for reports.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// salvageTrial salvages a damaged store into a new one: every session it
// copies exports exactly as from the undamaged store, every session is
// either copied or reported lost, and the new store checks clean. Damage
// to the MANIFEST alone loses nothing: the tables hold every record.
func salvageTrial(t *testing.T, r *runner, d damage, ids []string, want []readerRun, wrong, traces *[]string) (salvaged, lost int) {
	t.Helper()
	into := filepath.Join(filepath.Dir(r.store), "salvaged")
	res := r.direct().run(nil, "wc-store", "--salvage", into)
	if goTrace(res.Stderr) {
		*traces = append(*traces, fmt.Sprintf("%v: wc-store --salvage: %s", d, firstLine(res.Stderr)))
		return 0, 0
	}
	if res.Code != 0 && res.Code != exitDamaged {
		*wrong = append(*wrong, fmt.Sprintf("%v: wc-store --salvage: %v", d, res))
		return 0, 0
	}
	got, unverified, reported := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, id := range gjson.Get(res.Stdout, "salvaged").Array() {
		got[id.Str] = true
	}
	for _, id := range gjson.Get(res.Stdout, "unverified").Array() {
		unverified[id.Str] = true
	}
	for _, l := range gjson.Get(res.Stdout, "lost").Array() {
		reported[l.Get("session").Str] = true
	}
	// A session all of whose records, its listing entry included, were in
	// a damaged table leaves no trace: the report names the table and the
	// sessions it may have held.
	mayHold := func(id string) bool {
		for _, dt := range gjson.Get(res.Stdout, "damaged_tables").Array() {
			from, to := dt.Get("from").Str, dt.Get("to").Str
			if from == "" && to == "" || id >= from && (to == "" || id <= to) {
				return true
			}
		}
		return false
	}
	nr := r.withStore(into).direct()
	var verified []string
	wantTrees := ""
	for i, id := range ids {
		switch {
		case got[id]:
			salvaged++
			verified = append(verified, id)
			wantTrees += want[3+i].res.Stdout // see readers
		case unverified[id]:
			salvaged++
		case reported[id] || mayHold(id):
			lost++
		default:
			*wrong = append(*wrong, fmt.Sprintf("%v: session %s neither salvaged nor reported lost: %s", d, id, res.Stdout))
		}
	}
	if len(verified) > 0 {
		args := append([]string{"--format", "jsonl", "--tree"}, verified...)
		if g := nr.run(nil, "wc-export", args...); g.Code != 0 || g.Stdout != wantTrees {
			*wrong = append(*wrong, fmt.Sprintf("%v: the salvaged sessions %v differ from the undamaged store's: exit %d, %s", d, verified, g.Code, firstLine(g.Stderr)))
		}
	}
	if d.file == "db/MANIFEST" && salvaged != len(ids) {
		*wrong = append(*wrong, fmt.Sprintf("%v: a damaged MANIFEST lost sessions in the salvage: %s", d, res.Stdout))
	}
	if c := nr.run(nil, "wc-store", "--check"); c.Code != 0 {
		*wrong = append(*wrong, fmt.Sprintf("%v: the salvaged store does not check: %s", d, c.Stdout))
	}
	return salvaged, lost
}

// TestOneSessionCompactionFails (issue 19, item 10): a compaction of one
// session that fails (here on a damaged value) fails as any command does:
// its error on stderr, nothing on stdout. A batch still reports the session
// on its line and goes on.
func TestOneSessionCompactionFails(t *testing.T) {
	r := newRunner(t, filepath.Join(t.TempDir(), "store")).direct()
	g := &gen{rng: rand.New(rand.NewPCG(3, 4))}
	damagedID := idOf(r.must(nil, "wc-new", "--title", "damaged"))
	r.must([]byte(g.filler("big", 100<<10)), "wc-append", damagedID, "--role", "tool", "--no-cap")
	okID := idOf(r.must(nil, "wc-new", "--title", "fine"))
	r.must(g.turns(3, 500), "wc-append", okID)
	// The big value is in the value log of the command that wrote it; the
	// commands after it wrote value logs of their own.
	logs, _ := filepath.Glob(filepath.Join(r.store, "db", "*.vlog"))
	var withValue string
	for _, l := range logs {
		if fi, err := os.Stat(l); err == nil && fi.Size() > 100<<10 {
			withValue = l
		}
	}
	if withValue == "" {
		t.Fatalf("no value log holds the big value: %v", logs)
	}
	d := damage{file: filepath.Join("db", filepath.Base(withValue)), action: "flip", offset: 50 << 10, xor: 0x20}
	if err := d.apply(r.store); err != nil {
		t.Fatal(err)
	}
	res := r.run(nil, "wc-compact", damagedID, "--max-tokens", "100")
	if res.Code != exitDamaged || res.Stdout != "" || !oneErrorLine("wc-compact", res.Stderr) ||
		!strings.HasPrefix(res.Stderr, "wc-compact: store: the store is damaged: ") {
		t.Errorf("one damaged session: %v", res)
	}
	batch := r.run([]byte(damagedID+"\n"+okID+"\n"), "wc-compact", "--max-tokens", "100")
	lines, _ := jsonLines(batch.Stdout)
	if batch.Code != 1 || len(lines) != 2 || batch.Stderr != "wc-compact: 1 of 2 sessions failed\n" {
		t.Errorf("a batch with a damaged session: %v", batch)
	}
}
