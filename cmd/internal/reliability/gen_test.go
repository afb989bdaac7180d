package reliability

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// stamp is the created_at every generated message carries, so that the
// same input gives the same stored bytes in the store under test and in its
// reference copy.
const stamp = "2026-01-02T03:04:05Z"

// gen writes the messages the suites append and import: turns of a user
// question, an assistant tool call, its tool output and an answer. Every
// text carries a unique tag.
type gen struct {
	rng *rand.Rand
	n   int
}

func (g *gen) tag() string {
	g.n++
	return fmt.Sprintf("t%d", g.n)
}

// filler is size bytes of printable text.
func (g *gen) filler(tag string, size int) string {
	var b strings.Builder
	for b.Len() < size {
		fmt.Fprintf(&b, "%s line %d: func f%d() { return %d }\n", tag, b.Len(), g.rng.IntN(1000), g.rng.IntN(1000))
	}
	return b.String()[:size]
}

func msgJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// turn is one user turn as four messages; toolSize is the size of the
// tool output.
func (g *gen) turn(toolSize int) []string {
	tag := g.tag()
	call := "call_" + tag
	file := fmt.Sprintf("src/pkg%d/file%s.go", g.rng.IntN(20), tag)
	return []string{
		msgJSON(map[string]any{"role": "user", "content": "question " + tag + " about " + file, "created_at": stamp}),
		msgJSON(map[string]any{"role": "assistant", "created_at": stamp, "content": []any{
			map[string]any{"type": "text", "text": "reading " + file},
			map[string]any{"type": "tooluse", "id": call, "name": "read", "input": map[string]any{"path": file}},
		}}),
		msgJSON(map[string]any{"role": "tool", "tool_call_id": call, "content": g.filler(tag, toolSize), "created_at": stamp}),
		msgJSON(map[string]any{"role": "assistant", "content": "answer " + tag + ": " + g.filler(tag, 40+g.rng.IntN(200)), "created_at": stamp}),
	}
}

// turns is n turns as NDJSON.
func (g *gen) turns(n, toolSize int) []byte {
	var b strings.Builder
	for range n {
		for _, m := range g.turn(toolSize) {
			b.WriteString(m)
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}

// share is a native share of n turns.
func (g *gen) share(title string, n, toolSize int) []byte {
	var msgs []json.RawMessage
	for range n {
		for _, m := range g.turn(toolSize) {
			msgs = append(msgs, json.RawMessage(m))
		}
	}
	return []byte(msgJSON(map[string]any{"title": title, "messages": msgs}) + "\n")
}
