package main

import (
	"bytes"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/wctoolkit/wc/cmd/internal/tooltest"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/format"
)

// TestOnlyThisLinksSQLite: wc-sqlite alone links the SQLite library, so
// that wc-new and the others start as fast without it, and it does not
// link the store's database; a change that imports SQLite into another
// command, through any package, fails here.
func TestOnlyThisLinksSQLite(t *testing.T) {
	bin := tooltest.Binaries(t)
	entries, err := os.ReadDir(bin)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "wc-") {
			continue
		}
		info, err := buildinfo.ReadFile(filepath.Join(bin, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sqlite, badger := false, false
		for _, dep := range info.Deps {
			sqlite = sqlite || strings.HasPrefix(dep.Path, "modernc.org/sqlite")
			badger = badger || strings.HasPrefix(dep.Path, "github.com/dgraph-io/badger")
		}
		if want := e.Name() == "wc-sqlite"; sqlite != want {
			t.Errorf("%s links SQLite: %v, want %v", e.Name(), sqlite, want)
		}
		if e.Name() == "wc-sqlite" && badger {
			t.Errorf("wc-sqlite links Badger")
		}
		seen++
	}
	if seen < 8 {
		t.Fatalf("only %d wc binaries in %s", seen, bin)
	}
}

func rowsOf(t *testing.T, db string, tables ...string) []byte {
	t.Helper()
	cmd := exec.Command(filepath.Join(tooltest.Binaries(t), "wc-sqlite"), append([]string{"rows", db}, tables...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("wc-sqlite rows %s: %v: %s", db, err, stderr.String())
	}
	return out
}

// eachRow calls fn with the rows of table.
func eachRow(data []byte, table string, fn func(r gjson.Result)) {
	for _, line := range bytes.Split(data, []byte("\n")) {
		if v := gjson.ParseBytes(line); v.Get("table").Str == table {
			fn(v.Get("row"))
		}
	}
}

// TestDatabaseCounts compares what every database fixture holds, counted
// from its own rows by its application's rules, with what its import
// holds: sessions, tool calls, tool results and usage.
func TestDatabaseCounts(t *testing.T) {
	dir := filepath.Join(tooltest.Fixtures(t), "sqlite")
	type counts struct{ sessions, calls, results, in, out int }
	cases := []struct {
		file   string
		kind   format.Kind
		tables []string
		source func(rows []byte) counts
	}{
		{"opencode.db", format.KindOpencode, []string{"session", "message", "part"}, func(rows []byte) (c counts) {
			eachRow(rows, "session", func(gjson.Result) { c.sessions++ })
			eachRow(rows, "part", func(r gjson.Result) {
				if p := gjson.Parse(r.Get("data").Str); p.Get("type").Str == "tool" {
					c.calls++
					if s := p.Get("state.status").Str; s == "completed" || s == "error" {
						c.results++
					}
				}
			})
			eachRow(rows, "message", func(r gjson.Result) {
				d := gjson.Parse(r.Get("data").Str)
				c.in += int(d.Get("tokens.input").Int())
				c.out += int(d.Get("tokens.output").Int())
			})
			return
		}},
		{"goose.db", format.KindGoose, []string{"sessions", "messages"}, func(rows []byte) (c counts) {
			eachRow(rows, "sessions", func(r gjson.Result) {
				c.sessions++
				c.in += int(r.Get("accumulated_input_tokens").Int())
				c.out += int(r.Get("accumulated_output_tokens").Int())
			})
			eachRow(rows, "messages", func(r gjson.Result) {
				gjson.Parse(r.Get("content_json").Str).ForEach(func(_, item gjson.Result) bool {
					switch item.Get("type").Str {
					case "toolRequest":
						c.calls++
					case "toolResponse":
						c.results++
					}
					return true
				})
			})
			return
		}},
		{"llm-legacy.db", format.KindLLM, []string{"conversations", "responses", "tool_calls", "tool_results"}, func(rows []byte) (c counts) {
			eachRow(rows, "conversations", func(gjson.Result) { c.sessions++ })
			eachRow(rows, "tool_calls", func(gjson.Result) { c.calls++ })
			eachRow(rows, "tool_results", func(gjson.Result) { c.results++ })
			eachRow(rows, "responses", func(r gjson.Result) {
				c.in += int(r.Get("input_tokens").Int())
				c.out += int(r.Get("output_tokens").Int())
			})
			return
		}},
		{"llm-0.32.db", format.KindLLM, []string{"threads", "turns", "messages", "parts", "fragments"}, func(rows []byte) (c counts) {
			eachRow(rows, "threads", func(gjson.Result) { c.sessions++ })
			eachRow(rows, "turns", func(r gjson.Result) {
				c.in += int(r.Get("input_tokens").Int())
				c.out += int(r.Get("output_tokens").Int())
			})
			return
		}},
		{"whycodes.db", format.KindWhycodes, []string{"sessions", "messages"}, func(rows []byte) (c counts) {
			eachRow(rows, "sessions", func(r gjson.Result) {
				c.sessions++
				c.in += int(r.Get("input_tokens").Int())
				c.out += int(r.Get("output_tokens").Int())
			})
			eachRow(rows, "messages", func(r gjson.Result) {
				m := gjson.Parse(r.Get("content").Str)
				if m.Get("role").Str == "tool" {
					c.results++
				}
				m.Get("content").ForEach(func(_, b gjson.Result) bool {
					if b.Get("type").Str == "tooluse" {
						c.calls++
					}
					return true
				})
			})
			return
		}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			rows := rowsOf(t, filepath.Join(dir, tc.file), tc.tables...)
			imps, err := format.ImportSQLite(tc.kind, rows, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got counts
			got.sessions = len(imps)
			for i, imp := range imps {
				_, nodes := session.FromShare(&imp.Share, fmt.Sprintf("3f2a9c1e-4b7d-4e2a-9f1c-%012d", i), time.Time{})
				for _, n := range nodes {
					if n.Msg.Role == session.RoleTool {
						got.results++
					}
					for _, b := range n.Msg.Content.Blocks {
						if b.Type == session.BlockToolUse {
							got.calls++
						}
					}
				}
				got.in += int(imp.Share.Meta.Usage.InputTokens)
				got.out += int(imp.Share.Meta.Usage.OutputTokens)
			}
			want := tc.source(rows)
			t.Logf("| sqlite/%s | %+v |", tc.file, got)
			if got != want {
				t.Errorf("import %+v\nsource %+v", got, want)
			}
		})
	}
}

// TestManPage: man/wc-sqlite.1, written by hand (the generated pages are
// those of the commands with the store's options), is clean to groff's
// man checks, its synopsis gives each form the usage message gives, and
// its EXIT STATUS names each status the program exits with.
func TestManPage(t *testing.T) {
	page := filepath.Join(tooltest.ModuleRoot(t), "man", "wc-sqlite.1")
	lint, err := exec.Command("groff", "-man", "-ww", "-z", page).CombinedOutput()
	if err != nil || len(lint) > 0 {
		t.Fatalf("groff -man -ww -z %s: %v\n%s", page, err, lint)
	}
	rendered, err := exec.Command("groff", "-man", "-Tascii", "-P-cbou", page).Output()
	if err != nil {
		t.Fatal(err)
	}
	text := string(rendered)
	section := func(name string) string {
		_, rest, ok := strings.Cut(text, "\n"+name+"\n")
		if !ok {
			t.Fatalf("the page has no %s", name)
		}
		if i := strings.Index(rest, "\n\n\n"); i >= 0 {
			rest = rest[:i]
		}
		for _, next := range []string{"\nDESCRIPTION\n", "\nENVIRONMENT\n"} {
			if i := strings.Index(rest, next); i >= 0 {
				rest = rest[:i]
			}
		}
		return strings.Join(strings.Fields(rest), " ")
	}

	bin := filepath.Join(tooltest.Binaries(t), "wc-sqlite")
	dir := t.TempDir()
	notDB := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notDB, []byte("not a database\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fixture := filepath.Join(tooltest.ModuleRoot(t), "testdata", "fixtures", "sqlite", "goose.db")
	var usage string
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"tables", fixture}, 0},
		{[]string{"tables", filepath.Join(dir, "missing.db")}, 1},
		{[]string{"rows", fixture, "no_such_table"}, 1},
		{nil, 2},
		{[]string{"list", fixture}, 2},
		{[]string{"tables", notDB}, 65},
	} {
		cmd := exec.Command(bin, c.args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code {
			t.Errorf("wc-sqlite %q exited %d, want %d (%s)", c.args, code, c.code, stderr.String())
		}
		if !strings.Contains(section("EXIT STATUS"), fmt.Sprintf(" %d ", c.code)) && !strings.HasPrefix(section("EXIT STATUS"), fmt.Sprintf("%d ", c.code)) {
			t.Errorf("EXIT STATUS does not name %d", c.code)
		}
		if c.code == 2 {
			usage = strings.TrimSpace(strings.TrimPrefix(stderr.String(), "wc-sqlite: usage:"))
		}
	}
	for _, form := range strings.Split(usage, "|") {
		if form = strings.Join(strings.Fields(strings.ReplaceAll(form, "...", " ...")), " "); !strings.Contains(section("SYNOPSIS"), form) {
			t.Errorf("SYNOPSIS %q does not give the usage form %q", section("SYNOPSIS"), form)
		}
	}
}
