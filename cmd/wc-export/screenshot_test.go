package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// webDriver drives one headless Chromium through chromedriver's W3C
// WebDriver protocol, plain HTTP and JSON.
type webDriver struct {
	t       *testing.T
	base    string // http://127.0.0.1:PORT/session/ID
	process *exec.Cmd
}

// startChromium starts chromedriver and a headless Chromium of its own, a
// window of width × height CSS pixels.
func startChromium(t *testing.T, width, height int) *webDriver {
	t.Helper()
	driver, err := exec.LookPath("chromedriver")
	if err != nil {
		t.Fatalf("chromedriver is needed for this test (.ci/run installs chromium-driver): %v", err)
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is needed for this test (.ci/run installs it): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	d := &webDriver{t: t}
	d.process = exec.Command(driver, fmt.Sprintf("--port=%d", port))
	if err := d.process.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if d.base != "" {
			d.call("DELETE", "", nil)
		}
		_ = d.process.Process.Kill()
		_ = d.process.Wait()
	})
	root := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(root + "/status")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromedriver did not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Tests run as root in CI: no sandbox, and a profile of its own.
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir=" + filepath.Join(t.TempDir(), "profile"), fmt.Sprintf("--window-size=%d,%d", width, height)}
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome", "goog:chromeOptions": map[string]any{"binary": chromium, "args": args}}}}
	var session struct{ SessionID string }
	d.base = root + "/session"
	d.call("POST", "", caps, &session)
	d.base = root + "/session/" + session.SessionID
	return d
}

// call makes a WebDriver request and decodes its "value" into out.
func (d *webDriver) call(method, path string, body any, out ...any) {
	d.t.Helper()
	var in io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		in = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, d.base+path, in)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("webdriver %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var answer struct{ Value json.RawMessage }
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &answer); err != nil || resp.StatusCode != 200 {
		d.t.Fatalf("webdriver %s %s: %s: %s", method, path, resp.Status, raw)
	}
	if len(out) > 0 {
		if err := json.Unmarshal(answer.Value, out[0]); err != nil {
			d.t.Fatalf("webdriver %s %s: %v: %s", method, path, err, answer.Value)
		}
	}
}

// eval runs script in the page (WebDriver's scripts are not the page's:
// its policy forbids the page any) and decodes what it returns.
func (d *webDriver) eval(script string, out any) {
	d.t.Helper()
	d.call("POST", "/execute/sync", map[string]any{"script": script, "args": []any{}}, out)
}

// element finds the element css selects.
func (d *webDriver) element(css string) string {
	d.t.Helper()
	var found map[string]string
	d.call("POST", "/element", map[string]any{"using": "css selector", "value": css}, &found)
	for _, id := range found {
		return id
	}
	d.t.Fatalf("no element %s", css)
	return ""
}

func (d *webDriver) displayed(css string) bool {
	d.t.Helper()
	var shown bool
	d.call("GET", "/element/"+d.element(css)+"/displayed", nil, &shown)
	return shown
}

// box is what the page says of an element's layout.
type box struct {
	Text                      string
	Width, ScrollWidth        float64
	Height, LineHeight        float64
	Top                       float64
	PageWidth, PageScrollWide float64
}

func (d *webDriver) box(css string) box {
	d.t.Helper()
	var b box
	d.eval(`const e = document.querySelector(`+jsString(css)+`); const r = e.getBoundingClientRect();
return {Text: e.innerText, Width: e.clientWidth, ScrollWidth: e.scrollWidth, Height: r.height, Top: r.top,
  LineHeight: parseFloat(getComputedStyle(e).lineHeight) || 20,
  PageWidth: document.documentElement.clientWidth, PageScrollWide: document.documentElement.scrollWidth};`, &b)
	return b
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// screenshot saves the viewport as a PNG, in $WC_SCREENSHOT_DIR when set
// (to look at it), and returns it decoded.
func (d *webDriver) screenshot(name string) image.Image {
	d.t.Helper()
	var b64 string
	d.call("GET", "/screenshot", nil, &b64)
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		d.t.Fatal(err)
	}
	dir := os.Getenv("WC_SCREENSHOT_DIR")
	if dir == "" {
		dir = d.t.TempDir()
	}
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		d.t.Fatal(err)
	}
	d.t.Logf("screenshot: %s", file)
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		d.t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	return img
}

// TestHTMLInChromium loads an export of two sessions in a real Chromium
// and checks what a reader sees: one page with both; every tool call's
// summary saying what was called while its input stays collapsed; short
// results open and long ones collapsed; thinking collapsed, and wrapped
// once opened; long text wrapped, never a page wider than the window.
func TestHTMLInChromium(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	first := regexp.MustCompile(`"id":"([^"]+)"`).FindSubmatch(run(t, store, nil, "wc-new", "--title", "fix the login bug"))[1]
	second := regexp.MustCompile(`"id":"([^"]+)"`).FindSubmatch(run(t, store, nil, "wc-new", "--title", "add a README"))[1]
	longWord := strings.Repeat("unbroken", 40)
	thinking := strings.Repeat("The expiry check compares with < where it needs <=, so an expired session still passes. ", 12)
	transcript := strings.Join([]string{
		`{"role":"user","content":"Fix the login bug: ` + longWord + `"}`,
		`{"role":"assistant","content":[{"type":"thinking","text":"` + thinking + `","signature":"s"},{"type":"text","text":"Looking."},` +
			`{"type":"tooluse","id":"t1","name":"Read","input":{"file_path":"src/auth.go"}},` +
			`{"type":"tooluse","id":"t2","name":"Bash","input":{"command":"go test ./...","description":"run the tests"}}]}`,
		`{"role":"tool","tool_call_id":"t1","content":"package auth\n\nfunc Expired() bool { return false }"}`,
		`{"role":"tool","tool_call_id":"t2","content":"` + strings.Repeat(`--- FAIL: TestExpiry (0.00s)\n`, 120) + `"}`,
		`{"role":"assistant","content":"Fixed: the check now uses <=."}`,
	}, "\n") + "\n"
	run(t, store, []byte(transcript), "wc-append", string(first))
	run(t, store, []byte(`{"role":"user","content":"add a README"}`+"\n"), "wc-append", string(second))
	page := run(t, store, nil, "wc-export", string(first), string(second), "--format", "html")
	if n := strings.Count(strings.ToLower(string(page)), "<!doctype html>"); n != 1 {
		t.Fatalf("the export of two sessions holds %d documents", n)
	}
	file := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(file, page, 0o600); err != nil {
		t.Fatal(err)
	}

	const width, height = 900, 1400
	d := startChromium(t, width, height)
	d.call("POST", "/url", map[string]any{"url": "file://" + file})

	var sections []string
	d.eval(`return [...document.querySelectorAll("section.session h1")].map(e => e.innerText)`, &sections)
	if strings.Join(sections, "|") != "fix the login bug|add a README" {
		t.Errorf("the page shows the sessions %q", sections)
	}
	var title string
	d.eval(`return document.title`, &title)
	if title != "2 sessions" {
		t.Errorf("the page's title is %q", title)
	}

	// Tool calls: what was called shows, the input is folded away.
	var calls []string
	d.eval(`return [...document.querySelectorAll("details.tool-call > summary")].map(e => e.innerText)`, &calls)
	if strings.Join(calls, "|") != "Read(src/auth.go)|Bash(go test ./...)" {
		t.Errorf("the tool calls read %q", calls)
	}
	if !d.displayed("details.tool-call > summary") || d.displayed("details.tool-call > pre") {
		t.Error("a tool call's summary is hidden or its input shown")
	}
	// Results: the short one open, the long one folded.
	if !d.displayed(`article.tool:nth-of-type(3) details.result > pre`) {
		t.Error("the short tool result is collapsed")
	}
	if d.displayed(`article.tool:nth-of-type(4) details.result > pre`) {
		t.Error("the long tool result is open")
	}
	// Thinking: folded; opened, it wraps within the page.
	if d.displayed("details.thinking > pre") {
		t.Error("the thinking is open")
	}
	d.call("POST", "/element/"+d.element("details.thinking > summary")+"/click", map[string]any{})
	if !d.displayed("details.thinking > pre") {
		t.Fatal("a click does not open the thinking")
	}
	th := d.box("details.thinking > pre")
	if th.ScrollWidth > th.Width+1 || th.Height < 3*th.LineHeight {
		t.Errorf("the thinking does not wrap: %.0f px of text in a %.0f px box, %.0f px high", th.ScrollWidth, th.Width, th.Height)
	}
	text := d.box("article.user .text")
	if text.ScrollWidth > text.Width+1 {
		t.Errorf("a long word runs out of its message: %.0f px in %.0f", text.ScrollWidth, text.Width)
	}
	if text.PageScrollWide > text.PageWidth+1 {
		t.Errorf("the page is %.0f px wide in a %.0f px window", text.PageScrollWide, text.PageWidth)
	}

	img := d.screenshot("wc-export-html.png")
	if b := img.Bounds(); b.Dx() < width/2 || b.Dy() < height/2 {
		t.Errorf("the screenshot is %v", b)
	}
	colors := map[[3]uint32]bool{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y += 7 {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x += 7 {
			r, g, b, _ := img.At(x, y).RGBA()
			colors[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
		}
	}
	if len(colors) < 8 {
		t.Errorf("the screenshot is nearly blank: %d colors", len(colors))
	}
}
