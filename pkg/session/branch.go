package session

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// LabelMaxChars caps a tree row's label.
const LabelMaxChars = 72

// BranchError says why a branch operation cannot run. Commands map it to
// exit status 1 (or 3 for NotFound).
type BranchError struct {
	Msg      string
	NotFound bool
	BadName  bool // a name wc-branch could not give
}

func (e *BranchError) Error() string { return e.Msg }

func branchErrorf(format string, args ...any) error {
	return &BranchError{Msg: fmt.Sprintf(format, args...)}
}

func branchNotFoundf(format string, args ...any) error {
	return &BranchError{Msg: fmt.Sprintf(format, args...), NotFound: true}
}

// MoveHead makes to the active leaf (nil: the empty path). With keepOld the
// path being left is kept as an unnamed branch, as whycodes saves the old
// path on a switch, unless a branch already points at it. A branch entry
// that the new head now covers exactly is dropped: it is the active path.
func (m *Meta) MoveHead(to *Node, keepOld bool) {
	old := m.Head
	var newSeq uint64
	if to != nil {
		newSeq = to.Seq
	}
	if keepOld && old != 0 && old != newSeq && !m.hasBranchAt(old) {
		m.Branches = append(m.Branches, NamedBranch{Seq: old})
	}
	m.Branches = slices.DeleteFunc(m.Branches, func(b NamedBranch) bool { return b.Name == "" && b.Seq == newSeq })
	m.SetHead(to)
}

func (m *Meta) hasBranchAt(seq uint64) bool {
	for _, b := range m.Branches {
		if b.Seq == seq {
			return true
		}
	}
	return false
}

// Mark names the head. An empty name becomes "branch N", N one more than
// the named branches so far.
func (m *Meta) Mark(name string) (string, error) {
	name = strings.TrimSpace(name)
	if m.Head == 0 {
		return "", branchErrorf("the session has no messages to mark")
	}
	if name == "" {
		n := 1
		for _, b := range m.Branches {
			if b.Name != "" {
				n++
			}
		}
		for name = "branch " + strconv.Itoa(n); m.nameTaken(name); n++ {
			name = "branch " + strconv.Itoa(n+1)
		}
	}
	if err := validBranchName(name); err != nil {
		return "", err
	}
	if m.nameTaken(name) {
		return "", branchErrorf("a branch named %q already exists", name)
	}
	m.Branches = append(m.Branches, NamedBranch{Name: name, Seq: m.Head})
	return name, nil
}

// validBranchName keeps names usable as switch targets: a name that reads
// as a number would be taken for a seq.
func validBranchName(name string) error {
	if _, err := strconv.ParseUint(name, 10, 64); err == nil {
		return badNamef("a branch name cannot be a number: %q", name)
	}
	if strings.ContainsFunc(name, unicode.IsControl) {
		return badNamef("a branch name cannot hold control characters")
	}
	return nil
}

func badNamef(format string, args ...any) error {
	return &BranchError{Msg: fmt.Sprintf(format, args...), BadName: true}
}

// CheckBranchName refuses a name wc-branch could not have given: one that
// reads as a number, holds control characters, or starts or ends with
// space.
func CheckBranchName(name string) error {
	if strings.TrimSpace(name) != name {
		return badNamef("a branch name cannot start or end with space: %q", name)
	}
	return validBranchName(name)
}

func (m *Meta) nameTaken(name string) bool {
	_, ok := m.BranchSeq(name)
	return ok && name != ""
}

// DeleteBranch drops a branch name, or the unnamed branch at a seq. The
// nodes stay until gc.
func (m *Meta) DeleteBranch(target string) (NamedBranch, error) {
	seq, isSeq := parseSeq(target)
	for i, b := range m.Branches {
		if (b.Name != "" && b.Name == target) || (isSeq && b.Name == "" && b.Seq == seq) {
			m.Branches = slices.Delete(m.Branches, i, i+1)
			return b, nil
		}
	}
	return NamedBranch{}, branchNotFoundf("no branch %q", target)
}

// BranchTarget resolves a switch target: a branch name, or a node seq.
func (m *Meta) BranchTarget(target string) (uint64, error) {
	if seq, ok := m.BranchSeq(target); ok && target != "" {
		return seq, nil
	}
	if seq, ok := parseSeq(target); ok {
		return seq, nil
	}
	return 0, branchNotFoundf("no branch %q", target)
}

func parseSeq(s string) (uint64, bool) {
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// Checkpoint marks the head as the point a rewind returns to. Unlike
// whycodes, a checkpoint of an empty session rewinds to the empty path
// (whycodes' keep_until is 0 there, keeping the first later message).
func (m *Meta) MarkCheckpoint(goal string, now time.Time) {
	keep := uint64(0)
	if m.MessageCount > 0 {
		keep = m.MessageCount - 1
	}
	m.Checkpoint = &Checkpoint{KeepUntil: keep, Seq: m.Head, Goal: goal, StartedAt: FormatTime(now)}
	m.LastRewindReport = nil
}

// RewindMessage is the user message a rewind leaves in place of the
// exploration.
func RewindMessage(goal, report string) string {
	return "Checkpoint completed. Exploratory context was collapsed.\nGoal: " + goal +
		"\n\nReport:\n" + strings.TrimSpace(report) +
		"\n\nContinue from this report. Do not call rewind again until you create a new checkpoint."
}

// TreeRow is one user turn of the tree view, in display order.
type TreeRow struct {
	Depth        int      `json:"depth"`
	ForkStart    bool     `json:"fork_start"`
	Label        string   `json:"label"`
	Names        []string `json:"names"`
	OnActivePath bool     `json:"on_active_path"`
	ActiveLeaf   bool     `json:"active_leaf"`
	Seq          uint64   `json:"seq"`    // the turn's user message
	Target       uint64   `json:"target"` // the node a switch to this turn moves the head to
}

// Line renders a row: "• label" on the active path, "● label" at its leaf,
// "○ label" off it, indented by depth, forks marked "├", names in brackets.
func (r TreeRow) Line() string { return r.line(false) }

// TreeLines renders rows as Line does, but for the last of the turns a
// fork parts into, which is marked "└".
func TreeLines(rows []TreeRow) []string {
	lines := make([]string, len(rows))
	for i, r := range rows {
		last := r.ForkStart
		for _, later := range rows[i+1:] {
			if later.Depth < r.Depth {
				break
			}
			if later.Depth == r.Depth && later.ForkStart {
				last = false
				break
			}
		}
		lines[i] = r.line(last)
	}
	return lines
}

func (r TreeRow) line(lastFork bool) string {
	var b strings.Builder
	b.WriteString(strings.Repeat("  ", r.Depth))
	switch {
	case lastFork:
		b.WriteString("└ ")
	case r.ForkStart:
		b.WriteString("├ ")
	}
	switch {
	case r.ActiveLeaf:
		b.WriteString("● ")
	case r.OnActivePath:
		b.WriteString("• ")
	default:
		b.WriteString("○ ")
	}
	b.WriteString(r.Label)
	if len(r.Names) > 0 {
		b.WriteString(" [" + strings.Join(r.Names, ", ") + "]")
	}
	return b.String()
}

// TreeRows lays out the user turns of every kept path: the active path and
// each branch. A turn runs from a user turn to the next; the indent grows
// only where a turn has several next turns.
func TreeRows(m *Meta, t *Tree) []TreeRow {
	kept := KeptNodes(m, t)
	onPath := map[uint64]bool{}
	for _, n := range t.Path(m.Head) {
		onPath[n.Seq] = true
	}
	// turnOf maps every kept node to the user turn it belongs to (0: before the first turn).
	turnOf := map[uint64]uint64{}
	next := map[uint64][]uint64{} // turn -> following turns, in seq order
	for i := range t.Nodes() {
		n := &t.Nodes()[i]
		if !kept[n.Seq] {
			continue
		}
		parentTurn := turnOf[n.Parent]
		if n.Msg.IsUserTurn() {
			turnOf[n.Seq] = n.Seq
			next[parentTurn] = append(next[parentTurn], n.Seq)
		} else {
			turnOf[n.Seq] = parentTurn
		}
	}
	names := map[uint64][]string{}
	for _, b := range m.Branches {
		if b.Name != "" {
			turn := turnOf[b.Seq]
			names[turn] = append(names[turn], b.Name)
		}
	}
	leafTurn := turnOf[m.Head]
	var rows []TreeRow
	var walk func(turn uint64, depth int, forkStart bool)
	walk = func(turn uint64, depth int, forkStart bool) {
		if turn != 0 {
			rows = append(rows, TreeRow{
				Depth: depth, ForkStart: forkStart, Label: turnLabel(&t.Node(turn).Msg),
				Names: names[turn], OnActivePath: onPath[turn], ActiveLeaf: m.Head != 0 && turn == leafTurn,
				Seq: turn, Target: turnEnd(t, turn, onPath, kept),
			})
			if rows[len(rows)-1].Names == nil {
				rows[len(rows)-1].Names = []string{}
			}
		}
		kids := next[turn]
		if len(kids) == 1 {
			walk(kids[0], depth, false)
			return
		}
		// Alternatives: each indented one step, except at the root, where
		// separate first turns (say, a compacted copy) start at the left.
		childDepth := depth + 1
		if turn == 0 {
			childDepth = depth
		}
		for _, k := range kids {
			walk(k, childDepth, true)
		}
	}
	walk(0, 0, false)
	return rows
}

// turnEnd is the last node of a turn: down from its user message through
// replies, preferring the active path, then the newest kept child. On the
// active path it stays there: the end is where the path leaves the turn.
func turnEnd(t *Tree, turn uint64, onPath, kept map[uint64]bool) uint64 {
	end := turn
	for {
		var pick uint64
		for _, c := range t.Children(end) {
			n := t.Node(c)
			if !kept[c] || n.Msg.IsUserTurn() || (onPath[end] && !onPath[c]) {
				continue
			}
			if onPath[c] || pick == 0 || (!onPath[pick] && c > pick) {
				pick = c
			}
		}
		if pick == 0 {
			return end
		}
		end = pick
	}
}

func turnLabel(m *Message) string {
	text, _ := m.AsText()
	line := ""
	for l := range strings.Lines(text) {
		if l = strings.TrimSpace(l); l != "" {
			line = l
			break
		}
	}
	if line == "" {
		line = "[no text]"
	}
	if r := []rune(line); len(r) > LabelMaxChars {
		line = string(r[:LabelMaxChars-1]) + "…"
	}
	return line
}

// KeptNodes is every node on a path to the head or to a branch; the rest is
// garbage.
func KeptNodes(m *Meta, t *Tree) map[uint64]bool {
	kept := map[uint64]bool{}
	mark := func(seq uint64) {
		for seq != 0 && !kept[seq] {
			n := t.Node(seq)
			if n == nil {
				return
			}
			kept[seq] = true
			seq = n.Parent
		}
	}
	for _, seq := range m.Roots() {
		mark(seq)
	}
	return kept
}

// Roots are the nodes whose paths a session keeps: the head, every branch,
// and the checkpoint a rewind returns to.
func (m *Meta) Roots() []uint64 {
	roots := []uint64{m.Head}
	for _, b := range m.Branches {
		roots = append(roots, b.Seq)
	}
	if m.Checkpoint != nil {
		roots = append(roots, m.Checkpoint.Seq)
	}
	return roots
}

// NextBranchName is prefix followed by the first number no branch uses:
// pre-compact-1, pre-compact-2, …
func NextBranchName(m *Meta, prefix string) string {
	for n := 1; ; n++ {
		name := prefix + strconv.Itoa(n)
		if !m.nameTaken(name) {
			return name
		}
	}
}

// NodeReader reads one session's nodes: the store does it on disk, a Tree
// in memory. Branch operations walk at most the part of the path they cut.
type NodeReader interface {
	ReadNode(seq uint64) (Node, error)
}

// ReadNode implements NodeReader.
func (t *Tree) ReadNode(seq uint64) (Node, error) {
	if n := t.Node(seq); n != nil {
		return *n, nil
	}
	return Node{}, branchNotFoundf("node %d not found", seq)
}

// readHead reads seq as a head: nil for the empty path.
func readHead(r NodeReader, seq uint64) (*Node, error) {
	if seq == 0 {
		return nil, nil
	}
	n, err := r.ReadNode(seq)
	return &n, err
}

// SwitchTo moves the head to a branch name or a node seq, keeping the path
// left as a branch. It returns how much shorter the active path got (0 when
// it grew); an exact count of the messages that left it would need a walk
// to where the two paths meet.
func SwitchTo(m *Meta, r NodeReader, target string) (uint64, error) {
	seq, err := m.BranchTarget(target)
	if err != nil {
		return 0, err
	}
	return moveHeadTo(m, r, seq)
}

func moveHeadTo(m *Meta, r NodeReader, seq uint64) (uint64, error) {
	to, err := readHead(r, seq)
	if err != nil {
		return 0, err
	}
	held, err := pathHeld(m, r, seq)
	if err != nil {
		return 0, err
	}
	before := m.MessageCount
	m.MoveHead(to, !held)
	return before - min(before, m.MessageCount), nil
}

// pathHeld reports whether another kept path holds all of the active one,
// which a move of the head to seq then need not keep as a branch: a branch
// or the new head whose path runs through the head. Only a node written
// after the head can descend from it, so only the part of those paths
// below the head's depth is read.
func pathHeld(m *Meta, r NodeReader, seq uint64) (bool, error) {
	old, depth := m.Head, m.MessageCount
	if old == 0 {
		return true, nil // the empty path is part of every path
	}
	roots := []uint64{seq}
	for _, b := range m.Branches {
		roots = append(roots, b.Seq)
	}
	for _, at := range roots {
		for at > old {
			n, err := r.ReadNode(at)
			if err != nil {
				return false, err
			}
			if n.Depth <= depth {
				break
			}
			at = n.Parent
		}
		if at == old {
			return true, nil
		}
	}
	return false, nil
}

// ancestorAt walks up from the head to the node at depth (1 = the root);
// ok is false when the path is shorter.
func ancestorAt(m *Meta, r NodeReader, depth uint64) (uint64, bool, error) {
	if depth == 0 {
		return 0, true, nil
	}
	if depth > m.MessageCount {
		return 0, false, nil
	}
	seq := m.Head
	for seq != 0 {
		n, err := r.ReadNode(seq)
		if err != nil {
			return 0, false, err
		}
		if n.Depth == depth {
			return n.Seq, true, nil
		}
		seq = n.Parent
	}
	return 0, false, nil
}

// RevertToIndex keeps the active path up to position i (from 0), as
// whycodes' revert_to; i past the end changes nothing. The rest stays a
// branch. It returns how many messages left the active path.
func RevertToIndex(m *Meta, r NodeReader, i uint64) (uint64, error) {
	if i >= m.MessageCount {
		return 0, nil
	}
	seq, _, err := ancestorAt(m, r, i+1)
	if err != nil {
		return 0, err
	}
	return moveHeadTo(m, r, seq)
}

// RevertToSeq keeps the active path up to node seq, which must be on it.
func RevertToSeq(m *Meta, r NodeReader, seq uint64) (uint64, error) {
	n, err := r.ReadNode(seq)
	if err != nil {
		return 0, err
	}
	at, ok, err := ancestorAt(m, r, n.Depth)
	if err != nil {
		return 0, err
	}
	if !ok || at != seq {
		return 0, branchNotFoundf("node %d is not on the active path", seq)
	}
	return moveHeadTo(m, r, seq)
}

// Undo is whycodes' undo_last_turn: it cuts the last user message and
// everything after it, whatever the message is (a note, a summary, a rewind
// report): undoing a rewind takes its report away, undoing after a note
// the note. Unlike whycodes it never cuts at a user message that carries
// tool results, which would leave the calls before it unanswered. Without
// a user message nothing changes.
func Undo(m *Meta, r NodeReader) (uint64, error) {
	for seq := m.Head; seq != 0; {
		n, err := r.ReadNode(seq)
		if err != nil {
			return 0, err
		}
		if n.Msg.Role == RoleUser && !slices.ContainsFunc(n.Msg.Content.Blocks, func(b Block) bool { return b.Type == BlockToolResult }) {
			return moveHeadTo(m, r, n.Parent)
		}
		seq = n.Parent
	}
	return 0, nil
}

// rewindTarget is the node a rewind keeps the path up to: the checkpoint,
// while it is on the active path. Once a compaction (or a switch) has left
// it on another path, the checkpoint's position counts, as whycodes'
// keep_until does on its rewritten messages: the first keep_until+1
// messages of the active path stay, all of them when it is shorter.
func rewindTarget(m *Meta, r NodeReader, cp *Checkpoint) (uint64, error) {
	if cp.Seq == 0 {
		return 0, nil
	}
	n, err := r.ReadNode(cp.Seq)
	if err != nil {
		return 0, err
	}
	if at, ok, err := ancestorAt(m, r, n.Depth); err != nil || ok && at == cp.Seq {
		return cp.Seq, err
	}
	if cp.KeepUntil+1 >= m.MessageCount {
		return m.Head, nil
	}
	at, _, err := ancestorAt(m, r, cp.KeepUntil+1)
	return at, err
}

// ErrNoCheckpoint and ErrRewound refuse a rewind.
var (
	ErrNoCheckpoint = &BranchError{Msg: "no checkpoint to rewind to"}
	ErrRewound      = &BranchError{Msg: "already rewound: make a new checkpoint before rewinding again"}
)

// Rewind returns to the checkpoint, keeping the exploration as a branch,
// and returns the report message to append there.
func Rewind(m *Meta, r NodeReader, report string) (*Node, Message, error) {
	cp := m.Checkpoint
	if cp == nil {
		if m.LastRewindReport != nil {
			return nil, Message{}, ErrRewound
		}
		return nil, Message{}, ErrNoCheckpoint
	}
	seq, err := rewindTarget(m, r, cp)
	if err != nil {
		return nil, Message{}, err
	}
	to, err := readHead(r, seq)
	if err != nil {
		return nil, Message{}, err
	}
	held, err := pathHeld(m, r, seq)
	if err != nil {
		return nil, Message{}, err
	}
	m.MoveHead(to, !held)
	report = strings.TrimSpace(report)
	m.Checkpoint, m.LastRewindReport = nil, &report
	return to, Message{Role: RoleUser, Kind: KindRewind, Content: TextContent(RewindMessage(cp.Goal, report))}, nil
}

// forkSuffix marks a fork's title (a fork of a fork gets it again).
const forkSuffix = " (fork)"

// ForkTitle is the title of a fork of a session titled title: the same
// with " (fork)", the title cut so that the suffix fits in a title's 64
// chars.
func ForkTitle(title string) string {
	max := titleMaxChars - utf8.RuneCountInString(forkSuffix)
	if r := []rune(title); len(r) > max {
		title = string(r[:max-1]) + "…"
	}
	return title + forkSuffix
}
