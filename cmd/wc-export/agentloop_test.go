package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/cmd/internal/tooltest"
	"github.com/wctoolkit/wc/internal/wirecheck"
)

// recorded is a stand-in for the Messages API on loopback: it holds every
// request to the API's structural rules (wirecheck.CheckAnthropic), refuses
// one that breaks them as the API does (400, invalid_request_error), and
// answers with responses of the shapes the API documents: first a turn
// that thinks (signed), searches the web (a server tool and its result),
// says something with a citation and calls the bash tool; once that call's
// result comes back, a final text.
type recorded struct {
	t        *testing.T
	mu       sync.Mutex
	requests []string
}

const (
	recordedCall   = "toolu_01RecordedCallA9q90qw90lq"
	recordedSearch = "srvtoolu_01RecordedSearchWbq"
)

var recordedFirst = `{"id":"msg_01RecordedFirst","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",` +
	`"content":[{"type":"thinking","thinking":"I should look, then run a command.","signature":"EqQBCkYIBxgCKkB3c2lnbmF0dXJl"},` +
	`{"type":"server_tool_use","id":"` + recordedSearch + `","name":"web_search","input":{"query":"echo hello"}},` +
	`{"type":"web_search_tool_result","tool_use_id":"` + recordedSearch + `","content":[{"type":"web_search_result","url":"https://example.com/echo","title":"echo","encrypted_content":"EqgfCioIARgB","page_age":null}]},` +
	`{"type":"text","text":"Let me look.","citations":[{"type":"web_search_result_location","url":"https://example.com/echo","title":"echo","encrypted_index":"Eo8BCio","cited_text":"echo prints"}]},` +
	`{"type":"tool_use","id":"` + recordedCall + `","name":"bash","input":{"command":"echo hello from the tool"}}],` +
	`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"server_tool_use":{"web_search_requests":1}}}`

const recordedFinal = `{"id":"msg_01RecordedFinal","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",` +
	`"content":[{"type":"text","text":"The tool said hello."}],"stop_reason":"end_turn","stop_sequence":null,` +
	`"usage":{"input_tokens":150,"output_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":90}}`

func (p *recorded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.requests = append(p.requests, string(body))
	p.mu.Unlock()
	w.Header().Set("content-type", "application/json")
	if r.Header.Get("x-api-key") != "test-key" || r.Header.Get("anthropic-version") == "" {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
		return
	}
	if err := wirecheck.CheckAnthropic(body, wirecheck.AnthropicOptions{}); err != nil {
		p.t.Errorf("the Messages API would refuse this body: %v\n%.2000s", err, body)
		msg, _ := json.Marshal(err.Error())
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%s}}`, msg)
		return
	}
	last := gjson.GetBytes(body, "messages.@reverse.0.content")
	if last.Get(`#(tool_use_id=="` + recordedCall + `")`).Exists() {
		io.WriteString(w, recordedFinal)
		return
	}
	io.WriteString(w, recordedFirst)
}

// runAgentLoop runs scripts/agent-loop.sh against the recorded provider,
// continuing session (a fresh one when ""), and returns its stdout and the
// requests it sent.
func runAgentLoop(t *testing.T, bin, work, session string) (string, []string) {
	t.Helper()
	p := &recorded{t: t}
	srv := httptest.NewServer(p)
	defer srv.Close()
	script := filepath.Join(tooltest.ModuleRoot(t), "scripts", "agent-loop.sh")
	cmd := exec.Command("sh", script, "say hello")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"WC_STORE="+filepath.Join(work, "store"), "WC_API_URL="+srv.URL, "ANTHROPIC_API_KEY=test-key", "WC_MODEL=stub-model", "WC_SESSION="+session)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("agent-loop: %v\n%s", err, stderr.String())
	}
	if session == "" {
		session = strings.TrimPrefix(strings.TrimSpace(stderr.String()), "session ")
	}
	return strings.TrimSpace(stdout.String()) + "\n" + session, p.requests
}

func needTools(t *testing.T) {
	for _, tool := range []string{"jq", "curl", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (.ci/run installs it): %v", tool, err)
		}
	}
}

func wcOutput(t *testing.T, bin, work string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, args[0]), args[1:]...)
	cmd.Env = append(os.Environ(), "WC_STORE="+filepath.Join(work, "store"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, stderr.String())
	}
	return out
}

// TestAgentLoop runs scripts/agent-loop.sh on a new session: the model
// asks for one bash call, then answers.
func TestAgentLoop(t *testing.T) {
	needTools(t)
	bin := tooltest.Binaries(t)
	work := t.TempDir()
	t.Cleanup(func() { tooltest.StopResidents(t, work) })
	out, requests := runAgentLoop(t, bin, work, "")
	answer, id, _ := strings.Cut(out, "\n")
	if answer != "The tool said hello." {
		t.Errorf("stdout %q", answer)
	}
	if len(requests) != 2 {
		t.Fatalf("%d requests, want 2", len(requests))
	}
	first := gjson.Parse(requests[0])
	if first.Get("model").Str != "stub-model" || first.Get("tools.0.name").Str != "bash" ||
		first.Get("tools.0.input_schema.required.0").Str != "command" || !strings.HasPrefix(first.Get("system").Str, "You are a coding agent") {
		t.Errorf("first request: %s", requests[0])
	}
	// The second carries the turn back as the API gave it, but for what a
	// request may not hold (the citation), and the call's result.
	msgs := gjson.Get(requests[1], "messages").Array()
	var types []string
	for _, b := range msgs[1].Get("content").Array() {
		types = append(types, b.Get("type").Str)
	}
	if len(msgs) != 3 || strings.Join(types, " ") != "thinking server_tool_use web_search_tool_result text tool_use" ||
		msgs[1].Get("content.0.signature").Str == "" || msgs[1].Get("content.3.citations").Exists() ||
		msgs[2].Get("content.0.tool_use_id").Str != recordedCall || msgs[2].Get("content.0.content").Str != "hello from the tool" {
		t.Errorf("second request messages: %s", gjson.Get(requests[1], "messages").Raw)
	}

	// The session holds the whole exchange, with the tool's name and the usage.
	var roles []string
	for _, line := range strings.Split(strings.TrimSpace(string(wcOutput(t, bin, work, "wc-export", id, "--format", "jsonl"))), "\n") {
		roles = append(roles, gjson.Get(line, "message.role").Str+":"+gjson.Get(line, "message.name").Str)
	}
	if want := "user: assistant: tool:bash assistant:"; strings.Join(roles, " ") != want {
		t.Errorf("roles %v, want %s", roles, want)
	}
	info := wcOutput(t, bin, work, "wc-export", id, "--format", "info")
	if u := gjson.GetBytes(info, "usage").Raw; u != `{"input_tokens":250,"output_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":90}` {
		t.Errorf("usage %s", u)
	}
	if c := gjson.GetBytes(info, "cost.unpriced_steps").Int(); c != 2 {
		t.Errorf("unpriced steps %d", c)
	}
	// whycodes loads its share, server tool blocks and all.
	if _, err := wirecheck.LoadWhycodes(wcOutput(t, bin, work, "wc-export", id)); err != nil {
		t.Errorf("whycodes does not load the share: %v", err)
	}
}

// TestAgentLoopImported continues sessions imported from Claude Code,
// Codex and opencode: every body the loop sends passes the Messages API's
// rules, whatever the import holds (Codex reasoning and custom tools,
// opencode's encrypted reasoning, interrupted calls, Claude Code's "\n\n"
// text blocks).
func TestAgentLoopImported(t *testing.T) {
	needTools(t)
	bin := tooltest.Binaries(t)
	fixtures := tooltest.Fixtures(t)
	for _, f := range []string{"claude-code/short.jsonl", "claude-code/tool-heavy.jsonl", "claude-code/explore-subagent.jsonl",
		"codex/rollout-a.jsonl", "codex/rollout-b.jsonl", "opencode/export-small.json", "opencode/export-medium.json"} {
		t.Run(filepath.Base(f), func(t *testing.T) {
			work := t.TempDir()
			t.Cleanup(func() { tooltest.StopResidents(t, work) })
			id := gjson.GetBytes(wcOutput(t, bin, work, "wc-new", filepath.Join(fixtures, f)), "id").Str
			out, requests := runAgentLoop(t, bin, work, id)
			if answer, _, _ := strings.Cut(out, "\n"); answer != "The tool said hello." || len(requests) != 2 {
				t.Errorf("answer %q after %d requests", answer, len(requests))
			}
			if _, err := wirecheck.LoadWhycodes(wcOutput(t, bin, work, "wc-export", id)); err != nil {
				t.Errorf("whycodes does not load the share: %v", err)
			}
		})
	}
}
