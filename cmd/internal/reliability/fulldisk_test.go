package reliability

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestFullDisk (issue 19, item 6): on a full file system a write is
// refused with one line, status 1, the store unchanged; readers keep
// reading; the resident store process closes cleanly; and once there is
// room again the next write works. The store is on a small tmpfs the test
// mounts (as root, which CI is).
func TestFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting the small file system this test fills needs root; CI runs it as root")
	}
	mnt := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=40m,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	r := newRunner(t, filepath.Join(mnt, "store")).resident().withEnv(longIdle)
	g := &gen{rng: rand.New(rand.NewPCG(5, 5))}
	var ids []string
	for i := range 3 {
		id := idOf(r.must(nil, "wc-new", "--title", fmt.Sprintf("s%d", i)))
		r.must(g.turns(4, 2000), "wc-append", id)
		ids = append(ids, id)
	}
	pid := residentOf(t, r.store) // holds what it was sent in its memtable
	readers := func(r *runner) []result {
		var out []result
		out = append(out, r.run(nil, "wc-ls"))
		for _, id := range ids {
			out = append(out, r.run(nil, "wc-export", id, "--format", "jsonl"))
		}
		return out
	}
	before := readers(r)

	fill(t, filepath.Join(mnt, "fill"))
	noSpace := regexp.MustCompile(`\A(wc-\w+): no space left on the device of store \S+ \(store unchanged\)\n\w[\w-]*: hint: free at least \d+ MiB on that file system and try again\n\z`)
	for _, tc := range []struct {
		name string
		r    *runner
		args []string
	}{
		{"append through the resident process", r, []string{"wc-append", ids[0], "--text", "refused"}},
		{"direct append", r.direct(), []string{"wc-append", ids[1], "--text", "refused"}},
		{"new session", r, []string{"wc-new", "--title", "refused"}},
		{"batch", r, []string{"wc-compact", "--all", "--max-tokens", "100"}},
	} {
		res := tc.r.run(nil, tc.args[0], tc.args[1:]...)
		if res.Code != 1 || res.Stdout != "" || !noSpace.MatchString(res.Stderr) {
			t.Errorf("%s on a full file system: %v", tc.name, res)
		}
	}
	for _, rr := range []*runner{r, r.direct()} {
		for i, got := range readers(rr) {
			if got.Code != 0 || got.Stdout != before[i].Stdout || got.Stderr != "" {
				t.Errorf("a reader on a full file system: %v", got)
			}
		}
	}
	// The resident process closes, flushing what it holds, into the room
	// it kept.
	if res := r.run(nil, "wc-store", "--stop"); res.Code != 0 {
		t.Fatalf("wc-store --stop on a full file system: %v", res)
	}
	waitExit(t, pid, "wc-store --stop")
	if walLeft(r.store) {
		t.Error("the resident process did not close the store: its write-ahead log is left")
	}
	for i, got := range readers(r.direct()) {
		if got.Code != 0 || got.Stdout != before[i].Stdout {
			t.Errorf("a reader after the resident process closed: %v", got)
		}
	}

	if err := os.Remove(filepath.Join(mnt, "fill")); err != nil {
		t.Fatal(err)
	}
	for _, rr := range []*runner{r, r.direct()} {
		rr.must(nil, "wc-append", ids[2], "--text", "room again")
	}
	out := r.must(nil, "wc-export", ids[2], "--format", "jsonl")
	if strings.Count(out, "room again") != 2 || strings.Contains(r.must(nil, "wc-export", ids[0], "--format", "jsonl"), "refused") {
		t.Errorf("after the file system had room again:\n%s", out)
	}
	r.must(nil, "wc-store", "--stop")
	if res := r.direct().run(nil, "wc-store", "--check"); res.Code != 0 {
		t.Errorf("the store does not check after the full file system: %v", res)
	}
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	for { // the last blocks, a page at a time
		if _, err := f.Write(buf[:4096]); err != nil {
			break
		}
	}
}
