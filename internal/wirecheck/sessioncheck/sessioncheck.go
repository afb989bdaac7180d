package sessioncheck

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wctoolkit/wc/internal/wirecheck"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/request"
)

// Tools are the tool definitions every checked body carries.
const Tools = `[{"name":"bash","description":"Run a command.","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}]`

// Session checks m and its tree; a failure names what.
func Session(t testing.TB, what string, m *session.Meta, tree *session.Tree) {
	t.Helper()
	if err := Check(m, tree); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

// Check returns what in m and its tree breaks a rule: the request bodies
// of the active path and of every branch, and the share.
func Check(m *session.Meta, tree *session.Tree) error {
	errs := []error{Requests(m.SystemPrompt, tree.Path(m.Head))}
	for i, b := range m.Branches {
		if err := Requests(m.SystemPrompt, tree.Path(b.Seq)); err != nil {
			errs = append(errs, fmt.Errorf("branch %d: %w", i+1, err))
		}
	}
	return errors.Join(append(errs, Share(m, tree))...)
}

// Requests builds the bodies of one path for both providers and checks
// each; a path that ends with an assistant message, in each mode for it.
func Requests(system string, path []*session.Node) error {
	msgs := make([]session.Message, len(path))
	for i, n := range path {
		msgs[i] = n.Msg
	}
	var errs []error
	var build func(provider string, trailing request.Trailing)
	build = func(provider string, trailing request.Trailing) {
		opt := request.Options{Model: "m", Tools: []byte(Tools), Trailing: trailing}
		var body []byte
		var err error
		if provider == "anthropic" {
			body, err = request.Anthropic(system, msgs, opt)
		} else {
			body, err = request.OpenAI(system, msgs, opt)
		}
		switch {
		case errors.As(err, new(*request.NothingToSendError)):
			return
		case errors.As(err, new(*request.PrefillError)) && provider == "anthropic" && trailing == request.TrailingDefault:
			build(provider, request.TrailingDrop)
			build(provider, request.TrailingKeep)
			return
		case err != nil:
			errs = append(errs, fmt.Errorf("%s (trailing %d): %v", provider, trailing, err))
			return
		case provider == "anthropic":
			err = wirecheck.CheckAnthropic(body, wirecheck.AnthropicOptions{Prefill: trailing == request.TrailingKeep})
		default:
			err = wirecheck.CheckOpenAI(body)
			if trailing == request.TrailingDefault && len(msgs) > 0 && msgs[len(msgs)-1].Role == session.RoleAssistant {
				build(provider, request.TrailingDrop)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (trailing %d): %v\n%s", provider, trailing, err, body))
		}
	}
	build("anthropic", request.TrailingDefault)
	build("openai", request.TrailingDefault)
	return errors.Join(errs...)
}

// Share checks that m's share loads in whycodes, keeping every message
// with its role, ids and text, and that importing it gives the tree's
// jsonl lines (--tree) back byte for byte.
func Share(m *session.Meta, tree *session.Tree) error {
	share := session.AppendShare(nil, m, tree)
	ws, err := wirecheck.LoadWhycodes(share)
	if err != nil {
		return fmt.Errorf("whycodes does not load the share: %v\n%s", err, share)
	}
	if err := kept(ws.Messages, tree.Path(m.Head)); err != nil {
		return fmt.Errorf("whycodes' messages: %v", err)
	}
	if len(ws.Branches) != len(m.Branches) {
		return fmt.Errorf("whycodes has %d branches, wc %d", len(ws.Branches), len(m.Branches))
	}
	for i, b := range m.Branches {
		if err := kept(ws.Branches[i].Messages, tree.Path(b.Seq)); err != nil {
			return fmt.Errorf("whycodes' branch %d: %v", i+1, err)
		}
	}
	sh, err := session.DecodeShare(share)
	if err != nil {
		return fmt.Errorf("wc does not read its share back: %v", err)
	}
	m2, nodes := session.FromShare(&sh, m.ID, time.Unix(0, 0))
	tree2 := session.NewTree(nodes)
	if !sameLines(m, tree, &m2, tree2) {
		return fmt.Errorf("the share's import is another tree:\nbefore\n%s\nafter\n%s", TreeLines(m, tree), TreeLines(&m2, tree2))
	}
	// An import titles a session still on its placeholder from its first
	// user turn, as whycodes' resume does; nothing else may differ.
	want := *m
	var active []session.Message
	for _, n := range tree.Path(m.Head) {
		active = append(active, n.Msg)
	}
	want.UpgradeTitleFromHistory(active)
	if a, b := want.Info(), m2.Info(); !reflect.DeepEqual(a, b) {
		return fmt.Errorf("the share's import has other info:\nbefore %+v\nafter  %+v", a, b)
	}
	return nil
}

// kept compares whycodes' view of a path with wc's: the same messages,
// roles, tool ids and names, every text block, call and result.
func kept(ws []wirecheck.WhycodesMessage, path []*session.Node) error {
	if len(ws) != len(path) {
		return fmt.Errorf("%d messages, wc has %d", len(ws), len(path))
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	// wc writes each byte of invalid UTF-8 it holds (input that did not
	// come through a command's door, which refuses it) as U+FFFD.
	valid := func(s string) string {
		if utf8.ValidString(s) {
			return s
		}
		var b strings.Builder
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			b.WriteRune(r)
			i += n
		}
		return b.String()
	}
	for i, n := range path {
		m, w := &n.Msg, &ws[i]
		if w.Role != string(m.Role) || str(w.ToolCallID) != valid(m.ToolCallID) || str(w.Name) != valid(m.Name) || str(w.CreatedAt) != m.CreatedAt {
			return fmt.Errorf("message %d: %+v for %s", i+1, w, m.AppendJSON(nil))
		}
		if !m.Content.IsBlocks {
			if w.Text == nil || *w.Text != valid(m.Content.Text) {
				return fmt.Errorf("message %d: the text is not kept", i+1)
			}
			continue
		}
		var want, got []string
		for _, b := range m.Content.Blocks {
			switch b.Type {
			case session.BlockText:
				want = append(want, "text:"+valid(b.Text))
			case session.BlockToolUse:
				want = append(want, "call:"+valid(b.ID)+":"+valid(b.Name))
			case session.BlockToolResult:
				want = append(want, "result:"+valid(b.ToolUseID)+":"+valid(b.ResultText()))
			case session.BlockThinking:
				want = append(want, "thinking:"+valid(b.Text))
			}
		}
		for _, b := range w.Blocks {
			switch b.Type {
			case "text":
				got = append(got, "text:"+b.Text)
			case "tooluse":
				got = append(got, "call:"+b.ID+":"+b.Name)
			case "toolresult":
				got = append(got, "result:"+b.ToolUseID+":"+b.Result)
			case "thinking":
				got = append(got, "thinking:"+b.Text)
			}
		}
		if !slices.Equal(want, got) {
			return fmt.Errorf("message %d keeps %.300q, wc holds %.300q", i+1, got, want)
		}
	}
	return nil
}

// sameLines reports whether two sessions' jsonl --tree lines are the same
// but for the id, without writing them: the same nodes, with the same
// parents and messages, the same head and branch names.
func sameLines(m1 *session.Meta, t1 *session.Tree, m2 *session.Meta, t2 *session.Tree) bool {
	n1, n2 := t1.Nodes(), t2.Nodes()
	if len(n1) != len(n2) || m1.Head != m2.Head || !reflect.DeepEqual(m1.BranchNames(), m2.BranchNames()) {
		return false
	}
	for i := range n1 {
		if n1[i].Seq != n2[i].Seq || n1[i].Parent != n2[i].Parent || !n1[i].Msg.SameJSON(&n2[i].Msg) {
			return false
		}
	}
	return true
}

// TreeLines is what wc-export --format jsonl --tree prints for the session.
func TreeLines(m *session.Meta, tree *session.Tree) []byte {
	names := m.BranchNames()
	var out []byte
	for i := range tree.Nodes() {
		n := &tree.Nodes()[i]
		out = session.AppendNodeLine(out, m.ID, n, n.Seq == m.Head, names[n.Seq])
	}
	return out
}
