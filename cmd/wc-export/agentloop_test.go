package main

import (
	"bytes"
	"encoding/json"
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
)

// TestAgentLoop runs scripts/agent-loop.sh against a stub of the Messages
// API on loopback: the model asks for one bash call, then answers.
func TestAgentLoop(t *testing.T) {
	for _, tool := range []string{"jq", "curl", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (.ci/run installs it): %v", tool, err)
		}
	}
	var mu sync.Mutex
	var requests []string
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		requests = append(requests, string(body))
		n := len(requests)
		mu.Unlock()
		if r.Header.Get("x-api-key") != "test-key" || r.Header.Get("anthropic-version") == "" {
			http.Error(w, `{"type":"error","error":{"type":"authentication_error"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("content-type", "application/json")
		if n == 1 {
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"stub","content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"echo hello from the tool"}}],"stop_reason":"tool_use","usage":{"input_tokens":100,"output_tokens":20}}`)
			return
		}
		io.WriteString(w, `{"id":"msg_2","type":"message","role":"assistant","model":"stub","content":[{"type":"text","text":"The tool said hello."}],"stop_reason":"end_turn","usage":{"input_tokens":150,"output_tokens":10,"cache_read_input_tokens":90}}`)
	}))
	defer stub.Close()

	bin := tooltest.Binaries(t)
	work := t.TempDir()
	t.Cleanup(func() { tooltest.StopResidents(t, work) })
	script := filepath.Join(tooltest.ModuleRoot(t), "scripts", "agent-loop.sh")
	cmd := exec.Command("sh", script, "say hello")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"WC_STORE="+filepath.Join(work, "store"), "WC_API_URL="+stub.URL, "ANTHROPIC_API_KEY=test-key", "WC_MODEL=stub-model")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("agent-loop: %v\n%s", err, stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); got != "The tool said hello." {
		t.Errorf("stdout %q", got)
	}
	if len(requests) != 2 {
		t.Fatalf("%d requests, want 2", len(requests))
	}
	first := gjson.Parse(requests[0])
	if first.Get("model").Str != "stub-model" || first.Get("tools.0.name").Str != "bash" ||
		first.Get("tools.0.input_schema.required.0").Str != "command" || !strings.HasPrefix(first.Get("system").Str, "You are a coding agent") {
		t.Errorf("first request: %s", requests[0])
	}
	// The second request carries the call and its result, paired.
	second := gjson.Parse(requests[1])
	msgs := second.Get("messages").Array()
	if len(msgs) != 3 || msgs[1].Get("content.1.type").Str != "tool_use" ||
		msgs[2].Get("content.0.type").Str != "tool_result" || msgs[2].Get("content.0.tool_use_id").Str != "toolu_1" ||
		msgs[2].Get("content.0.content").Str != "hello from the tool" {
		t.Errorf("second request messages: %s", second.Get("messages").Raw)
	}

	// The session holds the whole exchange, with the tool's name and the usage.
	id := strings.TrimPrefix(strings.TrimSpace(stderr.String()), "session ")
	export := exec.Command(filepath.Join(bin, "wc-export"), id, "--format", "jsonl")
	export.Env = append(os.Environ(), "WC_STORE="+filepath.Join(work, "store"))
	out, err := export.Output()
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	var roles []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var node struct {
			Message struct {
				Role string `json:"role"`
				Name string `json:"name"`
			} `json:"message"`
		}
		if err := json.Unmarshal([]byte(line), &node); err != nil {
			t.Fatal(err)
		}
		roles = append(roles, node.Message.Role+":"+node.Message.Name)
	}
	if want := "user: assistant: tool:bash assistant:"; strings.Join(roles, " ") != want {
		t.Errorf("roles %v, want %s", roles, want)
	}
	info := exec.Command(filepath.Join(bin, "wc-export"), id, "--format", "info")
	info.Env = export.Env
	out, _ = info.Output()
	if u := gjson.GetBytes(out, "usage").Raw; u != `{"input_tokens":250,"output_tokens":30,"cache_read_input_tokens":90}` {
		t.Errorf("usage %s", u)
	}
	if c := gjson.GetBytes(out, "cost.unpriced_steps").Int(); c != 2 {
		t.Errorf("unpriced steps %d", c)
	}
}
