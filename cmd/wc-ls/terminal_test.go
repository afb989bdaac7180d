package main

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/cmd/internal/tooltest"
)

// A bare wc-ls on a terminal shows a table of the 20 sessions updated
// last, each line within the terminal's width (titles cut, never
// wrapped), and a last line saying how many more there are; piped, the
// same wc-ls prints every session as NDJSON.
func TestTableOnATerminal(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	env := append(tooltest.StoreEnv(t, store), "COLUMNS=")
	wc := func(stdout io.Writer, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(tooltest.Binaries(t), args[0]), args[1:]...)
		cmd.Env = env
		cmd.Stdout = stdout
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, stderr.String())
		}
	}
	for i := range 23 {
		title := fmt.Sprintf("session %02d: a title far too long for a terminal of fifty columns", i)
		if i == 22 {
			title = "会话的标题很长很长很长很长很长很长很长很长" // two columns a character
		}
		wc(io.Discard, "wc-new", "--title", title)
	}
	const cols = 50
	master, tty := tooltest.OpenPTY(t, cols, 40)
	wc(tty, "wc-ls")
	tty.Close()
	out, _ := io.ReadAll(master)
	lines := strings.Split(strings.TrimSuffix(string(out), "\r\n"), "\r\n")
	if len(lines) != 1+20+1 {
		t.Fatalf("%d lines on the terminal, want a header, 20 rows and a count:\n%s", len(lines), out)
	}
	if lines[21] != "… and 3 more (wc-ls -n 0 lists all)" {
		t.Errorf("last line %q", lines[21])
	}
	if !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[1], "会话") || !strings.HasSuffix(lines[2], "…") {
		t.Errorf("the table reads:\n%s", out)
	}
	for _, l := range lines {
		width := 0
		for _, r := range l {
			width++
			if r >= 0x4e00 && r <= 0x9fff { // the title's CJK characters
				width++
			}
		}
		if width > cols {
			t.Errorf("a line of %d columns on a terminal of %d: %q", width, cols, l)
		}
	}

	var piped bytes.Buffer
	wc(&piped, "wc-ls")
	if n := strings.Count(piped.String(), "\n"); n != 23 || !strings.Contains(piped.String(), "far too long for a terminal of fifty columns") {
		t.Errorf("piped, wc-ls printed %d lines:\n%s", n, piped.String())
	}
}
