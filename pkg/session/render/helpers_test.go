package render_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// t0 is the fixed clock of every test.
var t0 = time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)

const testID = "3f2a9c1e-4b7d-4e2a-9f1c-0123456789ab"

func decode(t testing.TB, raw string) session.Message {
	t.Helper()
	m, err := session.DecodeMessage([]byte(raw))
	if err != nil {
		t.Fatalf("DecodeMessage(%s): %v", raw, err)
	}
	return m
}

func text(role session.Role, s string) session.Message {
	return session.Message{Role: role, Content: session.TextContent(s)}
}

func blocks(role session.Role, b ...session.Block) session.Message {
	return session.Message{Role: role, Content: session.BlockContent(b...)}
}

func toolMsg(callID, body string) session.Message {
	return session.Message{Role: session.RoleTool, Content: session.TextContent(body), ToolCallID: callID}
}

func toolUse(id, name, input string) session.Block {
	return session.Block{Type: session.BlockToolUse, ID: id, Name: name, Input: json.RawMessage(input)}
}

func ptr[T any](v T) *T { return &v }

// buildSession appends msgs to a new session, as the store would hold them.
func buildSession(t testing.TB, project, system string, msgs ...session.Message) (session.Meta, *session.Tree) {
	t.Helper()
	m := session.New(testID, project, system, t0)
	res := session.Append(&m, nil, msgs, t0, nil, session.AppendOptions{})
	return m, session.NewTree(res.Nodes)
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
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
		t.Errorf("%s differs from the golden file (run go test -update to accept):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}
