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

// run runs a wc command against store and returns its stdout.
func run(t *testing.T, store string, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(filepath.Join(tooltest.Binaries(t), args[0]), args[1:]...)
	cmd.Env = tooltest.StoreEnv(t, store)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// renderInChromium loads a page in headless Chromium and returns the DOM
// after load, with any script it ran applied.
func renderInChromium(t *testing.T, page []byte) string {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is needed for this test (.ci/run installs it): %v", err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "page.html")
	if err := os.WriteFile(file, page, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--dump-dom", "file://"+file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v: %s", err, stderr.String())
	}
	return string(dom)
}

var articleRE = regexp.MustCompile(`<article class="msg `)

func TestHTMLInBrowserRunsNothing(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	info := run(t, store, nil, "wc-new", "--title", `<img src=x onerror="document.title='pwned'">`)
	id := regexp.MustCompile(`"id":"([^"]+)"`).FindSubmatch(info)[1]
	hostile := []byte(`{"role":"user","content":"<script>document.title='pwned'</script> and </pre></details><script>document.body.dataset.x=1</script>"}
{"role":"assistant","content":[{"type":"text","text":"` + "```html\\n<script>alert(1)</script>\\n```" + `"},{"type":"tooluse","id":"t1","name":"<b>bash</b>","input":{"cmd":"echo '<iframe src=x>'"}}]}
{"role":"tool","tool_call_id":"t1","content":"<svg onload=\"document.title='pwned'\"></svg>"}
{"role":"assistant","content":[{"type":"thinking","text":"<style>body{display:none}</style>"},{"type":"image","source":{"type":"url","url":"https://example.com/x.png"}}]}
`)
	run(t, store, hostile, "wc-append", string(id))
	page := run(t, store, nil, "wc-export", string(id), "--format", "html")
	dom := renderInChromium(t, page)

	if n := len(articleRE.FindAllString(dom, -1)); n != 4 {
		t.Errorf("%d messages rendered, want 4", n)
	}
	if strings.Contains(dom, "pwned</title>") || strings.Contains(dom, `data-x="1"`) {
		t.Errorf("a script from the transcript ran:\n%s", dom)
	}
	for _, tag := range []string{"<script", "<iframe", "<svg", "<img src=\"x\"", "<img src=x", "<style>body", "https://example.com/x.png\""} {
		if strings.Contains(dom, tag) {
			t.Errorf("the page holds a live %s", tag)
		}
	}
	if !strings.Contains(dom, "&lt;script&gt;document.title='pwned'&lt;/script&gt;") {
		t.Errorf("the hostile text is not shown as text")
	}
	if strings.Count(string(page), "<pre><code>") != 1 {
		t.Errorf("the code block is not preserved")
	}
}

func TestHTMLOfAFixture(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	fixture := filepath.Join(tooltest.Fixtures(t), "claude-code", "tool-heavy.jsonl")
	info := run(t, store, nil, "wc-new", "--import", "claude", fixture)
	id := regexp.MustCompile(`"id":"([^"]+)"`).FindSubmatch(info)[1]
	count := regexp.MustCompile(`"message_count":(\d+)`).FindSubmatch(info)[1]
	page := run(t, store, nil, "wc-export", string(id), "--format", "html")
	dom := renderInChromium(t, page)
	if n := len(articleRE.FindAllString(dom, -1)); string(count) == "" || n == 0 || string(count) != strconv.Itoa(n) {
		t.Errorf("%d messages rendered, want %s", n, count)
	}
	if !strings.Contains(dom, "<details") {
		t.Errorf("no collapsible tool blocks")
	}
}
