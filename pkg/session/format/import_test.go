package format

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/render"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// t0 is the fixed clock of every test.
var t0 = time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)

// fixturesDir is the repository's transcript fixtures directory,
// testdata/fixtures under the module root. A missing directory fails.
func fixturesDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
	fx := filepath.Join(dir, "testdata", "fixtures")
	if _, err := os.Stat(fx); err != nil {
		t.Fatalf("fixtures: %v", err)
	}
	return fx
}

type fixture struct {
	dir, name, path string
	kind            Kind
}

// fixtures lists every transcript in the fixtures directory, with the
// format its directory stands for.
func fixtures(t testing.TB) []fixture {
	t.Helper()
	root := fixturesDir(t)
	kinds := map[string]Kind{"claude-code": KindClaude, "codex": KindCodex, "opencode": KindOpencode,
		"gemini": KindGemini, "claude-stream": KindClaude, "cursor": KindCursor, "codex-exec": KindCodex, "claude-web": KindClaude}
	var out []fixture
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "sqlite" { // databases: read by wc-sqlite, tested in cmd/wc-new
			continue
		}
		kind, ok := kinds[e.Name()]
		if !ok {
			t.Fatalf("fixture directory %s has no format in this test", e.Name())
		}
		files, err := os.ReadDir(filepath.Join(root, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if f.IsDir() || strings.HasSuffix(f.Name(), ".md") {
				continue
			}
			out = append(out, fixture{dir: e.Name(), name: f.Name(), path: filepath.Join(root, e.Name(), f.Name()), kind: kind})
		}
	}
	if len(out) == 0 {
		t.Fatal("no fixtures")
	}
	return out
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testID(i int) string { return fmt.Sprintf("3f2a9c1e-4b7d-4e2a-9f1c-%012d", i) }

// goldenSession is what a golden file pins for one imported session.
type goldenSession struct {
	SourceID    string              `json:"source_id"`
	Parent      string              `json:"parent,omitempty"`
	Title       string              `json:"title"`
	TitleSource session.TitleSource `json:"title_source"`
	ProjectPath string              `json:"project_path"`
	CreatedAt   string              `json:"created_at"`
	UpdatedAt   string              `json:"updated_at"`
	Nodes       int                 `json:"nodes"`
	ActivePath  uint64              `json:"active_path"`
	Branches    int                 `json:"branches"`
	Tokens      uint64              `json:"tokens"`
	Usage       session.Usage       `json:"usage"`
	UsageTotal  uint64              `json:"usage_total"`
	Skipped     map[string]int      `json:"skipped"`
	Roles       map[string]int      `json:"roles"` // over all nodes
	Kinds       map[string]int      `json:"kinds,omitempty"`
	ToolErrors  int                 `json:"tool_errors"`
	Signatures  int                 `json:"thinking_signatures"`
	// Path outlines the active path: time, role, kind, then the block
	// types, or the tool's name and call id ("!" marks an error).
	Path []string `json:"path"`
}

func outline(m *session.Message) string {
	s := m.CreatedAt
	if s == "" {
		s = "-"
	}
	s += " " + string(m.Role)
	if m.Kind != session.KindNone {
		s += "/" + string(m.Kind)
	}
	if m.Role == session.RoleTool {
		s += " " + m.Name + " " + m.ToolCallID
		if m.IsError {
			s += " !"
		}
		return s
	}
	if !m.Content.IsBlocks {
		return s + " text"
	}
	for _, b := range m.Content.Blocks {
		s += " " + b.Type
		if b.Type == session.BlockThinking && b.HasSignature {
			s += "+sig"
		}
		if b.Type == session.BlockToolUse {
			s += ":" + b.Name
		}
	}
	return s
}

// renderImport imports a fixture and returns its golden JSON and markdown.
func renderImport(t *testing.T, data []byte, kind Kind, opt Options) ([]byte, []byte) {
	t.Helper()
	imps, err := Import(kind, data, opt)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	var sessions []goldenSession
	var md bytes.Buffer
	for i, imp := range imps {
		meta, nodes := session.FromShare(&imp.Share, testID(i), t0)
		g := goldenSession{
			SourceID: imp.SourceID, Parent: imp.Parent, Title: meta.Title, TitleSource: meta.TitleSource,
			ProjectPath: meta.ProjectPath, CreatedAt: meta.CreatedAt, UpdatedAt: meta.UpdatedAt,
			Nodes: len(nodes), ActivePath: meta.MessageCount, Branches: len(meta.Branches), Tokens: meta.Tokens,
			Usage: meta.Usage, UsageTotal: meta.Usage.Total(), Skipped: imp.Skipped,
			Roles: map[string]int{}, Kinds: map[string]int{},
		}
		for _, n := range nodes {
			g.Roles[string(n.Msg.Role)]++
			if n.Msg.Kind != session.KindNone {
				g.Kinds[string(n.Msg.Kind)]++
			}
			if n.Msg.IsError {
				g.ToolErrors++
			}
			for _, b := range n.Msg.Content.Blocks {
				if b.Type == session.BlockThinking && b.HasSignature {
					g.Signatures++
				}
			}
		}
		if i > 0 {
			md.WriteString("\n")
		}
		mw := render.NewMarkdownWriter(&md)
		if err := mw.Header(&meta); err != nil {
			t.Fatal(err)
		}
		for _, n := range session.NewTree(nodes).Path(meta.Head) {
			if err := mw.Message(&n.Msg); err != nil {
				t.Fatal(err)
			}
			g.Path = append(g.Path, outline(&n.Msg))
		}
		sessions = append(sessions, g)
	}
	js, err := json.MarshalIndent(sessions, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(js, '\n'), md.Bytes()
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the import (run go test -update and review the diff)\n%s", path, firstDiff(want, got))
	}
}

func firstDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n want %.300q\n  got %.300q", i+1, w, g)
		}
	}
	return ""
}

// TestFixturesGolden imports every fixture and pins its figures and its
// markdown export.
func TestFixturesGolden(t *testing.T) {
	for _, fx := range fixtures(t) {
		t.Run(fx.dir+"/"+fx.name, func(t *testing.T) {
			data := readFile(t, fx.path)
			js, md := renderImport(t, data, fx.kind, Options{})
			base := filepath.Join("testdata", "golden", fx.dir+"-"+strings.TrimSuffix(strings.TrimSuffix(fx.name, ".jsonl"), ".json"))
			checkGolden(t, base+".json", js)
			checkGolden(t, base+".md", md)
		})
	}
}

// TestFixturesImport checks what must hold for every fixture, auto-detected
// or not: it imports, every message is valid whycodes JSON that decodes back
// to itself, tool messages follow their calls, and nothing is re-stamped.
func TestFixturesImport(t *testing.T) {
	for _, fx := range fixtures(t) {
		t.Run(fx.dir+"/"+fx.name, func(t *testing.T) {
			data := readFile(t, fx.path)
			for _, kind := range []Kind{KindAuto, fx.kind} {
				for _, opt := range []Options{{}, {Sidechains: true}} {
					imps, err := Import(kind, data, opt)
					if err != nil {
						t.Fatalf("Import(%q, %+v): %v", kind, opt, err)
					}
					for _, imp := range imps {
						checkImported(t, &imp)
						if untimed[fx.dir] {
							continue // the format carries no times
						}
						if imp.Share.Meta.CreatedAt == "" || imp.Share.Meta.UpdatedAt == "" {
							t.Errorf("%s: no source times", imp.SourceID)
						}
						if imp.SourceID == "" {
							t.Errorf("no source id")
						}
						for _, m := range allMessages(&imp.Share) {
							if m.CreatedAt == "" && m.Role != session.RoleSystem {
								t.Errorf("%s: a %s message without created_at: %.200s", imp.SourceID, m.Role, m.AppendJSON(nil))
							}
						}
					}
				}
			}
		})
	}
}

// untimed are the fixture directories of formats whose records carry no
// time (Claude Code's stream-json, codex exec --json) or not on every line
// (cursor-agent's prompt and final reply).
var untimed = map[string]bool{"claude-stream": true, "codex-exec": true, "cursor": true}

func allMessages(sh *session.Share) []session.Message {
	out := append([]session.Message(nil), sh.Messages...)
	for _, b := range sh.Branches {
		out = append(out, b.Messages...)
	}
	return out
}

// checkImported holds for every successful import, fuzzed or not.
func checkImported(t testing.TB, imp *Imported) {
	t.Helper()
	if !hasTurns(&imp.Share) {
		t.Fatalf("an import without user or assistant messages")
	}
	check := func(path []session.Message) {
		calls := map[string]bool{}
		for i := range path {
			m := &path[i]
			raw := m.AppendJSON(nil)
			if !gjson.ValidBytes(raw) {
				t.Fatalf("message is not valid JSON: %.300s", raw)
			}
			back, err := session.DecodeMessage(raw)
			if err != nil {
				t.Fatalf("message does not decode: %v: %.300s", err, raw)
			}
			if again := back.AppendJSON(nil); !bytes.Equal(again, raw) {
				t.Fatalf("message does not round trip:\n%.300s\n%.300s", raw, again)
			}
			for _, b := range m.Content.Blocks {
				if b.Type == session.BlockToolUse {
					calls[b.ID] = true
				}
			}
			if m.Role == session.RoleTool && m.Name != "" && !calls[m.ToolCallID] {
				t.Fatalf("tool message %q named %q comes before its call", m.ToolCallID, m.Name)
			}
		}
	}
	check(imp.Share.Messages)
	for _, b := range imp.Share.Branches {
		check(b.Messages)
	}
	for _, f := range imp.Share.Meta.Extra {
		if !gjson.ValidBytes(f.Value) {
			t.Fatalf("meta member %s is not valid JSON", f.Key)
		}
	}
	for _, ts := range []string{imp.Share.Meta.CreatedAt, imp.Share.Meta.UpdatedAt} {
		if ts != "" {
			if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
				t.Fatalf("meta time %q: %v", ts, err)
			}
		}
	}
	meta, nodes := session.FromShare(&imp.Share, testID(0), t0)
	if meta.Head == 0 || len(nodes) == 0 {
		t.Fatalf("FromShare made no path")
	}
	if got := session.NewTree(nodes).Path(meta.Head); len(got) != len(imp.Share.Messages) {
		t.Fatalf("active path has %d nodes, want %d", len(got), len(imp.Share.Messages))
	}
}

func isInvalid(err error) bool {
	var ie *session.InvalidError
	return errors.As(err, &ie)
}

// Token usage that adds up past a counter's range is refused, in every
// format that sums it, rather than wrapped around.
func TestUsageOutOfRange(t *testing.T) {
	const top = uint64(1<<64 - 1)
	asst := func(uuid, parent, msgID string, out uint64) string {
		return rec("assistant", uuid, parent, map[string]any{"message": map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "content": []any{textBlock("ok")},
			"usage": map[string]any{"input_tokens": 1, "output_tokens": out}}})
	}
	claude := func(out uint64) []byte {
		return jsonl(userRec("u1", "", "go"), asst("a1", "u1", "M", top), userRec("u2", "a1", "more"), asst("a2", "u2", "N", out))
	}
	// n steps of 2^63-1 output tokens each: two fit, three do not.
	opencode := func(n int) []byte {
		msgs := []ocMsg{ocUser("msg_0", 1771214900000, ocText("go"))}
		for i := 1; i <= n; i++ {
			msgs = append(msgs, ocAsst(fmt.Sprintf("msg_%d", i), "msg_0", 1771214900000+int64(i)*1000, ocTokens(0, math.MaxInt64, 0), ocText("ok")))
		}
		return ocExport(t, map[string]any{"id": "ses_1", "title": "t"}, msgs...)
	}
	for _, c := range []struct {
		name     string
		kind     Kind
		ok, over []byte
	}{
		{"claude", KindClaude, claude(0), claude(1)},
		{"opencode", KindOpencode, opencode(2), opencode(3)},
	} {
		if _, err := Import(c.kind, c.ok, Options{}); err != nil {
			t.Errorf("%s: usage up to the limit: %v", c.name, err)
		}
		if _, err := Import(c.kind, c.over, Options{}); err == nil || !isInvalid(err) || !strings.Contains(err.Error(), errUsageRange) {
			t.Errorf("%s: usage past the limit: %v", c.name, err)
		}
	}
	response := func(out uint64) string {
		return fmt.Sprintf(`{"type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":0,"output_tokens":%d}}`, out)
	}
	if _, err := ParseMessages([]byte(response(top) + "\n" + response(0) + "\n")); err != nil {
		t.Errorf("responses up to the limit: %v", err)
	}
	_, err := ParseMessages([]byte(response(top) + "\n" + response(1) + "\n"))
	if err == nil || !isInvalid(err) || err.Error() != "line 2: "+errUsageRange {
		t.Errorf("responses past the limit: %v", err)
	}
}
