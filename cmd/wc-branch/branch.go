package main

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/format"
	"github.com/wctoolkit/wc/pkg/session/store"
)

// verb is one wc-branch operation on one session, after all input was read.
type verb struct {
	write bool // takes the store's exclusive lock
	// dryRunReads: with --dry-run it only reads (and so creates no store)
	dryRunReads bool
	args        int // how many arguments it takes at most
	run         func(c *command.Ctx, st store.Handle, m *session.Meta, arg string, in *input) error
}

// input is what a verb reads from stdin or files, read before the store opens.
type input struct {
	report string
	msgs   []session.Message
}

var verbs = map[string]verb{
	"mark":         {write: true, args: 1, run: mark},
	"tree":         {run: tree},
	"switch":       {write: true, args: 1, run: switchTo},
	"fork":         {write: true, run: fork},
	"checkpoint":   {write: true, run: checkpoint},
	"rewind":       {write: true, run: rewind},
	"revert":       {write: true, args: 1, run: revert},
	"undo":         {write: true, run: undo},
	"set-messages": {write: true, run: setMessages},
	"delete":       {write: true, dryRunReads: true, args: 1, run: deleteBranch},
	"gc":           {write: true, dryRunReads: true, run: gc},
}

func verbNames() string {
	names := make([]string, 0, len(verbs))
	for n := range verbs {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func branch(c *command.Ctx) error {
	args := c.Args().Slice()
	at := slices.IndexFunc(args, func(a string) bool { _, ok := verbs[a]; return ok })
	if at < 0 {
		if len(args) == 0 {
			return command.Usagef("no verb given").WithHint("verbs: %s", verbNames())
		}
		word := args[len(args)-1]
		if i := slices.IndexFunc(args, func(a string) bool { return !couldBeRef(a) }); i >= 0 {
			word = args[i]
		}
		return command.Usagef("unknown verb %q", word).WithHint("verbs: %s", verbNames())
	}
	name, v := args[at], verbs[args[at]]
	refs, rest := args[:at], args[at+1:]
	if len(rest) > v.args {
		return command.Usagef("%s takes %s", name, plural(v.args, "argument"))
	}
	arg := ""
	if len(rest) > 0 {
		arg = rest[0]
	}
	if err := needArg(name, arg); err != nil {
		return err
	}
	in, err := readInput(c, name, len(refs) > 0)
	if err != nil {
		return err
	}
	if len(refs) == 0 {
		if refs, err = c.StdinRefs(); err != nil {
			return err
		}
	}
	mode := store.Read
	if v.write && !(v.dryRunReads && c.Bool("dry-run")) {
		mode = store.Write
	}
	st, err := c.OpenFor(mode, refs)
	if err != nil {
		return err
	}
	ids, err := command.Resolve(st, refs)
	if err != nil {
		return err
	}
	for _, id := range ids {
		// Read again when another machine's writer committed to the
		// session meanwhile (a store on etcd).
		err := c.RetryChanged(func() error {
			m, err := st.Meta(id)
			if err != nil {
				return err
			}
			return v.run(c, st, &m, arg, in)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func plural(n int, word string) string {
	switch n {
	case 0:
		return "no " + word + "s"
	case 1:
		return "at most one " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func needArg(verb, arg string) error {
	switch {
	case (verb == "switch" || verb == "delete") && arg == "":
		return command.Usagef("%s needs a branch name or a node seq", verb)
	}
	return nil
}

// readInput reads what the verb needs from stdin or files, before the store
// is opened; stdin is free for it only when the session came as an argument.
func readInput(c *command.Ctx, verb string, refsInArgs bool) (*input, error) {
	in := &input{}
	switch verb {
	case "checkpoint":
		if strings.TrimSpace(c.String("goal")) == "" {
			return nil, command.Usagef("checkpoint needs --goal")
		}
	case "rewind":
		path := c.String("report")
		if path == "" {
			return nil, command.Usagef("rewind needs --report FILE (or - for stdin)")
		}
		if path == "-" && !refsInArgs {
			return nil, command.Usagef("--report - reads stdin, which holds the sessions here").WithHint("pass the session as an argument")
		}
		data, err := c.ReadText(path, "a rewind report")
		if err != nil {
			return nil, err
		}
		if in.report = strings.TrimSpace(string(data)); in.report == "" {
			return nil, command.DataErrf("the report is empty")
		}
	case "set-messages":
		if !refsInArgs {
			return nil, command.Usagef("set-messages reads messages on stdin: pass the session as an argument")
		}
		data, err := c.Stdin()
		if err != nil {
			return nil, err
		}
		// Empty stdin is more often a command before this one that failed
		// than a wish to empty the path, which [] says.
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, command.DataErrf("no messages on stdin").WithHint("to make the path empty, pipe []")
		}
		batch, err := format.ParseMessages(data)
		if err == nil {
			err = batch.CheckPath()
		}
		if err != nil {
			return nil, command.DataErrf("stdin: %v", err)
		}
		if err := session.CheckSizes(batch.Messages, false); err != nil {
			return nil, command.DataErrf("stdin: %v", err)
		}
		in.msgs = batch.Messages
	case "revert":
		if c.IsSet("index") {
			if _, err := strconv.ParseUint(c.String("index"), 10, 64); err != nil {
				return nil, command.Usagef("--index %q is not a position", c.String("index"))
			}
		}
	}
	return in, nil
}

// result is what most verbs print: the session's info and what changed.
type result struct {
	session.Info
	Branch  *session.NamedBranch `json:"branch,omitempty"`
	From    *uint64              `json:"from,omitempty"`
	Removed *uint64              `json:"removed,omitempty"`
	Added   []uint64             `json:"appended,omitempty"`
}

func commitAndPrint(c *command.Ctx, st store.Handle, m *session.Meta, nodes []session.Node, r result) error {
	m.Touch(c.Now)
	if err := st.Commit(m, nodes); err != nil {
		return err
	}
	r.Info = m.Info()
	return c.PrintJSON(r)
}

func mark(c *command.Ctx, st store.Handle, m *session.Meta, name string, _ *input) error {
	got, err := m.Mark(name)
	if err != nil {
		return err
	}
	return commitAndPrint(c, st, m, nil, result{Branch: &session.NamedBranch{Name: got, Seq: m.Head}})
}

func tree(c *command.Ctx, st store.Handle, m *session.Meta, _ string, _ *input) error {
	t, err := command.LoadTree(st, m.ID)
	if err != nil {
		return err
	}
	rows := session.TreeRows(m, t)
	if c.Bool("text") {
		for _, line := range session.TreeLines(rows) {
			fmt.Fprintln(c.Out(), line)
		}
		return nil
	}
	for _, row := range rows {
		if err := c.PrintJSON(struct {
			ID string `json:"id"`
			session.TreeRow
		}{m.ID, row}); err != nil {
			return err
		}
	}
	return nil
}

func switchTo(c *command.Ctx, st store.Handle, m *session.Meta, target string, _ *input) error {
	from := m.Head
	if _, err := session.SwitchTo(m, command.SessionNodes(st, m.ID), target); err != nil {
		return err
	}
	// No "removed": between siblings that would need a walk to where they meet.
	return commitAndPrint(c, st, m, nil, result{From: &from})
}

func fork(c *command.Ctx, st store.Handle, m *session.Meta, _ string, _ *input) error {
	at := m.Head
	if c.IsSet("at") {
		at = c.Uint64("at")
	}
	f := session.New(command.NewID(), m.ProjectPath, m.SystemPrompt, c.Now)
	f.Title, f.TitleSource = session.ForkTitle(m.Title), m.TitleSource
	f.ForkedFrom = &session.ForkOrigin{ID: m.ID, Seq: at}
	var nodes []session.Node
	if at != 0 {
		if _, err := st.Node(m.ID, at); err != nil {
			return err
		}
		err := st.Path(m.ID, at, func(n *session.Node) error {
			var parent *session.Node
			if len(nodes) > 0 {
				parent = &nodes[len(nodes)-1]
			}
			nodes = append(nodes, session.Child(parent, uint64(len(nodes)+1), n.Msg))
			return nil
		})
		if err != nil {
			return err
		}
		f.NextSeq = uint64(len(nodes)) + 1
		f.SetHead(&nodes[len(nodes)-1])
	}
	// Spilled output lives in the session's own range: copy what the path
	// points at, before the metadata that makes the fork visible.
	for _, sum := range session.BlobRefs(nodes) {
		data, err := st.Blob(m.ID, sum)
		if err != nil {
			return err
		}
		if err := st.PutBlob(f.ID, sum, data); err != nil {
			return err
		}
	}
	if err := st.Commit(&f, nodes); err != nil {
		return err
	}
	return c.PrintJSON(f.Info())
}

func checkpoint(c *command.Ctx, st store.Handle, m *session.Meta, _ string, _ *input) error {
	m.MarkCheckpoint(strings.TrimSpace(c.String("goal")), c.Now)
	return commitAndPrint(c, st, m, nil, result{})
}

func rewind(c *command.Ctx, st store.Handle, m *session.Meta, _ string, in *input) error {
	to, report, err := session.Rewind(m, command.SessionNodes(st, m.ID), in.report)
	if err != nil {
		return err
	}
	res := session.Append(m, to, []session.Message{report}, c.Now, nil, session.AppendOptions{})
	return commitAndPrint(c, st, m, res.Nodes, result{Added: []uint64{res.Nodes[0].Seq}})
}

func revert(c *command.Ctx, st store.Handle, m *session.Meta, arg string, _ *input) error {
	if (arg == "") == !c.IsSet("index") {
		return command.Usagef("revert needs a node SEQ or --index N, not both")
	}
	from, nodes := m.Head, command.SessionNodes(st, m.ID)
	var removed uint64
	var err error
	if c.IsSet("index") {
		i, _ := strconv.ParseUint(c.String("index"), 10, 64)
		removed, err = session.RevertToIndex(m, nodes, i)
	} else {
		seq, perr := strconv.ParseUint(arg, 10, 64)
		if perr != nil {
			return command.Usagef("%q is not a node seq", arg)
		}
		removed, err = session.RevertToSeq(m, nodes, seq)
	}
	if err != nil {
		return err
	}
	return moveResult(c, st, m, from, removed)
}

func undo(c *command.Ctx, st store.Handle, m *session.Meta, _ string, _ *input) error {
	from := m.Head
	removed, err := session.Undo(m, command.SessionNodes(st, m.ID))
	if err != nil {
		return err
	}
	return moveResult(c, st, m, from, removed)
}

// moveResult commits a head move; a move that changed nothing writes nothing.
func moveResult(c *command.Ctx, st store.Handle, m *session.Meta, from, removed uint64) error {
	if m.Head == from {
		return c.PrintJSON(result{Info: m.Info(), Removed: &removed})
	}
	return commitAndPrint(c, st, m, nil, result{From: &from, Removed: &removed})
}

func setMessages(c *command.Ctx, st store.Handle, m *session.Meta, _ string, in *input) error {
	var path []session.Node
	if err := st.Path(m.ID, m.Head, func(n *session.Node) error { path = append(path, *n); return nil }); err != nil {
		return err
	}
	// Reuse the nodes of the common prefix; copy the rest.
	shared := 0
	for shared < len(path) && shared < len(in.msgs) &&
		bytes.Equal(path[shared].Msg.AppendJSON(nil), in.msgs[shared].AppendJSON(nil)) {
		shared++
	}
	if shared == len(path) && shared == len(in.msgs) {
		return c.PrintJSON(result{Info: m.Info()}) // the same messages: nothing to do
	}
	var parent *session.Node
	if shared > 0 {
		parent = &path[shared-1]
	}
	var r result
	if !c.Bool("discard") && m.Head != 0 {
		name := session.NextBranchName(m, "pre-set-")
		m.Branches = append(m.Branches, session.NamedBranch{Name: name, Seq: m.Head})
		r.Branch = &session.NamedBranch{Name: name, Seq: m.Head}
	}
	var nodes []session.Node
	for _, msg := range in.msgs[shared:] {
		n := session.Child(parent, m.NextSeq, msg)
		m.NextSeq++
		nodes = append(nodes, n)
		parent = &nodes[len(nodes)-1]
	}
	session.HintRepeats(nodes, path[shared:])
	m.MoveHead(parent, false)
	return commitAndPrint(c, st, m, nodes, r)
}

func deleteBranch(c *command.Ctx, st store.Handle, m *session.Meta, target string, _ *input) error {
	b, err := m.DeleteBranch(target)
	if err != nil {
		return err
	}
	if c.Bool("dry-run") {
		return c.PrintJSON(struct {
			ID      string              `json:"id"`
			Deleted session.NamedBranch `json:"deleted"`
			DryRun  bool                `json:"dry_run"`
		}{m.ID, b, true})
	}
	return commitAndPrint(c, st, m, nil, result{Branch: &b})
}

func gc(c *command.Ctx, st store.Handle, m *session.Meta, _ string, _ *input) error {
	freed, err := st.Collect(m, c.Bool("dry-run"))
	if err != nil {
		return err
	}
	return c.PrintJSON(struct {
		ID string `json:"id"`
		store.Freed
		DryRun bool `json:"dry_run"`
	}{m.ID, freed, c.Bool("dry-run")})
}

// couldBeRef reports whether a word may name a session (hex and dashes), to
// tell a misspelt verb from an id.
func couldBeRef(word string) bool {
	return word != "" && strings.Trim(strings.ToLower(word), "0123456789abcdef-") == ""
}
