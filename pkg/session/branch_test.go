package session_test

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wctoolkit/wc/pkg/session"
)

// brSession is a session held in memory the way the store holds it: the
// metadata and every node ever written, in seq order.
type brSession struct {
	t     testing.TB
	m     session.Meta
	nodes []session.Node
}

func newBrSession(t testing.TB, msgs ...session.Message) *brSession {
	t.Helper()
	s := &brSession{t: t, m: session.New(testID, "/src/app", "", t0)}
	s.add(msgs...)
	return s
}

// tree is the NodeReader the operations read through, built anew after
// every write.
func (s *brSession) tree() *session.Tree { return session.NewTree(slices.Clone(s.nodes)) }

func (s *brSession) node(seq uint64) *session.Node {
	s.t.Helper()
	if seq == 0 {
		return nil
	}
	n := s.tree().Node(seq)
	if n == nil {
		s.t.Fatalf("node %d is not in the tree", seq)
	}
	return n
}

// add appends msgs at the head, as wc-append does, and returns the new head.
func (s *brSession) add(msgs ...session.Message) uint64 {
	s.t.Helper()
	res := session.Append(&s.m, s.node(s.m.Head), msgs, t0, nil, session.AppendOptions{})
	s.nodes = append(s.nodes, res.Nodes...)
	return s.m.Head
}

// rewind does what wc-branch rewind does: Rewind, then Append the report.
func (s *brSession) rewind(report string) error {
	s.t.Helper()
	to, msg, err := session.Rewind(&s.m, s.tree(), report)
	if err != nil {
		return err
	}
	res := session.Append(&s.m, to, []session.Message{msg}, t0, nil, session.AppendOptions{})
	s.nodes = append(s.nodes, res.Nodes...)
	return nil
}

// clone is an independent copy for a subtest.
func (s *brSession) clone(t testing.TB) *brSession {
	c := *s
	c.t = t
	c.nodes = slices.Clone(s.nodes)
	c.m.Branches = slices.Clone(s.m.Branches)
	return &c
}

func (s *brSession) texts() []string { return brTexts(s.tree().Path(s.m.Head)) }

func (s *brSession) rows() []session.TreeRow { return session.TreeRows(&s.m, s.tree()) }

func (s *brSession) lines() []string { return session.TreeLines(s.rows()) }

func brTexts(path []*session.Node) []string {
	out := []string{}
	for _, n := range path {
		txt, _ := n.Msg.AsText()
		out = append(out, txt)
	}
	return out
}

func brUser(s string) session.Message { return text(session.RoleUser, s) }
func brAsst(s string) session.Message { return text(session.RoleAssistant, s) }

func brKind(k session.Kind, s string) session.Message {
	m := text(session.RoleUser, s)
	m.Kind = k
	return m
}

func brBranches(bs ...any) []session.NamedBranch {
	var out []session.NamedBranch
	for i := 0; i < len(bs); i += 2 {
		out = append(out, session.NamedBranch{Name: bs[i].(string), Seq: uint64(bs[i+1].(int))})
	}
	return out
}

// brErr checks that err is a *BranchError with exactly msg and notFound.
func brErr(t testing.TB, err error, msg string, notFound bool) {
	t.Helper()
	var be *session.BranchError
	if !errors.As(err, &be) {
		t.Fatalf("err = %v (%T), want BranchError %q", err, err, msg)
	}
	if be.Error() != msg || be.NotFound != notFound {
		t.Errorf("err = %q (NotFound %v), want %q (NotFound %v)", be.Error(), be.NotFound, msg, notFound)
	}
}

// brCheckCounts asserts that the cached counts match a recount of the path.
func brCheckCounts(t testing.TB, m *session.Meta, tree *session.Tree) {
	t.Helper()
	path := tree.Path(m.Head)
	if m.Head != 0 && path == nil {
		t.Fatalf("head %d has no path", m.Head)
	}
	var users, tokens uint64
	for _, n := range path {
		if n.Msg.Role == session.RoleUser {
			users++
		}
		tokens += session.MessageTokens(&n.Msg)
	}
	if m.MessageCount != uint64(len(path)) || m.UserMessageCount != users || m.Tokens != m.SystemTokens+tokens {
		t.Errorf("counts = %d/%d/%d, recount %d/%d/%d", m.MessageCount, m.UserMessageCount, m.Tokens,
			len(path), users, m.SystemTokens+tokens)
	}
}

func TestMoveHead(t *testing.T) {
	// 1 ─ 2 ─ 3
	//      └─ 4
	n1 := session.Child(nil, 1, brUser("u1"))
	n2 := session.Child(&n1, 2, brAsst("a2"))
	n3 := session.Child(&n2, 3, brUser("u3"))
	n4 := session.Child(&n2, 4, brUser("u4 is longer"))
	nodes := map[uint64]*session.Node{0: nil, 1: &n1, 2: &n2, 3: &n3, 4: &n4}
	cases := []struct {
		name     string
		head     uint64
		branches []session.NamedBranch
		to       uint64
		keepOld  bool
		want     []session.NamedBranch
	}{
		{"keeps the old head unnamed", 3, nil, 4, true, brBranches("", 3)},
		{"appends after the others", 3, brBranches("x", 4), 2, true, brBranches("x", 4, "", 3)},
		{"not without keepOld", 3, nil, 4, false, nil},
		{"not from the empty path", 0, nil, 4, true, nil},
		{"not to the same head", 3, nil, 3, true, nil},
		{"not when a name points at it", 3, brBranches("x", 3), 4, true, brBranches("x", 3)},
		{"not when an unnamed entry points at it", 3, brBranches("", 3), 4, true, brBranches("", 3)},
		{"drops the unnamed entry at the new head", 3, brBranches("", 4, "", 1), 4, true, brBranches("", 1, "", 3)},
		{"drops it without keepOld too", 3, brBranches("", 4), 4, false, nil},
		{"keeps a name at the new head", 3, brBranches("x", 4), 4, true, brBranches("x", 4, "", 3)},
		{"an ancestor of the new head is kept too", 2, nil, 3, true, brBranches("", 2)},
		{"to the empty path", 3, nil, 0, true, brBranches("", 3)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := session.New(testID, "/p", "system prompt", t0)
			m.SetHead(nodes[tc.head])
			m.Branches = slices.Clone(tc.branches)
			m.MoveHead(nodes[tc.to], tc.keepOld)
			if !slices.Equal(m.Branches, tc.want) {
				t.Errorf("Branches = %v, want %v", m.Branches, tc.want)
			}
			if m.Head != tc.to {
				t.Errorf("Head = %d, want %d", m.Head, tc.to)
			}
			var want session.NodeHeader
			if n := nodes[tc.to]; n != nil {
				want = n.Header()
			}
			if m.MessageCount != want.Depth || m.UserMessageCount != want.Users || m.Tokens != m.SystemTokens+want.Tokens {
				t.Errorf("counts = %d/%d/%d, want %d/%d/%d", m.MessageCount, m.UserMessageCount, m.Tokens,
					want.Depth, want.Users, m.SystemTokens+want.Tokens)
			}
		})
	}
}

func TestMark(t *testing.T) {
	cases := []struct {
		name     string
		branches []session.NamedBranch
		arg      string
		want     string
		err      string
	}{
		{"named", nil, "with-mutex", "with-mutex", ""},
		{"trimmed", nil, "  spaced out \n", "spaced out", ""},
		{"default is branch 1", nil, "", "branch 1", ""},
		{"blank is a default", nil, " \t", "branch 1", ""},
		{"default counts named branches only", brBranches("a", 1, "", 2, "b", 2), "", "branch 3", ""},
		{"default skips a taken number", brBranches("branch 2", 1), "", "branch 3", ""},
		{"default skips every taken number", brBranches("branch 2", 1, "branch 3", 1), "", "branch 4", ""},
		{"a name can repeat a head", brBranches("a", 3), "b", "b", ""},
		{"duplicate", brBranches("x", 1), "x", "", `a branch named "x" already exists`},
		{"duplicate after trimming", brBranches("x", 1), " x ", "", `a branch named "x" already exists`},
		{"number", nil, "42", "", `a branch name cannot be a number: "42"`},
		{"zero", nil, "0", "", `a branch name cannot be a number: "0"`},
		{"trimmed number", nil, " 7 ", "", `a branch name cannot be a number: "7"`},
		{"tab", nil, "a\tb", "", "a branch name cannot hold control characters"},
		{"newline", nil, "a\nb", "", "a branch name cannot hold control characters"},
		{"escape", nil, "a\x1b[31mb", "", "a branch name cannot hold control characters"},
		{"nul", nil, "a\x00b", "", "a branch name cannot hold control characters"},
		{"signed is not a seq", nil, "+5", "+5", ""},
		{"negative is not a seq", nil, "-1", "-1", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newBrSession(t, brUser("u1"), brAsst("a2"), brUser("u3"))
			s.m.Branches = slices.Clone(tc.branches)
			got, err := s.m.Mark(tc.arg)
			if tc.err != "" {
				brErr(t, err, tc.err, false)
				if !slices.Equal(s.m.Branches, tc.branches) {
					t.Errorf("a failed mark changed the branches: %v", s.m.Branches)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Mark(%q) = %q, %v; want %q", tc.arg, got, err, tc.want)
			}
			want := append(slices.Clone(tc.branches), session.NamedBranch{Name: tc.want, Seq: 3})
			if !slices.Equal(s.m.Branches, want) {
				t.Errorf("Branches = %v, want %v", s.m.Branches, want)
			}
			if seq, err := s.m.BranchTarget(tc.want); err != nil || seq != 3 {
				t.Errorf("BranchTarget(%q) = %d, %v", tc.want, seq, err)
			}
		})
	}
	t.Run("empty session", func(t *testing.T) {
		s := newBrSession(t)
		_, err := s.m.Mark("x")
		brErr(t, err, "the session has no messages to mark", false)
		if s.m.Branches != nil {
			t.Error("branches changed")
		}
	})
	t.Run("defaults in a row", func(t *testing.T) {
		s := newBrSession(t, brUser("u1"))
		var got []string
		for range 3 {
			name, err := s.m.Mark("")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, name)
		}
		if want := []string{"branch 1", "branch 2", "branch 3"}; !reflect.DeepEqual(got, want) {
			t.Errorf("names = %v", got)
		}
	})
}

func TestDeleteBranch(t *testing.T) {
	start := brBranches("keep", 3, "", 4, "x", 5, "", 6)
	cases := []struct {
		target string
		want   session.NamedBranch
		rest   []session.NamedBranch
		err    string
	}{
		{"x", session.NamedBranch{Name: "x", Seq: 5}, brBranches("keep", 3, "", 4, "", 6), ""},
		{"6", session.NamedBranch{Seq: 6}, brBranches("keep", 3, "", 4, "x", 5), ""},
		{"4", session.NamedBranch{Seq: 4}, brBranches("keep", 3, "x", 5, "", 6), ""},
		{"3", session.NamedBranch{}, nil, `no branch "3"`}, // a seq only names an unnamed entry
		{"nowhere", session.NamedBranch{}, nil, `no branch "nowhere"`},
		{"", session.NamedBranch{}, nil, `no branch ""`}, // "" never matches the unnamed entries
	}
	for _, tc := range cases {
		t.Run(tc.target, func(t *testing.T) {
			m := session.Meta{Head: 2, Branches: slices.Clone(start)}
			got, err := m.DeleteBranch(tc.target)
			if tc.err != "" {
				brErr(t, err, tc.err, true)
				if !slices.Equal(m.Branches, start) {
					t.Errorf("branches changed: %v", m.Branches)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("DeleteBranch = %v, %v", got, err)
			}
			if !slices.Equal(m.Branches, tc.rest) {
				t.Errorf("Branches = %v, want %v", m.Branches, tc.rest)
			}
		})
	}
}

func TestBranchTarget(t *testing.T) {
	m := session.Meta{Head: 2, Branches: brBranches("main", 7, "", 9, "branch 1", 4)}
	cases := []struct {
		target string
		want   uint64
		err    string
	}{
		{"main", 7, ""},
		{"branch 1", 4, ""},
		{"9", 9, ""},
		{"12", 12, ""}, // any seq resolves; reading it decides whether it exists
		{"0", 0, ""},   // the empty path
		{"", 0, `no branch ""`},
		{"Main", 0, `no branch "Main"`},
		{" main", 0, `no branch " main"`},
		{"-1", 0, `no branch "-1"`},
	}
	for _, tc := range cases {
		t.Run(tc.target, func(t *testing.T) {
			got, err := m.BranchTarget(tc.target)
			if tc.err != "" {
				brErr(t, err, tc.err, true)
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("BranchTarget(%q) = %d, %v; want %d", tc.target, got, err, tc.want)
			}
		})
	}
}

func TestSwitchTo(t *testing.T) {
	// 1 u ─ 2 a ─ 3 u ─ 4 a          ("with-mutex" at 4)
	//         └─ 5 u ─ 6 a           (head)
	build := func(t *testing.T) *brSession {
		s := newBrSession(t, brUser("fix the login bug"), brAsst("Use a mutex."), brUser("now add tests"), brAsst("Added three tests."))
		if _, err := s.m.Mark("with-mutex"); err != nil {
			t.Fatal(err)
		}
		if _, err := session.SwitchTo(&s.m, s.tree(), "2"); err != nil {
			t.Fatal(err)
		}
		s.add(brUser("use a channel instead"), brAsst("Switched to a channel."))
		return s
	}
	cases := []struct {
		target   string
		head     uint64
		removed  uint64
		texts    []string
		branches []session.NamedBranch
	}{
		// A sibling path as long as the active one: removed is how much
		// shorter the path got (0), not the 2 messages that left it.
		{"with-mutex", 4, 0, []string{"fix the login bug", "Use a mutex.", "now add tests", "Added three tests."}, brBranches("with-mutex", 4, "", 6)},
		{"4", 4, 0, []string{"fix the login bug", "Use a mutex.", "now add tests", "Added three tests."}, brBranches("with-mutex", 4, "", 6)},
		{"5", 5, 1, []string{"fix the login bug", "Use a mutex.", "use a channel instead"}, brBranches("with-mutex", 4, "", 6)},
		{"1", 1, 3, []string{"fix the login bug"}, brBranches("with-mutex", 4, "", 6)},
		{"3", 3, 1, []string{"fix the login bug", "Use a mutex.", "now add tests"}, brBranches("with-mutex", 4, "", 6)},
		{"6", 6, 0, []string{"fix the login bug", "Use a mutex.", "use a channel instead", "Switched to a channel."}, brBranches("with-mutex", 4)},
		{"0", 0, 4, []string{}, brBranches("with-mutex", 4, "", 6)},
	}
	for _, tc := range cases {
		t.Run(tc.target, func(t *testing.T) {
			s := build(t)
			removed, err := session.SwitchTo(&s.m, s.tree(), tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if s.m.Head != tc.head || removed != tc.removed {
				t.Errorf("head %d removed %d, want %d and %d", s.m.Head, removed, tc.head, tc.removed)
			}
			if got := s.texts(); !reflect.DeepEqual(got, tc.texts) {
				t.Errorf("path = %q", got)
			}
			if !slices.Equal(s.m.Branches, tc.branches) {
				t.Errorf("Branches = %v, want %v", s.m.Branches, tc.branches)
			}
			brCheckCounts(t, &s.m, s.tree())
		})
	}
	t.Run("switching back restores the path", func(t *testing.T) {
		s := build(t)
		before := s.texts()
		if _, err := session.SwitchTo(&s.m, s.tree(), "with-mutex"); err != nil {
			t.Fatal(err)
		}
		// The path left is the unnamed entry at 6; switching to it drops the entry.
		if _, err := session.SwitchTo(&s.m, s.tree(), "6"); err != nil {
			t.Fatal(err)
		}
		if got := s.texts(); !reflect.DeepEqual(got, before) {
			t.Errorf("path = %q, want %q", got, before)
		}
		if want := brBranches("with-mutex", 4); !slices.Equal(s.m.Branches, want) {
			t.Errorf("Branches = %v", s.m.Branches)
		}
	})
	t.Run("errors change nothing", func(t *testing.T) {
		for _, tc := range []struct{ target, err string }{
			{"nowhere", `no branch "nowhere"`},
			{"99", "node 99 not found"},
		} {
			s := build(t)
			before := s.m
			before.Branches = slices.Clone(s.m.Branches)
			_, err := session.SwitchTo(&s.m, s.tree(), tc.target)
			brErr(t, err, tc.err, true)
			if !reflect.DeepEqual(s.m, before) {
				t.Errorf("%s: the meta changed", tc.target)
			}
		}
	})
	t.Run("reads only the target", func(t *testing.T) {
		s := build(t)
		r := &brCountingReader{r: s.tree()}
		if _, err := session.SwitchTo(&s.m, r, "1"); err != nil || r.reads != 1 {
			t.Errorf("reads = %d, %v", r.reads, err)
		}
	})
}

// brCountingReader counts the nodes an operation reads.
type brCountingReader struct {
	r     session.NodeReader
	reads int
}

func (c *brCountingReader) ReadNode(seq uint64) (session.Node, error) {
	c.reads++
	return c.r.ReadNode(seq)
}

// whycodes' revert_to(i): keep messages[..=i], return how many went; i past
// the end changes nothing.
func whycodesRevertTo(msgs []session.Message, i int) ([]session.Message, int) {
	if i >= len(msgs) {
		return msgs, 0
	}
	return msgs[:i+1], len(msgs) - (i + 1)
}

// whycodes' undo_last_turn: cut at the last Role::User message, whatever it is.
func whycodesUndo(msgs []session.Message) ([]session.Message, int) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == session.RoleUser {
			return msgs[:i], len(msgs) - i
		}
	}
	return msgs, 0
}

func TestRevertTo(t *testing.T) {
	msgs := []session.Message{brUser("u0"), brAsst("a1"), brUser("u2"), brAsst("a3")}
	// whycodes' test_revert_to and test_revert_to_out_of_bounds.
	cases := []struct {
		i       uint64
		removed uint64
		texts   []string
		kept    []session.NamedBranch
	}{
		{1, 2, []string{"u0", "a1"}, brBranches("", 4)},
		{0, 3, []string{"u0"}, brBranches("", 4)},
		{2, 1, []string{"u0", "a1", "u2"}, brBranches("", 4)},
		{3, 0, []string{"u0", "a1", "u2", "a3"}, nil}, // the last position: nothing to cut
		{4, 0, []string{"u0", "a1", "u2", "a3"}, nil}, // out of bounds
		{10, 0, []string{"u0", "a1", "u2", "a3"}, nil},
	}
	for _, tc := range cases {
		t.Run("index "+strconv.FormatUint(tc.i, 10), func(t *testing.T) {
			s := newBrSession(t, msgs...)
			removed, err := session.RevertToIndex(&s.m, s.tree(), tc.i)
			if err != nil {
				t.Fatal(err)
			}
			if removed != tc.removed || !reflect.DeepEqual(s.texts(), tc.texts) {
				t.Errorf("removed %d path %q, want %d %q", removed, s.texts(), tc.removed, tc.texts)
			}
			if _, wRemoved := whycodesRevertTo(msgs, int(tc.i)); uint64(wRemoved) != removed {
				t.Errorf("whycodes removes %d", wRemoved)
			}
			if !slices.Equal(s.m.Branches, tc.kept) {
				t.Errorf("Branches = %v, want %v", s.m.Branches, tc.kept)
			}
			brCheckCounts(t, &s.m, s.tree())
		})
	}
	t.Run("empty session", func(t *testing.T) {
		s := newBrSession(t)
		if removed, err := session.RevertToIndex(&s.m, s.tree(), 0); err != nil || removed != 0 || s.m.Head != 0 {
			t.Errorf("removed %d, %v", removed, err)
		}
	})
	t.Run("by seq", func(t *testing.T) {
		s := newBrSession(t, msgs...)
		removed, err := session.RevertToSeq(&s.m, s.tree(), 2)
		if err != nil || removed != 2 || s.m.Head != 2 {
			t.Fatalf("RevertToSeq(2) = %d, %v; head %d", removed, err, s.m.Head)
		}
		if removed, err := session.RevertToSeq(&s.m, s.tree(), 2); err != nil || removed != 0 {
			t.Errorf("RevertToSeq(head) = %d, %v", removed, err)
		}
		if want := brBranches("", 4); !slices.Equal(s.m.Branches, want) {
			t.Errorf("Branches = %v", s.m.Branches)
		}
		// 3 and 4 now hang off the active path; 5 is on a sibling.
		s.add(brUser("u5"))
		for _, tc := range []struct {
			seq uint64
			err string
		}{
			{3, "node 3 is not on the active path"},
			{4, "node 4 is not on the active path"},
			{99, "node 99 not found"},
			{0, "node 0 not found"},
		} {
			before := s.m
			_, err := session.RevertToSeq(&s.m, s.tree(), tc.seq)
			brErr(t, err, tc.err, true)
			if !reflect.DeepEqual(s.m, before) {
				t.Errorf("RevertToSeq(%d) changed the meta", tc.seq)
			}
		}
		// A node deeper than the path is not on it either.
		if _, err := session.SwitchTo(&s.m, s.tree(), "2"); err != nil {
			t.Fatal(err)
		}
		_, err = session.RevertToSeq(&s.m, s.tree(), 4)
		brErr(t, err, "node 4 is not on the active path", true)
	})
	t.Run("reads only the part cut", func(t *testing.T) {
		var long []session.Message
		for i := range 1000 {
			long = append(long, brUser("m"+strconv.Itoa(i)))
		}
		s := newBrSession(t, long...)
		r := &brCountingReader{r: s.tree()}
		if removed, err := session.RevertToIndex(&s.m, r, 996); err != nil || removed != 3 || r.reads > 5 {
			t.Errorf("RevertToIndex: removed %d, reads %d, %v", removed, r.reads, err)
		}
		// The branch RevertToIndex kept (at 1000) holds the path left, 997:
		// the nodes from it down to the head are read to see that, and
		// nothing is saved.
		r.reads = 0
		if removed, err := session.RevertToSeq(&s.m, r, 995); err != nil || removed != 2 || r.reads > 5+3 {
			t.Errorf("RevertToSeq: removed %d, reads %d, %v", removed, r.reads, err)
		}
		if want := brBranches("", 1000); !slices.Equal(s.m.Branches, want) {
			t.Errorf("Branches = %v, want %v", s.m.Branches, want)
		}
		r.reads = 0
		if removed, err := session.Undo(&s.m, r); err != nil || removed != 1 || r.reads > 3+5 {
			t.Errorf("Undo: removed %d, reads %d, %v", removed, r.reads, err)
		}
	})
}

func TestUndo(t *testing.T) {
	undoAll := func(t *testing.T, s *brSession) []uint64 {
		var counts []uint64
		for {
			removed, err := session.Undo(&s.m, s.tree())
			if err != nil {
				t.Fatal(err)
			}
			brCheckCounts(t, &s.m, s.tree())
			counts = append(counts, removed)
			if removed == 0 {
				return counts
			}
		}
	}
	whycodesCounts := func(msgs []session.Message) []uint64 {
		var counts []uint64
		for {
			var n int
			msgs, n = whycodesUndo(msgs)
			counts = append(counts, uint64(n))
			if n == 0 {
				return counts
			}
		}
	}
	t.Run("removes the turn and is idempotent", func(t *testing.T) {
		// whycodes' undo_last_turn_removes_turn_and_is_idempotent: 3, then 2, then 0.
		msgs := []session.Message{
			brUser("first"), brAsst("reply"),
			brUser("second"), blocks(session.RoleAssistant, toolUse("t1", "grep", `{}`)), toolMsg("t1", "out"),
		}
		s := newBrSession(t, msgs...)
		want := []uint64{3, 2, 0}
		if got := whycodesCounts(msgs); !reflect.DeepEqual(got, want) {
			t.Errorf("whycodes counts = %v", got)
		}
		if got := undoAll(t, s); !reflect.DeepEqual(got, want) {
			t.Errorf("counts = %v, want %v", got, want)
		}
		if s.m.Head != 0 || s.m.MessageCount != 0 {
			t.Errorf("head %d, %d messages", s.m.Head, s.m.MessageCount)
		}
		// The first undo kept the path it left; the second left a path
		// that one holds already.
		if want := brBranches("", 5); !slices.Equal(s.m.Branches, want) {
			t.Errorf("Branches = %v, want %v", s.m.Branches, want)
		}
		// A further undo on the empty path changes nothing.
		if removed, err := session.Undo(&s.m, s.tree()); err != nil || removed != 0 {
			t.Errorf("Undo = %d, %v", removed, err)
		}
	})
	t.Run("notes, summaries and rewind reports are undone as user messages", func(t *testing.T) {
		// As whycodes: undo_last_turn cuts at any user-role message, so
		// undoing a rewind takes its report away, and after a note the note.
		msgs := []session.Message{
			brUser("first"), brAsst("reply"),
			brKind(session.KindSummary, "Summary of the earlier work"),
			brUser(session.CompactedMarker + "\nGoals: x"), // a whycodes stub, known by its text
			brUser("second"), brAsst("answer"),
			brKind(session.KindRewind, session.RewindMessage("g", "r")),
			brUser(" " + session.CompactContinuationPreamble), // a whycodes carrier
			brUser("third"), brAsst("done"),
			brKind(session.KindNote, "tests pass"),
		}
		want := []uint64{1, 2, 1, 1, 2, 1, 1, 2, 0}
		if got := whycodesCounts(msgs); !reflect.DeepEqual(got, want) {
			t.Errorf("whycodes counts = %v, want %v", got, want)
		}
		s := newBrSession(t, msgs...)
		if got := undoAll(t, s); !reflect.DeepEqual(got, want) {
			t.Errorf("counts = %v, want %v", got, want)
		}
		// u1, a1, note, a2: the note and what followed it.
		n := newBrSession(t, brUser("u1"), brAsst("a1"), brKind(session.KindNote, "note"), brAsst("a2"))
		if removed, err := session.Undo(&n.m, n.tree()); err != nil || removed != 2 {
			t.Errorf("after a note: removed %d, %v", removed, err)
		}
	})
	t.Run("no user message", func(t *testing.T) {
		s := newBrSession(t, brAsst("hello"), text(session.RoleTool, "out"))
		before := s.m
		if removed, err := session.Undo(&s.m, s.tree()); err != nil || removed != 0 || !reflect.DeepEqual(s.m, before) {
			t.Errorf("Undo = %d, %v", removed, err)
		}
	})
	t.Run("a user turn at the root empties the path", func(t *testing.T) {
		s := newBrSession(t, brUser("only"), brAsst("reply"))
		if removed, err := session.Undo(&s.m, s.tree()); err != nil || removed != 2 || s.m.Head != 0 {
			t.Errorf("Undo = %d, %v, head %d", removed, err, s.m.Head)
		}
		if want := brBranches("", 2); !slices.Equal(s.m.Branches, want) {
			t.Errorf("Branches = %v", s.m.Branches)
		}
	})
	t.Run("a block user message is a turn", func(t *testing.T) {
		s := newBrSession(t, brUser("a"), brAsst("b"), blocks(session.RoleUser, session.Block{Type: session.BlockImage}), brAsst("c"))
		if removed, err := session.Undo(&s.m, s.tree()); err != nil || removed != 2 {
			t.Errorf("Undo = %d, %v", removed, err)
		}
	})
}

// Ours: whycodes' undo_last_turn cuts at the last user-role message even
// when it carries tool results (Anthropic's form, which whycodes never
// writes), leaving the calls before it unanswered; such a message is
// passed over.
func TestDepartureUndoCutsAtAnyUserMessage(t *testing.T) {
	msgs := []session.Message{
		brUser("run the tests"),
		blocks(session.RoleAssistant, toolUse("t1", "bash", `{}`)),
		blocks(session.RoleUser, cpResult("t1", "ok")),
		blocks(session.RoleAssistant, toolUse("t2", "bash", `{}`)),
		blocks(session.RoleUser, cpResult("t2", "ok"), cpTextBlock("and lint")),
		brAsst("all green"),
	}
	if _, n := whycodesUndo(msgs); n != 2 {
		t.Fatalf("whycodes removes %d", n)
	}
	s := newBrSession(t, msgs...)
	if removed, err := session.Undo(&s.m, s.tree()); err != nil || removed != 6 || s.m.Head != 0 {
		t.Errorf("removed %d, head %d, %v", removed, s.m.Head, err)
	}
}

func TestCheckpointRewind(t *testing.T) {
	t.Run("collapses the exploratory turns", func(t *testing.T) {
		// whycodes' checkpoint_rewind_collapses_exploratory_turns.
		s := newBrSession(t, brUser("find the leak"))
		s.m.MarkCheckpoint("find where memory goes", t0)
		cp := s.m.Checkpoint
		if cp == nil || cp.KeepUntil != 0 || cp.Seq != 1 || cp.Goal != "find where memory goes" || cp.StartedAt != t0Text {
			t.Fatalf("Checkpoint = %+v", cp)
		}
		s.add(brAsst("Looking at the cache."), brKind(session.KindNote, "heap is 2 GB"), brAsst("The cache never evicts."))
		if err := s.rewind("  The leak is the cache: it never evicts.  \n"); err != nil {
			t.Fatal(err)
		}
		want := []string{"find the leak", "Checkpoint completed. Exploratory context was collapsed.\nGoal: find where memory goes\n\nReport:\nThe leak is the cache: it never evicts.\n\nContinue from this report. Do not call rewind again until you create a new checkpoint."}
		if got := s.texts(); !reflect.DeepEqual(got, want) {
			t.Errorf("path = %q", got)
		}
		head := s.node(s.m.Head)
		if head.Msg.Role != session.RoleUser || head.Msg.Kind != session.KindRewind || head.Parent != 1 || head.Msg.IsUserTurn() {
			t.Errorf("report node = %+v", head)
		}
		if s.m.Checkpoint != nil || s.m.LastRewindReport == nil || *s.m.LastRewindReport != "The leak is the cache: it never evicts." {
			t.Errorf("checkpoint %v, last report %v", s.m.Checkpoint, s.m.LastRewindReport)
		}
		// The exploration is kept as a branch; nothing was copied.
		if want := brBranches("", 4); !slices.Equal(s.m.Branches, want) {
			t.Errorf("Branches = %v", s.m.Branches)
		}
		if len(s.nodes) != 5 {
			t.Errorf("%d nodes", len(s.nodes))
		}
		brCheckCounts(t, &s.m, s.tree())

		// A second rewind is refused until a new checkpoint.
		before := s.m
		brErr(t, s.rewind("again"), "already rewound: make a new checkpoint before rewinding again", false)
		if err := s.rewind("again"); !errors.Is(err, session.ErrRewound) {
			t.Errorf("err = %v", err)
		}
		if !reflect.DeepEqual(s.m, before) {
			t.Error("a refused rewind changed the meta")
		}
		s.m.MarkCheckpoint("next", t0)
		if s.m.LastRewindReport != nil || s.m.Checkpoint.KeepUntil != 1 || s.m.Checkpoint.Seq != 5 {
			t.Errorf("after a new checkpoint: %+v, %v", s.m.Checkpoint, s.m.LastRewindReport)
		}
		s.add(brUser("more"))
		if err := s.rewind("second report"); err != nil {
			t.Fatal(err)
		}
		if got := s.texts(); len(got) != 3 || !strings.Contains(got[2], "Goal: next\n\nReport:\nsecond report\n") {
			t.Errorf("path = %q", got)
		}
	})
	t.Run("without a checkpoint", func(t *testing.T) {
		// whycodes' rewind_without_checkpoint_is_false.
		for _, msgs := range [][]session.Message{nil, {brUser("a"), brAsst("b")}} {
			s := newBrSession(t, msgs...)
			before := s.m
			err := s.rewind("report")
			brErr(t, err, "no checkpoint to rewind to", false)
			if !errors.Is(err, session.ErrNoCheckpoint) || !reflect.DeepEqual(s.m, before) || len(s.nodes) != len(msgs) {
				t.Errorf("err %v; the session changed", err)
			}
		}
	})
	t.Run("a checkpoint at the head rewinds in place", func(t *testing.T) {
		s := newBrSession(t, brUser("a"), brAsst("b"))
		s.m.MarkCheckpoint("g", t0)
		if err := s.rewind("nothing happened"); err != nil {
			t.Fatal(err)
		}
		if got := s.texts(); len(got) != 3 || s.m.Branches != nil {
			t.Errorf("path %q, branches %v", got, s.m.Branches)
		}
	})
	t.Run("a checkpoint of an empty session rewinds to the empty path", func(t *testing.T) {
		// Fixed quirk: whycodes' keep_until is 0 here, so its rewind keeps
		// the first message written after the checkpoint.
		s := newBrSession(t)
		s.m.MarkCheckpoint("g", t0)
		if cp := s.m.Checkpoint; cp.KeepUntil != 0 || cp.Seq != 0 {
			t.Errorf("Checkpoint = %+v", cp)
		}
		s.add(brUser("explore"), brAsst("explored"))
		whycodes, _ := whycodesRevertTo([]session.Message{brUser("explore"), brAsst("explored")}, int(s.m.Checkpoint.KeepUntil))
		if len(whycodes) != 1 {
			t.Errorf("whycodes keeps %d", len(whycodes))
		}
		if err := s.rewind("r"); err != nil {
			t.Fatal(err)
		}
		if got := s.texts(); len(got) != 1 || !strings.HasPrefix(got[0], "Checkpoint completed.") {
			t.Errorf("path = %q", got)
		}
		if head := s.node(s.m.Head); head.Parent != 0 || head.Depth != 1 {
			t.Errorf("the report is not a root: %+v", head)
		}
		if want := brBranches("", 2); !slices.Equal(s.m.Branches, want) {
			t.Errorf("Branches = %v", s.m.Branches)
		}
	})
	t.Run("keep_until is whycodes' last kept position", func(t *testing.T) {
		s := newBrSession(t, brUser("a"), brAsst("b"), brUser("c"))
		s.m.LastRewindReport = ptr("old")
		s.m.MarkCheckpoint("g", t0.Add(1))
		if cp := s.m.Checkpoint; cp.KeepUntil != 2 || cp.Seq != 3 || s.m.LastRewindReport != nil {
			t.Errorf("Checkpoint = %+v", cp)
		}
	})
	t.Run("a missing checkpoint node is an error that keeps the checkpoint", func(t *testing.T) {
		s := newBrSession(t, brUser("a"))
		s.m.MarkCheckpoint("g", t0)
		s.m.Checkpoint.Seq = 42
		_, _, err := session.Rewind(&s.m, s.tree(), "r")
		brErr(t, err, "node 42 not found", true)
		if s.m.Checkpoint == nil || s.m.LastRewindReport != nil {
			t.Error("the checkpoint was used up")
		}
	})
	t.Run("RewindMessage", func(t *testing.T) {
		got := session.RewindMessage("goal", "\n  report  \n")
		want := "Checkpoint completed. Exploratory context was collapsed.\nGoal: goal\n\nReport:\nreport\n\nContinue from this report. Do not call rewind again until you create a new checkpoint."
		if got != want {
			t.Errorf("RewindMessage = %q", got)
		}
	})
}

func TestTreeRowsLinear(t *testing.T) {
	// whycodes' a_linear_conversation_is_one_flat_line.
	s := newBrSession(t, brUser("one"), brAsst("1"), brUser("two"), brAsst("2"), brUser("three"), brAsst("3"))
	if got, want := s.lines(), []string{"• one", "• two", "● three"}; !reflect.DeepEqual(got, want) {
		t.Errorf("lines = %q, want %q", got, want)
	}
	for i, r := range s.rows() {
		if r.Depth != 0 || r.ForkStart || !r.OnActivePath || r.ActiveLeaf != (i == 2) || r.Seq != uint64(2*i+1) || r.Target != uint64(2*i+2) {
			t.Errorf("row %d = %+v", i, r)
		}
	}
	if rows := newBrSession(t).rows(); len(rows) != 0 {
		t.Errorf("an empty session has rows: %v", rows)
	}
	t.Run("turns are user turns only", func(t *testing.T) {
		s := newBrSession(t, brAsst("greeting"), brUser("one"), brKind(session.KindNote, "note"), brAsst("1"),
			brKind(session.KindSummary, "summary"), brUser(session.CompactedMarker), brUser("two"))
		if got, want := s.lines(), []string{"• one", "● two"}; !reflect.DeepEqual(got, want) {
			t.Errorf("lines = %q", got)
		}
		if r := s.rows()[0]; r.Seq != 2 || r.Target != 6 {
			t.Errorf("row = %+v", r)
		}
	})
	t.Run("a head before any user turn has no leaf", func(t *testing.T) {
		s := newBrSession(t, brAsst("greeting"))
		if rows := s.rows(); len(rows) != 0 {
			t.Errorf("rows = %v", rows)
		}
	})
	t.Run("the leaf turn holds the head", func(t *testing.T) {
		s := newBrSession(t, brUser("one"), brAsst("1"), brUser("two"))
		if got, want := s.lines(), []string{"• one", "● two"}; !reflect.DeepEqual(got, want) {
			t.Errorf("lines = %q", got)
		}
		if r := s.rows()[1]; r.Target != 3 {
			t.Errorf("row = %+v", r)
		}
	})
}

func TestTreeRowsForks(t *testing.T) {
	row := func(depth int, fork bool, label string, names []string, on, leaf bool, seq, target uint64) session.TreeRow {
		if names == nil {
			names = []string{}
		}
		return session.TreeRow{Depth: depth, ForkStart: fork, Label: label, Names: names, OnActivePath: on, ActiveLeaf: leaf, Seq: seq, Target: target}
	}
	check := func(t *testing.T, s *brSession, want []session.TreeRow, lines []string) {
		t.Helper()
		if got := s.rows(); !reflect.DeepEqual(got, want) {
			t.Errorf("rows:\n%+v\nwant\n%+v", got, want)
		}
		if got := s.lines(); !reflect.DeepEqual(got, lines) {
			t.Errorf("lines:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(lines, "\n"))
		}
	}
	switchTo := func(t *testing.T, s *brSession, target string) {
		t.Helper()
		if _, err := session.SwitchTo(&s.m, s.tree(), target); err != nil {
			t.Fatal(err)
		}
	}

	// The tour of wc-branch: two answers to the first question.
	s := newBrSession(t, brUser("fix the login bug"), brAsst("Use a mutex."), brUser("now add tests"), brAsst("Added three tests."))
	if _, err := s.m.Mark("with-mutex"); err != nil {
		t.Fatal(err)
	}
	switchTo(t, s, "2")
	s.add(brUser("use a channel instead"), brAsst("Switched to a channel."))
	check(t, s, []session.TreeRow{
		row(0, false, "fix the login bug", nil, true, false, 1, 2),
		row(1, true, "now add tests", []string{"with-mutex"}, false, false, 3, 4),
		row(1, true, "use a channel instead", nil, true, true, 5, 6),
	}, []string{
		"• fix the login bug",
		"  ├ ○ now add tests [with-mutex]",
		"  └ ● use a channel instead",
	})

	// Back on the first path, one more turn: a single next turn does not indent.
	switchTo(t, s, "with-mutex")
	s.add(brUser("and benchmarks"), brAsst("Done."))
	if want := brBranches("with-mutex", 4, "", 6); !slices.Equal(s.m.Branches, want) {
		t.Fatalf("Branches = %v", s.m.Branches)
	}
	check(t, s, []session.TreeRow{
		row(0, false, "fix the login bug", nil, true, false, 1, 2),
		row(1, true, "now add tests", []string{"with-mutex"}, true, false, 3, 4),
		row(1, false, "and benchmarks", nil, true, true, 7, 8),
		row(1, true, "use a channel instead", nil, false, false, 5, 6),
	}, []string{
		"• fix the login bug",
		"  ├ • now add tests [with-mutex]",
		"  ● and benchmarks",
		"  └ ○ use a channel instead",
	})

	t.Run("names sit at the turn holding the node", func(t *testing.T) {
		s := s.clone(t)
		s.m.Branches = append(s.m.Branches, session.NamedBranch{Name: "mid", Seq: 2}, session.NamedBranch{Name: "top", Seq: 7}, session.NamedBranch{Seq: 1})
		rows := s.rows()
		got := map[uint64][]string{}
		for _, r := range rows {
			got[r.Seq] = r.Names
		}
		want := map[uint64][]string{1: {"mid"}, 3: {"with-mutex"}, 7: {"top"}, 5: {}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("names = %v, want %v", got, want)
		}
	})

	t.Run("a turn's target prefers the active path", func(t *testing.T) {
		s := s.clone(t)
		// A second answer to "and benchmarks" (9), then back to the first (8):
		// the newer answer is off the path, the row still targets 8.
		if _, err := session.RevertToSeq(&s.m, s.tree(), 7); err != nil {
			t.Fatal(err)
		}
		s.add(brAsst("Benchmarks need a fixture."))
		switchTo(t, s, "8")
		if r := s.rows()[2]; r.Seq != 7 || r.Target != 8 || !r.ActiveLeaf {
			t.Errorf("row = %+v, want target 8", r)
		}
		// Off the active path, the newest kept answer wins.
		switchTo(t, s, "6")
		if r := s.rows()[2]; r.Seq != 7 || r.Target != 9 || r.OnActivePath {
			t.Errorf("row = %+v, want target 9", r)
		}
	})

	t.Run("an active turn's target stays on the active path", func(t *testing.T) {
		s := s.clone(t)
		// Cut the last answer: the head is the user message 7, the old
		// answer 8 hangs off it as an unnamed branch. The active leaf row
		// must target the head, not the answer that left the path.
		if _, err := session.RevertToSeq(&s.m, s.tree(), 7); err != nil {
			t.Fatal(err)
		}
		rows := s.rows()
		if r := rows[2]; r.Seq != 7 || !r.ActiveLeaf || r.Target != 7 {
			t.Errorf("leaf row = %+v, want target 7 (the head)", r)
		}
		// A second answer to the first question (9), kept as a branch: the
		// first row is on the active path, whose part of the turn ends at 2.
		switchTo(t, s, "2")
		s.add(brAsst("Or use atomics."))
		switchTo(t, s, "7")
		rows = s.rows()
		if r := rows[0]; r.Seq != 1 || !r.OnActivePath || r.Target != 2 {
			t.Errorf("first row = %+v, want target 2", r)
		}
		for _, r := range rows {
			if r.OnActivePath && !slices.ContainsFunc(s.tree().Path(s.m.Head), func(n *session.Node) bool { return n.Seq == r.Target }) {
				t.Errorf("row %d is on the active path, its target %d is not", r.Seq, r.Target)
			}
		}
	})

	t.Run("separate first turns start at the left", func(t *testing.T) {
		s := s.clone(t)
		switchTo(t, s, "0")
		if s.m.Head != 0 || s.rows()[0].OnActivePath {
			t.Fatal("the empty path is not active")
		}
		for _, r := range s.rows() {
			if r.ActiveLeaf {
				t.Errorf("the empty path has a leaf: %+v", r)
			}
		}
		s.add(brUser("start over"))
		check(t, s, []session.TreeRow{
			row(0, true, "fix the login bug", nil, false, false, 1, 2),
			row(1, true, "now add tests", []string{"with-mutex"}, false, false, 3, 4),
			row(1, false, "and benchmarks", nil, false, false, 7, 8),
			row(1, true, "use a channel instead", nil, false, false, 5, 6),
			row(0, true, "start over", nil, true, true, 9, 9),
		}, []string{
			"├ ○ fix the login bug",
			"  ├ ○ now add tests [with-mutex]",
			"  ○ and benchmarks",
			"  └ ○ use a channel instead",
			"└ ● start over",
		})
	})

	t.Run("nodes no path keeps are not shown", func(t *testing.T) {
		s := s.clone(t)
		s.m.Branches = brBranches("with-mutex", 4) // the channel path is garbage now
		if got := s.lines(); !reflect.DeepEqual(got, []string{"• fix the login bug", "• now add tests [with-mutex]", "● and benchmarks"}) {
			t.Errorf("lines = %q", got)
		}
		kept := session.KeptNodes(&s.m, s.tree())
		want := map[uint64]bool{1: true, 2: true, 3: true, 4: true, 7: true, 8: true}
		if !reflect.DeepEqual(kept, want) {
			t.Errorf("KeptNodes = %v", kept)
		}
	})

	t.Run("deep forks indent once per fork", func(t *testing.T) {
		s := newBrSession(t, brUser("q1"), brAsst("a1"), brUser("q2"), brAsst("a2"))
		switchTo(t, s, "2")
		s.add(brUser("q2b"), brAsst("a2b"))
		switchTo(t, s, "6")
		s.add(brUser("q3"))
		switchTo(t, s, "6")
		s.add(brUser("q3b"))
		check(t, s, []session.TreeRow{
			row(0, false, "q1", nil, true, false, 1, 2),
			row(1, true, "q2", nil, false, false, 3, 4),
			row(1, true, "q2b", nil, true, false, 5, 6),
			row(2, true, "q3", nil, false, false, 7, 7),
			row(2, true, "q3b", nil, true, true, 8, 8),
		}, []string{"• q1", "  ├ ○ q2", "  └ • q2b", "    ├ ○ q3", "    └ ● q3b"})
	})
}

func TestTreeRowLabel(t *testing.T) {
	long72 := strings.Repeat("é", 72)
	cases := []struct {
		name string
		msg  session.Message
		want string
	}{
		{"first line", brUser("fix it\nthen test it"), "fix it"},
		{"first non-blank line, trimmed", brUser("\n \n\t  fix it  \nmore"), "fix it"},
		{"72 chars stay", brUser(long72), long72},
		{"73 chars are cut", brUser(long72 + "x"), strings.Repeat("é", 71) + "…"},
		{"cut by chars, not bytes", brUser(strings.Repeat("ab", 50)), strings.Repeat("ab", 35) + "a…"},
		{"first text block", blocks(session.RoleUser, session.Block{Type: session.BlockImage}, session.Block{Type: session.BlockText, Text: "look"}), "look"},
		{"no text", blocks(session.RoleUser, session.Block{Type: session.BlockImage}), "[no text]"},
		{"blank", brUser(" \n "), "[no text]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newBrSession(t, tc.msg)
			rows := s.rows()
			if len(rows) != 1 || rows[0].Label != tc.want {
				t.Fatalf("rows = %+v, want label %q", rows, tc.want)
			}
			if n := len([]rune(rows[0].Label)); n > session.LabelMaxChars {
				t.Errorf("label of %d chars", n)
			}
		})
	}
}

func TestTreeRowLine(t *testing.T) {
	cases := []struct {
		row  session.TreeRow
		want string
	}{
		{session.TreeRow{Label: "a", OnActivePath: true}, "• a"},
		{session.TreeRow{Label: "a", OnActivePath: true, ActiveLeaf: true}, "● a"},
		{session.TreeRow{Label: "a"}, "○ a"},
		{session.TreeRow{Label: "a", Depth: 2, ForkStart: true}, "    ├ ○ a"},
		{session.TreeRow{Label: "a", Depth: 1, Names: []string{"x", "branch 2"}, OnActivePath: true}, "  • a [x, branch 2]"},
		{session.TreeRow{Label: "a", Names: []string{}}, "○ a"},
	}
	for _, tc := range cases {
		if got := tc.row.Line(); got != tc.want {
			t.Errorf("Line(%+v) = %q, want %q", tc.row, got, tc.want)
		}
	}
}

func TestNextBranchName(t *testing.T) {
	cases := []struct {
		branches []session.NamedBranch
		want     string
	}{
		{nil, "pre-compact-1"},
		{brBranches("pre-compact-1", 1), "pre-compact-2"},
		{brBranches("pre-compact-1", 1, "pre-compact-3", 2), "pre-compact-2"},
		{brBranches("", 1, "pre-set-1", 2, "pre-compact-10", 3), "pre-compact-1"},
	}
	for _, tc := range cases {
		m := session.Meta{Branches: tc.branches}
		if got := session.NextBranchName(&m, "pre-compact-"); got != tc.want {
			t.Errorf("NextBranchName(%v) = %q, want %q", tc.branches, got, tc.want)
		}
	}
}

func TestKeptNodes(t *testing.T) {
	// 1 ─ 2 ─ 3        head 3
	//  └─ 4 ─ 5        unnamed at 4
	//      └─ 6        garbage
	// 7                garbage
	mk := func(seq, parent uint64) session.Node {
		return session.Node{Seq: seq, Parent: parent, Msg: brUser(strconv.FormatUint(seq, 10))}
	}
	tree := session.NewTree([]session.Node{mk(1, 0), mk(2, 1), mk(3, 2), mk(4, 1), mk(5, 4), mk(6, 4), mk(7, 0)})
	m := session.Meta{Head: 3, Branches: brBranches("", 4, "gone", 99)}
	got := session.KeptNodes(&m, tree)
	if want := map[uint64]bool{1: true, 2: true, 3: true, 4: true}; !reflect.DeepEqual(got, want) {
		t.Errorf("KeptNodes = %v", got)
	}
	if got := session.KeptNodes(&session.Meta{}, tree); len(got) != 0 {
		t.Errorf("KeptNodes of nothing = %v", got)
	}
}

func TestBranchErrors(t *testing.T) {
	if session.ErrNoCheckpoint.NotFound || session.ErrRewound.NotFound {
		t.Error("a refused rewind is not a not-found")
	}
	var err error = session.ErrRewound
	var be *session.BranchError
	if !errors.As(err, &be) || be.Error() != "already rewound: make a new checkpoint before rewinding again" {
		t.Errorf("ErrRewound = %v", err)
	}
}

// The switch rule: the path left is kept as an unnamed branch unless a
// kept path already holds all of it, the new head's or a branch's, not
// only one ending exactly there. (whycodes' tree_tests.rs has a switch
// test whose contents the source we have does not show.)
func TestSwitchKeepsThePathLeftUnlessAPathHoldsIt(t *testing.T) {
	build := func(t *testing.T) *brSession {
		s := newBrSession(t, brUser("one"), brAsst("a"), brUser("two"), brAsst("b")) // 1 ─ 2 ─ 3 ─ 4
		if _, err := session.SwitchTo(&s.m, s.tree(), "2"); err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Run("forward along a branch", func(t *testing.T) {
		s := build(t)
		if want := brBranches("", 4); !slices.Equal(s.m.Branches, want) {
			t.Fatalf("Branches = %v", s.m.Branches)
		}
		// Back to 4: path 1-2 lies in it, and the entry at 4 is the head.
		if _, err := session.SwitchTo(&s.m, s.tree(), "4"); err != nil {
			t.Fatal(err)
		}
		if len(s.m.Branches) != 0 {
			t.Errorf("Branches = %v, want none", s.m.Branches)
		}
	})
	t.Run("to a sibling while a named branch holds the path", func(t *testing.T) {
		s := build(t)
		if _, err := s.m.DeleteBranch("4"); err != nil {
			t.Fatal(err)
		}
		s.m.Branches = brBranches("kept", 4)
		s.add(brUser("other"), brAsst("c")) // 5 ─ 6 under 2
		if _, err := session.SwitchTo(&s.m, s.tree(), "3"); err != nil {
			t.Fatal(err)
		}
		// 1-2-5-6 is held by nothing else: it is kept.
		if want := brBranches("kept", 4, "", 6); !slices.Equal(s.m.Branches, want) {
			t.Fatalf("Branches = %v, want %v", s.m.Branches, want)
		}
		// 1-2-3 lies in "kept": nothing more is saved.
		if _, err := session.SwitchTo(&s.m, s.tree(), "6"); err != nil {
			t.Fatal(err)
		}
		if want := brBranches("kept", 4); !slices.Equal(s.m.Branches, want) {
			t.Errorf("Branches = %v, want %v", s.m.Branches, want)
		}
	})
	t.Run("a path held by none is kept", func(t *testing.T) {
		s := build(t) // head 2, branch at 4
		if _, err := session.SwitchTo(&s.m, s.tree(), "1"); err != nil {
			t.Fatal(err)
		}
		// 1-2 lies in the branch at 4: not saved again.
		if want := brBranches("", 4); !slices.Equal(s.m.Branches, want) {
			t.Errorf("Branches = %v", s.m.Branches)
		}
	})
}

// A rewind after a compaction stays on the compacted path, as whycodes'
// does: the checkpoint's node is on the path the compaction replaced, so
// its position counts (whycodes' revert_to(keep_until) on the rewritten
// messages), not its node, which would undo the compaction.
func TestRewindAfterCompactionKeepsTheCompactedPath(t *testing.T) {
	var msgs []session.Message
	for i := range 8 {
		msgs = append(msgs, brUser("q"+strconv.Itoa(i)), brAsst("a"+strconv.Itoa(i)+" "+strings.Repeat("w", 400)))
	}
	s := newBrSession(t, msgs...)
	s.m.MarkCheckpoint("explore", t0) // keep_until 15, at node 16
	s.add(brUser("dead end"), brAsst("nothing"), brUser("another"))
	// A compaction writes a new path of 4 messages and keeps the old one.
	var path []session.Message
	for _, n := range s.tree().Path(s.m.Head) {
		path = append(path, n.Msg)
	}
	compacted, _ := session.Compact("", path, 4, t0)
	kept := len(compacted) // shorter than keep_until+1 = 16
	if kept >= 16 {
		t.Fatalf("compacted to %d messages", kept)
	}
	s.m.Branches = append(s.m.Branches, session.NamedBranch{Name: "pre-compact-1", Seq: s.m.Head})
	var parent *session.Node
	for _, msg := range compacted {
		n := session.Child(parent, s.m.NextSeq, msg)
		s.m.NextSeq++
		s.nodes = append(s.nodes, n)
		parent = &s.nodes[len(s.nodes)-1]
	}
	s.m.MoveHead(parent, false)
	before := s.texts()
	if err := s.rewind("the report"); err != nil {
		t.Fatal(err)
	}
	got := s.texts()
	if len(got) != kept+1 || !slices.Equal(got[:kept], before) || !strings.Contains(got[kept], "Report:\nthe report") {
		t.Errorf("path %q", got)
	}
	// A checkpoint still on the path rewinds to its node, as always.
	s.m.MarkCheckpoint("again", t0)
	s.add(brUser("x"))
	if err := s.rewind("r2"); err != nil {
		t.Fatal(err)
	}
	if got := s.texts(); len(got) != kept+2 || !strings.Contains(got[kept], "the report") || !strings.Contains(got[kept+1], "r2") {
		t.Errorf("path %q", got)
	}
	// By position, a longer path is cut after keep_until.
	p := newBrSession(t, msgs[:6]...)
	p.m.MarkCheckpoint("g", t0) // keep_until 5
	p.add(brUser("e1"), brAsst("e2"))
	p.m.Checkpoint.Seq = 999_999 // a node no longer on the path
	p.nodes = append(p.nodes, session.Node{Seq: 999_999, Depth: 6, Msg: brAsst("elsewhere")})
	if err := p.rewind("r"); err != nil {
		t.Fatal(err)
	}
	if got := p.texts(); len(got) != 7 || !strings.HasPrefix(got[5], "a2 ") {
		t.Errorf("by position: %q", got)
	}
}

// The fork title: the source's with " (fork)", again for a fork of a fork,
// the suffix kept within the 64-char cap.
func TestForkTitleSuffix(t *testing.T) {
	if got := session.ForkTitle("fix the login"); got != "fix the login (fork)" {
		t.Errorf("%q", got)
	}
	if got := session.ForkTitle(session.ForkTitle("fix the login")); got != "fix the login (fork) (fork)" {
		t.Errorf("fork of a fork: %q", got)
	}
	long := strings.Repeat("é", 64)
	got := session.ForkTitle(long)
	if utf8.RuneCountInString(got) != 64 || !strings.HasSuffix(got, "… (fork)") {
		t.Errorf("%q (%d chars)", got, utf8.RuneCountInString(got))
	}
	if got := session.SanitizeTitle(session.ForkTitle(long)); got != session.ForkTitle(long) {
		t.Errorf("a fork title does not survive sanitising: %q", got)
	}
}
