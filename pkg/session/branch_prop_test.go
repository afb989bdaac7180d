package session_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/wctoolkit/wc/internal/wirecheck/sessioncheck"
	"github.com/wctoolkit/wc/pkg/session"
)

// The branch operations against a naive model: whycodes' `messages` as a
// plain list of texts, `branches` as full copies, the checkpoint as
// keep_until, with our rules (undo cuts at any user message, as whycodes';
// a checkpoint of an empty session keeps nothing; moving the head keeps the
// path left unless a stored path holds it; a rewind goes to its checkpoint
// while that is on the path, else by position as whycodes does).

const (
	propSequences = 300
	propSteps     = 40
)

type propBranch struct {
	name string
	msgs []string
}

type propCheckpoint struct {
	keepUntil uint64   // whycodes' field
	snapshot  []string // the path at the checkpoint
	goal      string
}

type propNaive struct {
	msgs       []string
	branches   []propBranch
	cp         *propCheckpoint
	lastReport *string
}

// moveTo is our head move on the naive side: the path left is kept as an
// unnamed copy unless the new path or a stored copy holds all of it (texts
// are unique, so a prefix of texts is a prefix of nodes); an unnamed copy
// of the new path is dropped, it is the active path now.
func (n *propNaive) moveTo(to []string, keepOld bool) uint64 {
	old := n.msgs
	holds := func(p []string) bool { return len(old) <= len(p) && slices.Equal(p[:len(old)], old) }
	if keepOld && len(old) > 0 && !holds(to) && !slices.ContainsFunc(n.branches, func(b propBranch) bool { return holds(b.msgs) }) {
		n.branches = append(n.branches, propBranch{msgs: old})
	}
	n.branches = slices.DeleteFunc(n.branches, func(b propBranch) bool { return b.name == "" && slices.Equal(b.msgs, to) })
	n.msgs = slices.Clone(to)
	return uint64(max(0, len(old)-len(to)))
}

func (n *propNaive) named(name string) (propBranch, bool) {
	for _, b := range n.branches {
		if b.name == name && name != "" {
			return b, true
		}
	}
	return propBranch{}, false
}

// reachable reports whether path is a prefix of the active path or of a
// stored copy.
func (n *propNaive) reachable(path []string) bool {
	isPrefix := func(of []string) bool { return len(path) <= len(of) && slices.Equal(of[:len(path)], path) }
	return isPrefix(n.msgs) || slices.ContainsFunc(n.branches, func(b propBranch) bool { return isPrefix(b.msgs) })
}

// propIsUserMessage: every kind fresh makes but assistant and tool
// messages is user-role (no user message here carries tool results).
func propIsUserMessage(s string) bool {
	return !strings.HasPrefix(s, "assistant ") && !strings.HasPrefix(s, "tool ")
}

// propHarness holds both sides and checks them against each other.
type propHarness struct {
	t      *testing.T
	r      *rand.Rand
	m      session.Meta
	nodes  []session.Node
	tree   *session.Tree
	naive  propNaive
	paths  map[uint64][]string // every node's text path, as the naive side wrote it
	heads  map[uint64]bool     // every head ever held
	trace  []string
	serial int

	diverged map[string]int // rewinds where whycodes' keep_until would land elsewhere
}

func (h *propHarness) fail(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("%s\nafter:\n  %s", fmt.Sprintf(format, args...), strings.Join(h.trace, "\n  "))
}

func (h *propHarness) wrote(nodes ...session.Node) {
	for _, n := range nodes {
		depth := int(n.Depth)
		if depth > len(h.naive.msgs) {
			h.fail("node %d has depth %d, the naive path %d messages", n.Seq, depth, len(h.naive.msgs))
		}
		h.paths[n.Seq] = slices.Clone(h.naive.msgs[:depth])
	}
	h.nodes = append(h.nodes, nodes...)
	h.tree = session.NewTree(h.nodes) // appends go past its length: it never sees them
}

func (h *propHarness) head() *session.Node { return h.tree.Node(h.m.Head) }

// fresh makes a message no other has the text of, of a random kind.
func (h *propHarness) fresh() (session.Message, string) {
	h.serial++
	n := strconv.Itoa(h.serial)
	switch k := h.r.IntN(20); {
	case k < 7:
		return brUser("user " + n), "user " + n
	case k < 14:
		return brAsst("assistant " + n), "assistant " + n
	case k < 16:
		return toolMsg("call"+n, "tool "+n), "tool " + n
	case k < 18:
		return brKind(session.KindNote, "note "+n), "note " + n
	case k < 19:
		return brKind(session.KindSummary, "summary "+n), "summary " + n
	default:
		s := session.CompactedMarker + " " + n // a whycodes stub: a summary by its text alone
		return brUser(s), s
	}
}

func (h *propHarness) step() {
	op := h.r.IntN(20)
	var (
		what           string
		err, naiveErr  error
		removed, nRemv uint64
		checkRemoved   bool
	)
	switch {
	case op < 6: // append
		k := 1 + h.r.IntN(3)
		var msgs []session.Message
		var texts []string
		for range k {
			m, s := h.fresh()
			msgs, texts = append(msgs, m), append(texts, s)
		}
		what = fmt.Sprintf("append %q", texts)
		h.naive.msgs = append(h.naive.msgs, texts...)
		res := session.Append(&h.m, h.head(), msgs, t0, nil, session.AppendOptions{})
		h.wrote(res.Nodes...)

	case op < 8: // mark
		pool := []string{"", "", "x", "y", "main", " spaced ", "42", "0", "bad\tname", "esc\x1b", "pre-set-1", "branch 1", "branch 2"}
		name := pool[h.r.IntN(len(pool))]
		what = fmt.Sprintf("mark %q", name)
		_, err = h.m.Mark(name)
		naiveErr = h.naiveMark(name)

	case op < 10: // switch to a branch entry, by name or seq
		if len(h.m.Branches) == 0 || h.r.IntN(8) == 0 {
			what = `switch "nowhere"`
			_, err = session.SwitchTo(&h.m, h.tree, "nowhere")
			naiveErr = fmt.Errorf(`no branch "nowhere"`)
			break
		}
		i := h.r.IntN(len(h.m.Branches))
		b := h.m.Branches[i]
		target := b.Name
		if target == "" {
			target = strconv.FormatUint(b.Seq, 10)
		}
		what = fmt.Sprintf("switch %q", target)
		removed, err = session.SwitchTo(&h.m, h.tree, target)
		nRemv, checkRemoved = h.naive.moveTo(h.naive.branches[i].msgs, true), true

	case op < 12: // switch to any seq, 0 and one past the last included
		seq := h.r.Uint64N(h.m.NextSeq + 1)
		what = fmt.Sprintf("switch %d", seq)
		removed, err = session.SwitchTo(&h.m, h.tree, strconv.FormatUint(seq, 10))
		if seq == 0 {
			nRemv, checkRemoved = h.naive.moveTo(nil, true), true
		} else if path, ok := h.paths[seq]; !ok {
			naiveErr = fmt.Errorf("node %d not found", seq)
		} else {
			if !h.naive.reachable(path) {
				h.fail("node %d (%q) is not reachable on the naive side", seq, path)
			}
			nRemv, checkRemoved = h.naive.moveTo(path, true), true
		}

	case op < 14: // revert by index
		i := h.r.Uint64N(uint64(len(h.naive.msgs)) + 2)
		what = fmt.Sprintf("revert --index %d", i)
		removed, err = session.RevertToIndex(&h.m, h.tree, i)
		checkRemoved = true
		if i < uint64(len(h.naive.msgs)) {
			nRemv = h.naive.moveTo(h.naive.msgs[:i+1], true)
		}

	case op < 15: // revert by seq
		seq := 1 + h.r.Uint64N(h.m.NextSeq)
		what = fmt.Sprintf("revert %d", seq)
		removed, err = session.RevertToSeq(&h.m, h.tree, seq)
		path, ok := h.paths[seq]
		switch {
		case !ok:
			naiveErr = fmt.Errorf("node %d not found", seq)
		case len(path) > len(h.naive.msgs) || !slices.Equal(h.naive.msgs[:len(path)], path):
			naiveErr = fmt.Errorf("node %d is not on the active path", seq)
		default:
			nRemv, checkRemoved = h.naive.moveTo(path, true), true
		}

	case op < 17: // undo
		what = "undo"
		removed, err = session.Undo(&h.m, h.tree)
		checkRemoved = true
		for j := len(h.naive.msgs) - 1; j >= 0; j-- {
			if propIsUserMessage(h.naive.msgs[j]) {
				nRemv = h.naive.moveTo(h.naive.msgs[:j], true)
				break
			}
		}

	case op < 18: // checkpoint
		h.serial++
		goal := "goal " + strconv.Itoa(h.serial)
		what = "checkpoint " + goal
		h.m.MarkCheckpoint(goal, t0)
		keep := uint64(0)
		if len(h.naive.msgs) > 0 {
			keep = uint64(len(h.naive.msgs) - 1)
		}
		h.naive.cp = &propCheckpoint{keepUntil: keep, snapshot: slices.Clone(h.naive.msgs), goal: goal}
		h.naive.lastReport = nil

	case op < 19: // rewind
		h.serial++
		report := strings.Repeat(" ", h.r.IntN(3)) + "report " + strconv.Itoa(h.serial) + strings.Repeat("\n", h.r.IntN(2))
		what = fmt.Sprintf("rewind %q", report)
		var to *session.Node
		var msg session.Message
		to, msg, err = session.Rewind(&h.m, h.tree, report)
		naiveErr = h.naiveRewind(report)
		if err == nil {
			res := session.Append(&h.m, to, []session.Message{msg}, t0, nil, session.AppendOptions{})
			h.wrote(res.Nodes...)
		}

	default: // set-messages, as wc-branch does it
		what = h.setMessages()
	}
	h.trace = append(h.trace, what)

	if (err == nil) != (naiveErr == nil) || (err != nil && err.Error() != naiveErr.Error()) {
		h.fail("%s: err %v, naive %v", what, err, naiveErr)
	}
	if checkRemoved && err == nil && removed != nRemv {
		h.fail("%s: removed %d, naive %d", what, removed, nRemv)
	}
	h.heads[h.m.Head] = true
	h.check()
}

func (h *propHarness) naiveMark(name string) error {
	n := &h.naive
	if len(n.msgs) == 0 {
		return fmt.Errorf("the session has no messages to mark")
	}
	name = strings.TrimSpace(name)
	if name == "" {
		k := 1
		for _, b := range n.branches {
			if b.name != "" {
				k++
			}
		}
		for name = "branch " + strconv.Itoa(k); ; k++ {
			name = "branch " + strconv.Itoa(k)
			if _, taken := n.named(name); !taken {
				break
			}
		}
	}
	if _, err := strconv.ParseUint(name, 10, 64); err == nil {
		return fmt.Errorf("a branch name cannot be a number: %q", name)
	}
	if strings.ContainsFunc(name, unicode.IsControl) {
		return fmt.Errorf("a branch name cannot hold control characters")
	}
	if _, taken := n.named(name); taken {
		return fmt.Errorf("a branch named %q already exists", name)
	}
	n.branches = append(n.branches, propBranch{name: name, msgs: slices.Clone(n.msgs)})
	return nil
}

func (h *propHarness) naiveRewind(report string) error {
	n := &h.naive
	if n.cp == nil {
		if n.lastReport != nil {
			return fmt.Errorf("already rewound: make a new checkpoint before rewinding again")
		}
		return fmt.Errorf("no checkpoint to rewind to")
	}
	cp := n.cp
	// whycodes: revert_to(keep_until) on whatever the messages are now.
	whycodes := n.msgs
	if keep := int(cp.keepUntil) + 1; keep < len(n.msgs) {
		whycodes = n.msgs[:keep]
	}
	// Ours: to the checkpointed node while it is on the path, else by
	// position, as whycodes; only a checkpoint of an empty session differs.
	onPath := len(cp.snapshot) <= len(n.msgs) && slices.Equal(n.msgs[:len(cp.snapshot)], cp.snapshot)
	ours := whycodes
	if onPath {
		ours = cp.snapshot
	}
	if !slices.Equal(ours, whycodes) {
		if len(cp.snapshot) > 0 {
			h.fail("rewind: ours %q, whycodes %q", ours, whycodes)
		}
		h.diverged["checkpoint of an empty session"]++
	}
	n.moveTo(ours, true)
	report = strings.TrimSpace(report)
	n.msgs = append(n.msgs, session.RewindMessage(cp.goal, report))
	n.cp, n.lastReport = nil, &report
	return nil
}

// setMessages makes a new message list from the active path (a cut, an
// append, or one message replaced) and applies it the way wc-branch
// set-messages does: the common prefix is shared, the rest copied, the old
// head kept as branch pre-set-N.
func (h *propHarness) setMessages() string {
	var path []session.Node
	for _, n := range h.tree.Path(h.m.Head) {
		path = append(path, *n)
	}
	k := h.r.IntN(len(path) + 1)
	msgs := make([]session.Message, 0, len(path)+2)
	texts := make([]string, 0, len(path)+2)
	for _, n := range path[:k] {
		msgs = append(msgs, n.Msg)
	}
	texts = append(texts, h.naive.msgs[:k]...)
	mode := h.r.IntN(3)
	switch {
	case mode == 0 || k == len(path): // keep a prefix, add new messages
		for range 1 + h.r.IntN(2) {
			m, s := h.fresh()
			msgs, texts = append(msgs, m), append(texts, s)
		}
	case mode == 1: // cut
	default: // replace message k, keep the rest as copies
		m, s := h.fresh()
		msgs, texts = append(msgs, m), append(texts, s)
		for _, n := range path[k+1:] {
			msgs = append(msgs, n.Msg)
		}
		texts = append(texts, h.naive.msgs[k+1:]...)
	}
	what := fmt.Sprintf("set-messages %q", texts)

	shared := 0
	for shared < len(path) && shared < len(msgs) && string(path[shared].Msg.AppendJSON(nil)) == string(msgs[shared].AppendJSON(nil)) {
		shared++
	}
	if shared == len(path) && shared == len(msgs) {
		if !slices.Equal(texts, h.naive.msgs) {
			h.fail("%s: the same JSON, different texts", what)
		}
		return what + " (the same)"
	}
	var parent *session.Node
	if shared > 0 {
		parent = &path[shared-1]
	}
	if h.m.Head != 0 {
		name := session.NextBranchName(&h.m, "pre-set-")
		h.m.Branches = append(h.m.Branches, session.NamedBranch{Name: name, Seq: h.m.Head})
	}
	var nodes []session.Node
	for _, msg := range msgs[shared:] {
		n := session.Child(parent, h.m.NextSeq, msg)
		h.m.NextSeq++
		nodes = append(nodes, n)
		parent = &nodes[len(nodes)-1]
	}
	h.m.MoveHead(parent, false)

	n := &h.naive
	if len(n.msgs) > 0 {
		name := ""
		for i := 1; ; i++ {
			name = "pre-set-" + strconv.Itoa(i)
			if _, taken := n.named(name); !taken {
				break
			}
		}
		n.branches = append(n.branches, propBranch{name: name, msgs: slices.Clone(n.msgs)})
	}
	n.moveTo(texts, false)
	h.wrote(nodes...)
	return what
}

func (h *propHarness) pathTexts(seq uint64) []string {
	p := h.tree.Path(seq)
	if seq != 0 && p == nil {
		h.fail("no path to %d", seq)
	}
	return brTexts(p)
}

func (h *propHarness) check() {
	h.t.Helper()
	m, tree := &h.m, h.tree
	// What faces outward, every fourth step: the share, the request bodies.
	if len(h.trace)%4 == 0 {
		if err := sessioncheck.Check(m, tree); err != nil {
			h.fail("%v", err)
		}
	}

	// The tree is valid and every node's running totals are right.
	for _, n := range tree.Nodes() {
		if n.Seq == 0 || n.Seq >= m.NextSeq {
			h.fail("node %d outside 1..%d", n.Seq, m.NextSeq-1)
		}
		want := session.Child(nil, n.Seq, n.Msg)
		if n.Parent != 0 {
			p := tree.Node(n.Parent)
			if p == nil || p.Seq >= n.Seq {
				h.fail("node %d has parent %d", n.Seq, n.Parent)
			}
			want = session.Child(p, n.Seq, n.Msg)
		}
		if n.Header() != want.Header() {
			h.fail("node %d totals %+v, want %+v", n.Seq, n.Header(), want.Header())
		}
	}
	if m.Head != 0 && tree.Node(m.Head) == nil {
		h.fail("head %d does not exist", m.Head)
	}
	names := map[string]bool{}
	unnamed := map[uint64]bool{}
	for _, b := range m.Branches {
		if b.Seq != 0 && tree.Node(b.Seq) == nil {
			h.fail("branch %v points nowhere", b)
		}
		switch {
		case b.Name == "" && (unnamed[b.Seq] || b.Seq == m.Head):
			h.fail("redundant unnamed branch at %d (head %d): %v", b.Seq, m.Head, m.Branches)
		case b.Name == "":
			unnamed[b.Seq] = true
		case names[b.Name]:
			h.fail("branch name %q twice", b.Name)
		default:
			names[b.Name] = true
		}
	}
	brCheckCounts(h.t, m, tree)
	if h.t.Failed() {
		h.fail("counts")
	}

	// The active path and the branches are the naive model's.
	if got := h.pathTexts(m.Head); !slices.Equal(got, h.naive.msgs) {
		h.fail("active path %q, naive %q", got, h.naive.msgs)
	}
	shared := session.Branches(m, tree)
	if len(shared) != len(h.naive.branches) {
		h.fail("%d branches %v, naive %d", len(shared), m.Branches, len(h.naive.branches))
	}
	for i, b := range shared {
		nb := h.naive.branches[i]
		var texts []string
		for _, msg := range b.Messages {
			s, _ := msg.AsText()
			texts = append(texts, s)
		}
		if b.Name != nb.name || b.HasName != (nb.name != "") || !slices.Equal(texts, nb.msgs) {
			h.fail("branch %d = %q %q, naive %q %q", i, b.Name, texts, nb.name, nb.msgs)
		}
	}

	// The checkpoint.
	cp, ncp := m.Checkpoint, h.naive.cp
	if (cp == nil) != (ncp == nil) {
		h.fail("checkpoint %v, naive %v", cp, ncp)
	}
	if cp != nil && (cp.KeepUntil != ncp.keepUntil || cp.Goal != ncp.goal || !slices.Equal(h.pathTexts(cp.Seq), ncp.snapshot)) {
		h.fail("checkpoint %+v, naive %+v", cp, ncp)
	}
	lr, nlr := m.LastRewindReport, h.naive.lastReport
	if (lr == nil) != (nlr == nil) || (lr != nil && *lr != *nlr) {
		h.fail("last rewind report %v, naive %v", lr, nlr)
	}

	// Nothing is lost: every head ever held is on the path to the head or
	// to a branch, and with no delete every node is still kept.
	reach := map[uint64]bool{0: true}
	for _, seq := range append([]uint64{m.Head}, seqsOf(m.Branches)...) {
		for ; seq != 0 && !reach[seq]; seq = tree.Node(seq).Parent {
			reach[seq] = true
		}
	}
	for seq := range h.heads {
		if !reach[seq] {
			h.fail("the path to %d, once active, is lost", seq)
		}
	}
	if kept := session.KeptNodes(m, tree); len(kept) != tree.Len() {
		h.fail("KeptNodes has %d of %d nodes", len(kept), tree.Len())
	}

	h.checkRows()
}

func seqsOf(bs []session.NamedBranch) []uint64 {
	out := make([]uint64, len(bs))
	for i, b := range bs {
		out[i] = b.Seq
	}
	return out
}

// checkRows checks the tree view against the tree: a row per user turn, the
// active ones in path order, targets inside their turn and, on the active
// path, on it.
func (h *propHarness) checkRows() {
	m, tree := &h.m, h.tree
	rows := session.TreeRows(m, tree)
	turnOf := func(seq uint64) uint64 {
		for ; seq != 0; seq = tree.Node(seq).Parent {
			if n := tree.Node(seq); n.Msg.IsUserTurn() {
				return seq
			}
		}
		return 0
	}
	onPath := map[uint64]bool{}
	var pathTurns []uint64
	for _, n := range tree.Path(m.Head) {
		onPath[n.Seq] = true
		if n.Msg.IsUserTurn() {
			pathTurns = append(pathTurns, n.Seq)
		}
	}
	turns := 0
	next := map[uint64]int{} // turn -> how many turns follow it
	for _, n := range tree.Nodes() {
		if n.Msg.IsUserTurn() {
			turns++
			next[turnOf(n.Parent)]++
		}
	}
	if len(rows) != turns {
		h.fail("%d rows for %d turns", len(rows), turns)
	}
	wantNames := map[uint64][]string{}
	for _, b := range m.Branches {
		if b.Name != "" {
			wantNames[turnOf(b.Seq)] = append(wantNames[turnOf(b.Seq)], b.Name)
		}
	}
	var activeRows []uint64
	seen := map[uint64]bool{}
	for _, r := range rows {
		if seen[r.Seq] || !tree.Node(r.Seq).Msg.IsUserTurn() {
			h.fail("row %+v twice or not a turn", r)
		}
		seen[r.Seq] = true
		if r.OnActivePath != onPath[r.Seq] {
			h.fail("row %+v: on the active path is %v", r, onPath[r.Seq])
		}
		if r.OnActivePath {
			activeRows = append(activeRows, r.Seq)
		}
		wantLeaf := len(pathTurns) > 0 && r.Seq == pathTurns[len(pathTurns)-1]
		if r.ActiveLeaf != wantLeaf {
			h.fail("row %+v: active leaf should be %v", r, wantLeaf)
		}
		if turnOf(r.Target) != r.Seq {
			h.fail("row %+v: target %d is in turn %d", r, r.Target, turnOf(r.Target))
		}
		if r.OnActivePath && !onPath[r.Target] {
			h.fail("row %+v: on the active path, its target is not", r)
		}
		if r.ActiveLeaf && r.Target != m.Head {
			h.fail("row %+v: the leaf row should target the head %d", r, m.Head)
		}
		if !slices.Equal(r.Names, wantNames[r.Seq]) {
			h.fail("row %+v: names should be %q", r, wantNames[r.Seq])
		}
		if strings.Contains(r.Line(), "\n") || len([]rune(r.Label)) > session.LabelMaxChars {
			h.fail("row %+v: bad line %q", r, r.Line())
		}
		// The indent grows by one at every fork above the turn but the
		// root's; a fork's alternatives are marked.
		parentTurn := turnOf(tree.Node(r.Seq).Parent)
		depth := 0
		for a := parentTurn; a != 0; a = turnOf(tree.Node(a).Parent) {
			if next[a] > 1 {
				depth++
			}
		}
		if r.Depth != depth || r.ForkStart != (next[parentTurn] > 1) {
			h.fail("row %+v: depth should be %d, fork start %v", r, depth, next[parentTurn] > 1)
		}
	}
	if !slices.Equal(activeRows, pathTurns) {
		h.fail("active rows %v, path turns %v", activeRows, pathTurns)
	}
}

func TestBranchOperationsProperty(t *testing.T) {
	diverged := map[string]int{}
	ops := 0
	for seed := range uint64(propSequences) {
		h := &propHarness{
			t:        t,
			r:        rand.New(rand.NewPCG(seed, 0xb4a9c4)),
			m:        session.New(testID, "/src/app", "be brief", t0),
			paths:    map[uint64][]string{},
			heads:    map[uint64]bool{0: true},
			diverged: diverged,
		}
		h.tree = session.NewTree(nil)
		h.trace = []string{fmt.Sprintf("seed %d", seed)}
		for range propSteps {
			h.step()
			ops++
		}
	}
	t.Logf("%d operations; rewinds where whycodes' keep_until lands elsewhere: %v", ops, diverged)
}
