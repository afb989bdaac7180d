package format

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wctoolkit/wc/internal/wirecheck/sessioncheck"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/request"
)

// checkWire holds an imported session to what faces outward: every path's
// request bodies pass each provider's rules, the share loads in whycodes
// and imports back as the same tree.
func checkWire(t testing.TB, what string, imp *Imported) {
	t.Helper()
	m, nodes := session.FromShare(&imp.Share, "3f2a9c1e-4b7d-4e2a-9f1c-000000000000", time.Unix(1e9, 0))
	sessioncheck.Session(t, what, &m, session.NewTree(nodes))
}

// TestWireFixtures runs checkWire over every fixture, imported with and
// without sidechains.
func TestWireFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(fixturesDir(t), "*", "*.json*"))
	if err != nil || len(files) < 11 {
		t.Fatalf("fixtures: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, opt := range []Options{{}, {Sidechains: true}} {
			imps, err := Import(KindAuto, data, opt)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for i := range imps {
				checkWire(t, fmt.Sprintf("%s (sidechains %v) session %d", filepath.Base(f), opt.Sidechains, i+1), &imps[i])
			}
		}
	}
}

// codexOwnItems is a rollout holding what only OpenAI's Responses API
// replays, and a custom tool's text input: reasoning with its
// encrypted_content, a web_search_call, an apply_patch custom_tool_call, a
// view_image result.
func codexOwnItems() []string {
	lines := cxTurn("fix it")
	return append(lines,
		cx("response_item", map[string]any{"type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": "plan"}}, "encrypted_content": "gAAAAB"}),
		cx("response_item", map[string]any{"type": "web_search_call", "status": "completed", "action": map[string]any{"type": "search", "query": "go"}}),
		cx("response_item", map[string]any{"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_p", "input": "*** Begin Patch\n*** End Patch\n"}),
		cx("response_item", map[string]any{"type": "custom_tool_call_output", "call_id": "call_p", "output": "Done!"}),
		cx("response_item", map[string]any{"type": "function_call", "name": "view_image", "arguments": `{"path":"a.png"}`, "call_id": "call_v"}),
		cx("response_item", map[string]any{"type": "function_call_output", "call_id": "call_v", "output": []any{map[string]any{"type": "input_image", "image_url": "data:image/png;base64,iVBO"}}}),
	)
}

// claudeOwnBlocks is a Claude Code transcript with the blocks its
// transcripts hold that providers or whycodes refuse as they are: "\n\n"
// text, a PNG read back as an image result, an MCP screenshot, a
// thinking signature.
func claudeOwnBlocks() []string {
	img := map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBO"}}
	return []string{
		userRec("u1", "", "look at the screenshot"),
		rec("assistant", "a1", "u1", map[string]any{"message": map[string]any{"id": "m1", "role": "assistant", "model": "M", "content": []any{
			map[string]any{"type": "text", "text": "\n\n"},
			map[string]any{"type": "thinking", "thinking": "t", "signature": "EqQB"},
			map[string]any{"type": "tool_use", "id": "toolu_r", "name": "Read", "input": map[string]any{"file_path": "a.png"}},
			map[string]any{"type": "tool_use", "id": "toolu_s", "name": "mcp__browser__screenshot", "input": map[string]any{}}}}}),
		rec("user", "r1", "a1", map[string]any{"message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_r", "content": []any{img}},
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_s", "content": []any{map[string]any{"type": "text", "text": "shot"}, img}}}}}),
	}
}

// TestWireOwnBlocks: the transcripts above, imported, give valid bodies
// and a share whycodes loads; their images reach both providers.
func TestWireOwnBlocks(t *testing.T) {
	for name, data := range map[string][]byte{"codex": jsonl(codexOwnItems()...), "claude": jsonl(claudeOwnBlocks()...)} {
		imps, err := Import(KindAuto, data, Options{})
		if err != nil || len(imps) != 1 {
			t.Fatalf("%s: %v", name, err)
		}
		checkWire(t, name, &imps[0])
		msgs := imps[0].Share.Messages
		b, err := request.OpenAI("", msgs, request.Options{Model: "m", Trailing: request.TrailingDrop})
		if err != nil || !bytes.Contains(b, []byte(`"image_url":{"url":"data:image/png;base64,iVBO"}`)) {
			t.Errorf("%s: the image does not reach OpenAI: %v %s", name, err, b)
		}
		b, err = request.Anthropic("", msgs, request.Options{Model: "m", Trailing: request.TrailingDrop})
		if err != nil || !bytes.Contains(b, []byte(`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}`)) {
			t.Errorf("%s: the image does not reach Anthropic: %v %s", name, err, b)
		}
	}
}
