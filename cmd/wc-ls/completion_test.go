package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/cmd/internal/tooltest"
)

// TestCompletion completes wc commands in real bash, zsh and fish, with
// the scripts wc-ls --completion prints: flags, flag values, wc-branch's
// verbs and a session's branch names, and session ids with their titles,
// read from the store. (.ci/run installs zsh and fish.)
func TestCompletion(t *testing.T) {
	bin := tooltest.Binaries(t)
	store := filepath.Join(t.TempDir(), "store")
	env := append(tooltest.StoreEnv(t, store), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	sh := func(shell, script string) string {
		t.Helper()
		path, err := exec.LookPath(shell)
		if err != nil {
			t.Fatalf("%s is needed for this test (.ci/run installs it): %v", shell, err)
		}
		cmd := exec.Command(path, "-c", script)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s -c %q: %v: %s", shell, script, err, stderr.String())
		}
		return string(out)
	}
	idRE := regexp.MustCompile(`"id":"([^"]+)"`)
	login := idRE.FindStringSubmatch(sh("bash", `wc-new --title 'fix the login bug' | wc-append --role user --text hi | wc-branch mark before-refactor`))[1]
	readme := idRE.FindStringSubmatch(sh("bash", `wc-new --title 'add a README'`))[1]

	bash := func(words ...string) string {
		t.Helper()
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		return sh("bash", `source <(wc-ls --completion bash)
COMP_WORDS=(`+strings.Join(quoted, " ")+`); COMP_CWORD=`+strconv.Itoa(len(words)-1)+`
_wc_complete; printf '%s\n' "${COMPREPLY[@]}"`)
	}
	zsh := func(words ...string) string {
		t.Helper()
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		// compinit's functions stand in as stubs that print what they get.
		return sh("zsh", `compdef() { }
_describe() { print -rl -- "${(@P)${@[-1]}}" }
_files() { print -r -- FILES }
source <(wc-ls --completion zsh)
words=(`+strings.Join(quoted, " ")+`); CURRENT=`+strconv.Itoa(len(words))+`
_wc`)
	}
	fish := func(line string) string {
		t.Helper()
		return sh("fish", `wc-ls --completion fish | source; complete -C '`+line+`'`)
	}
	lines := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, "\t", " ")), " ") }

	cases := []struct{ what, got, want string }{
		{"bash flags", bash("wc-export", "--for"), "--format\n"},
		{"bash values", bash("wc-export", "--format", "m"), "markdown\n"},
		{"bash value after =", bash("wc-export", "--format", "=", "js"), "json\njsonl\n"},
		{"bash roles", bash("wc-append", "--role", "a"), "assistant\n"},
		{"bash verbs", bash("wc-branch", login, "sw"), "switch\n"},
		{"bash branch names", bash("wc-branch", login, "switch", ""), "before-refactor\n"},
		{"bash one session", bash("wc-export", readme[:6]), readme + "\n"},
		{"bash files", bash("wc-new", "/et"), "/etc\n"},
		{"zsh flags", zsh("wc-export", "--for"), "--format:output FORMAT: json, jsonl, markdown, text, info, summary, html, request or backup\n"},
		{"zsh providers", zsh("wc-export", "--provider", ""), "anthropic\nopenai\n"},
		{"zsh branch names", zsh("wc-branch", login, "switch", "b"), "before-refactor:node 1\n"},
		{"zsh sessions", zsh("wc-rm", readme[:8]), readme + ":add a README\n"},
		{"zsh files", zsh("wc-new", "--import", "claude", ""), "FILES\n"},
		{"fish flags", fish("wc-ls --so"), "--sort\torder by KEY: updated, created, title, messages or tokens (largest or newest first)\n"},
		{"fish formats", fish("wc-export --format=ba"), "--format=backup\n"},
		{"fish sessions", fish("wc-export " + login[:8]), login + "\tfix the login bug\n"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.what, c.got, c.want)
		}
	}
	// Several sessions: bash shows the titles beside the ids.
	if got := lines(bash("wc-export", "")); !strings.Contains(got, login+" fix the login bug") || !strings.Contains(got, readme+" add a README") {
		t.Errorf("bash sessions: %q", got)
	}
}
