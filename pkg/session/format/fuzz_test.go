package format

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// seedLines adds every line of the fixtures in dir, runs of a few
// consecutive lines, and the whole of each file under maxWhole bytes.
func seedLines(f *testing.F, dir string, maxWhole int) {
	paths, err := filepath.Glob(filepath.Join(fixturesDir(f), dir, "*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		data := readFile(f, p)
		if len(data) <= maxWhole {
			f.Add(data)
		}
		lines := bytes.Split(data, []byte("\n"))
		for i := range lines {
			if len(lines[i]) <= 16<<10 {
				f.Add(lines[i])
			}
			if end := min(i+4, len(lines)); i%3 == 0 && len(bytes.Join(lines[i:end], nil)) <= 32<<10 {
				f.Add(bytes.Join(lines[i:end], []byte("\n")))
			}
		}
	}
}

// fuzzImport imports data as kind with and without sidechains: it may fail
// only with an InvalidError, and what it returns must hold everywhere.
func fuzzImport(t *testing.T, kind Kind, data []byte) {
	for _, opt := range []Options{{}, {Sidechains: true}} {
		imps, err := Import(kind, data, opt)
		if err != nil {
			if !isInvalid(err) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			continue
		}
		for i := range imps {
			checkImported(t, &imps[i])
			checkWire(t, "the import", &imps[i])
		}
	}
	if _, err := Detect(data); err != nil && !isInvalid(err) {
		t.Fatalf("Detect error of type %T: %v", err, err)
	}
	if _, err := Import(KindAuto, data, Options{}); err != nil && !isInvalid(err) {
		t.Fatalf("auto import error of type %T: %v", err, err)
	}
}

func FuzzImportClaude(f *testing.F) {
	seedLines(f, "claude-code", 40<<10)
	f.Add(jsonl(claudeOwnBlocks()...))
	// Bytes that are not UTF-8 (commands refuse them; Import need not).
	f.Add([]byte(strings.Replace(userRec("u1", "", "bad BYTES"), "BYTES", "\xa4\xa4", 1)))
	f.Add(jsonl(
		progressRec("p0", ""), userRec("u1", "p0", "go"),
		asstRec("a1", "u1", "M", 25, useBlock("c1", "Read")), asstRec("a2", "a1", "M", 30, useBlock("c2", "Glob")),
		resultRec("r2", "a2", "c2", "x", false), resultRec("r1", "a1", "c1", "y", true),
		rec("system", "cb", "", map[string]any{"subtype": "compact_boundary"}),
		rec("user", "cs", "cb", map[string]any{"isCompactSummary": true, "isSidechain": true, "message": map[string]any{"role": "user", "content": "summary"}}),
	))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzImport(t, KindClaude, data) })
}

func FuzzImportCodex(f *testing.F) {
	seedLines(f, "codex", 24<<10)
	var lines []string
	lines = append(lines, cxTurn("one")...)
	lines = append(lines, cxCall("c1", "{}"), cxOut("c1", "ok"), cxTokens(5, 1, 2),
		cxEvent("thread_rolled_back", map[string]any{"num_turns": 1}),
		cx("compacted", map[string]any{"message": "S", "replacement_history": []any{map[string]any{"type": "message", "role": "user", "content": "S"}}}))
	f.Add(jsonl(lines...))
	f.Add(jsonl(codexOwnItems()...))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzImport(t, KindCodex, data) })
}

func FuzzImportOpencode(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join(fixturesDir(f), "opencode", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) <= 24<<10 {
			f.Add(data)
		}
		// Small slices: the session info with one or two of its messages.
		doc := gjson.ParseBytes(data)
		msgs := doc.Get("messages").Array()
		for i := range msgs {
			for n := 1; n <= 2 && i+n <= len(msgs); n++ {
				var b bytes.Buffer
				b.WriteString(`{"info":` + doc.Get("info").Raw + `,"messages":[`)
				for j, m := range msgs[i : i+n] {
					if j > 0 {
						b.WriteByte(',')
					}
					b.WriteString(m.Raw)
				}
				b.WriteString("]}")
				if b.Len() <= 24<<10 {
					f.Add(b.Bytes())
				}
			}
		}
	}
	f.Add([]byte(`{"info":{"id":"ses_1","revert":{"messageID":"m2"}},"messages":[{"info":{"id":"m1","role":"user"},"parts":[{"type":"text","text":"hi"}]},{"info":{"id":"m2","role":"assistant","summary":true,"tokens":{"input":1}},"parts":[{"type":"tool","callID":"c","tool":"t","state":{"status":"error","error":"x"}}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzImport(t, KindOpencode, data) })
}

// FuzzImportStreams covers the formats added with Gemini CLI: its
// recordings and streams, Claude Code's and cursor-agent's stream-json,
// codex exec --json and Claude Code on the web, auto-detected.
func FuzzImportStreams(f *testing.F) {
	for _, dir := range []string{"gemini", "claude-stream", "cursor", "codex-exec", "claude-web"} {
		seedLines(f, dir, 24<<10)
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzImport(t, KindAuto, data) })
}
