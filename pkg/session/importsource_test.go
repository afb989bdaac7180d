package session_test

import (
	"reflect"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
)

// importOf is a session imported from a share of msgs, recorded as from
// source "claude"/"s1" with usage u.
func importOf(t *testing.T, u session.Usage, msgs ...session.Message) (session.Meta, []session.Node) {
	t.Helper()
	sh := session.Share{Messages: msgs}
	sh.Meta.Usage = u
	m, nodes := session.FromShare(&sh, testID, t0)
	m.RecordImport("claude", "s1", "/h/s1.jsonl", u)
	return m, nodes
}

func equal(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %#v\n want %#v", what, got, want)
	}
}

// activePath is the nodes from the root to m's head.
func activePath(m *session.Meta, nodes []session.Node) []session.Node {
	var out []session.Node
	for _, n := range session.NewTree(nodes).Path(m.Head) {
		out = append(out, *n)
	}
	return out
}

func pathTexts(t *testing.T, m *session.Meta, nodes []session.Node) []string {
	t.Helper()
	var out []string
	for _, n := range session.NewTree(nodes).Path(m.Head) {
		s, _ := n.Msg.AsText()
		out = append(out, s)
	}
	return out
}

// --update: a source that grew adds its new messages and the growth of its
// usage; one rewound keeps the old path as a branch; one unchanged adds
// nothing.
func TestUpdateFromShare(t *testing.T) {
	a, b, c, d := text(session.RoleUser, "a"), text(session.RoleAssistant, "b"), text(session.RoleUser, "c"), text(session.RoleAssistant, "d")
	m, nodes := importOf(t, session.Usage{InputTokens: 10, OutputTokens: 5}, a, b)

	same := session.Share{Messages: []session.Message{a, b}}
	same.Meta.Usage = session.Usage{InputTokens: 10, OutputTokens: 5}
	if res := session.UpdateFromShare(&m, nodes, &same, t0); res.Added != 0 || len(res.Nodes) != 0 {
		t.Fatalf("an unchanged source added %+v", res)
	}

	grown := session.Share{Messages: []session.Message{a, b, c, d}}
	grown.Meta.Usage = session.Usage{InputTokens: 25, OutputTokens: 9}
	res := session.UpdateFromShare(&m, activePath(&m, nodes), &grown, t0)
	if res.Added != 2 || res.Diverged || len(m.Branches) != 0 {
		t.Fatalf("growth: %+v, branches %v", res, m.Branches)
	}
	nodes = append(nodes, res.Nodes...)
	equal(t, "path", pathTexts(t, &m, nodes), []string{"a", "b", "c", "d"})
	equal(t, "usage", m.Usage, session.Usage{InputTokens: 25, OutputTokens: 9})
	equal(t, "message count", m.MessageCount, uint64(4))

	// The source was rewound to after "b" and went on differently.
	e := text(session.RoleUser, "e")
	rewound := session.Share{Messages: []session.Message{a, b, e}}
	rewound.Meta.Usage = session.Usage{InputTokens: 30, OutputTokens: 9}
	res = session.UpdateFromShare(&m, activePath(&m, nodes), &rewound, t0)
	if res.Added != 1 || !res.Diverged || len(m.Branches) != 1 {
		t.Fatalf("rewind: %+v, branches %v", res, m.Branches)
	}
	nodes = append(nodes, res.Nodes...)
	equal(t, "path", pathTexts(t, &m, nodes), []string{"a", "b", "e"})
	equal(t, "kept branch", pathTexts(t, &session.Meta{Head: m.Branches[0].Seq}, nodes), []string{"a", "b", "c", "d"})
	equal(t, "usage", m.Usage, session.Usage{InputTokens: 30, OutputTokens: 9})
	equal(t, "source", m.ImportSource().Path, "/h/s1.jsonl")
}

// --update of a file read while the agent was writing a reply: the stored
// reply is the start of the source's, and the tool result between its
// blocks (Claude Code writes a response a line per block) is unchanged. The
// completed reply replaces the partial copy, which no branch keeps; a reply
// that changed, not grew, still keeps the old path.
func TestUpdateFromShareCompletesAReply(t *testing.T) {
	u := text(session.RoleUser, "fix it")
	callA := session.Block{Type: session.BlockToolUse, ID: "A", Name: "Read", Input: []byte(`{}`)}
	callB := session.Block{Type: session.BlockToolUse, ID: "B", Name: "Read", Input: []byte(`{}`)}
	partial := blocks(session.RoleAssistant, callA)
	m, nodes := importOf(t, session.Usage{InputTokens: 10, OutputTokens: 5}, u, partial, toolMsg("A", "a"))

	whole := session.Share{Messages: []session.Message{u, blocks(session.RoleAssistant, callA, callB), toolMsg("A", "a"), toolMsg("B", "b"), blocks(session.RoleAssistant, session.Block{Type: session.BlockText, Text: "done"})}}
	whole.Meta.Usage = session.Usage{InputTokens: 12, OutputTokens: 9}
	res := session.UpdateFromShare(&m, activePath(&m, nodes), &whole, t0)
	if res.Diverged || len(m.Branches) != 0 || res.Added != 4 {
		t.Fatalf("completed reply: %+v, branches %v", res, m.Branches)
	}
	nodes = append(nodes, res.Nodes...)
	equal(t, "path", len(activePath(&m, nodes)), 5)
	equal(t, "usage", m.Usage, session.Usage{InputTokens: 12, OutputTokens: 9})

	// Codex records a step's token count after the step: the same blocks,
	// more data on the reply.
	counted := whole.Messages[4]
	counted.Extra = []session.Field{{Key: "codex", Value: []byte(`{"usage":{"output_tokens":4}}`)}}
	later := session.Share{Messages: append(append([]session.Message{}, whole.Messages[:4]...), counted)}
	later.Meta.Usage = whole.Meta.Usage
	res = session.UpdateFromShare(&m, activePath(&m, nodes), &later, t0)
	if res.Diverged || len(m.Branches) != 0 || res.Added != 1 {
		t.Fatalf("a counted reply: %+v, branches %v", res, m.Branches)
	}
	nodes = append(nodes, res.Nodes...)

	other := session.Share{Messages: []session.Message{u, blocks(session.RoleAssistant, callB, callA)}}
	other.Meta.Usage = whole.Meta.Usage
	if res := session.UpdateFromShare(&m, activePath(&m, nodes), &other, t0); !res.Diverged || len(m.Branches) != 1 {
		t.Fatalf("a changed reply: %+v, branches %v", res, m.Branches)
	}
}
