package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wctoolkit/wc/cmd/internal/tooltest"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/etcdkv/etcdtest"
	"github.com/wctoolkit/wc/pkg/session/store/kvstore"
)

// copySessions is how many sessions the kill test copies: enough that a
// copy killed after its first lines is far from done.
const copySessions = 400

// writeSource makes a store of n sessions of a few nodes of 8 KB in dir,
// and returns their ids in id order.
func writeSource(t *testing.T, dir string, n int) []string {
	t.Helper()
	st, err := kvstore.Open(kvstore.Options{Dir: dir, LockTimeout: 10 * time.Second}, kvstore.Write)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", uint32(i)*2654435761, i)
		var nodes []session.Node
		for j := range 4 {
			var parent *session.Node
			if j > 0 {
				parent = &nodes[j-1]
			}
			text := fmt.Sprintf("turn %d of session %d %s", j, i, strings.Repeat("x", 8<<10))
			nodes = append(nodes, session.Child(parent, uint64(j+1), session.Message{Role: session.RoleUser, Content: session.TextContent(text)}))
		}
		m := session.Meta{ID: id, Title: fmt.Sprintf("session %d", i), TitleSource: session.TitleManual,
			CreatedAt: "2026-01-02T03:04:05Z", UpdatedAt: "2026-01-02T03:04:05Z", NextSeq: 5}
		m.SetHead(&nodes[3])
		if err := st.Commit(&m, nodes); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// copyLine is a line wc-store --copy prints: a session's, or the report.
type copyLine struct {
	Session  string `json:"session"`
	Copy     string `json:"copy"`
	OK       *bool  `json:"ok"`
	Sessions int    `json:"sessions"`
	Copied   int    `json:"copied"`
	Present  int    `json:"present"`
}

func runCopy(t *testing.T, src, dst string) (lines []copyLine, report copyLine) {
	t.Helper()
	cmd := exec.Command(filepath.Join(tooltest.Binaries(t), "wc-store"), "--copy", src, dst)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("wc-store --copy %s %s: %v\n%s", src, dst, err, stderr.Bytes())
	}
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var cl copyLine
		if err := json.Unmarshal(l, &cl); err != nil {
			t.Fatalf("a line that is not JSON: %s", l)
		}
		lines = append(lines, cl)
	}
	if len(lines) == 0 || lines[len(lines)-1].OK == nil {
		t.Fatalf("no report line:\n%s", out)
	}
	return lines[:len(lines)-1], lines[len(lines)-1]
}

// export is wc-export --format jsonl --tree of the session in store.
func export(t *testing.T, store, id string) []byte {
	t.Helper()
	cmd := exec.Command(filepath.Join(tooltest.Binaries(t), "wc-export"), "--store", store, "--format", "jsonl", "--tree", id)
	cmd.Env = append(os.Environ(), "WC_DIRECT=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("wc-export of %s in %s: %v", id, store, err)
	}
	return out
}

// A copy killed with SIGKILL mid-way, run again with the same arguments,
// finishes: what the first run copied is found present, not copied again,
// and every session of the target is the source's, byte for byte.
func TestCopyResumesAfterKill(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	ids := writeSource(t, src, copySessions)
	t.Run("directory", func(t *testing.T) { killAndResume(t, src, ids, filepath.Join(t.TempDir(), "dst")) })
	t.Run("etcd", func(t *testing.T) {
		endpoints := etcdtest.Endpoints(t)
		cfg := etcdtest.Config(t, endpoints)
		t.Cleanup(func() { etcdtest.Wipe(t, endpoints, cfg.Prefix) })
		killAndResume(t, src, ids, "etcd://"+strings.Join(endpoints, ",")+"/"+cfg.Prefix)
	})
}

func killAndResume(t *testing.T, src string, ids []string, dst string) {
	const before = 30 // sessions the first run reports copied before its kill
	cmd := exec.Command(filepath.Join(tooltest.Binaries(t), "wc-store"), "--copy", src, dst)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var seen []string
	for len(seen) < before && sc.Scan() {
		var cl copyLine
		if err := json.Unmarshal(sc.Bytes(), &cl); err != nil || cl.Copy != "copied" {
			t.Fatalf("first run, line %d: %s", len(seen)+1, sc.Bytes())
		}
		seen = append(seen, cl.Session)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		var cl copyLine
		if json.Unmarshal(sc.Bytes(), &cl) == nil && cl.OK != nil {
			t.Fatalf("the first run finished before it was killed: %s", sc.Bytes())
		}
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("first run: %v, want killed by SIGKILL", err)
	}
	if len(seen) != before {
		t.Fatalf("the first run reported %d sessions", len(seen))
	}

	lines, report := runCopy(t, src, dst)
	if !*report.OK || report.Sessions != len(ids) || report.Copied+report.Present != len(ids) || report.Present < before || report.Copied == 0 {
		t.Fatalf("second run: %+v, want every one of %d sessions, at least %d present", report, len(ids), before)
	}
	for i, id := range seen {
		if lines[i].Session != id || lines[i].Copy != "present" {
			t.Errorf("second run, line %d: %+v, want %s present", i+1, lines[i], id)
		}
	}
	// A third run finds every session present: each one the same bytes.
	if _, report := runCopy(t, src, dst); !*report.OK || report.Present != len(ids) || report.Copied != 0 {
		t.Fatalf("third run: %+v, want every session present", report)
	}
	// wc-export agrees, around where the first run was killed.
	for _, id := range ids[before-2 : before+8] {
		if a, b := export(t, src, id), export(t, dst, id); !bytes.Equal(a, b) || len(a) < 32<<10 {
			t.Errorf("session %s: %d bytes exported from the source, %d from the copy, not the same", id, len(a), len(b))
		}
	}
}
