package command

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
)

// Shell completion: --completion SHELL prints a script for bash, zsh or
// fish that completes every wc command. The script runs the command being
// completed as "wc-X __complete WORD..." (the words after the command's
// name, the last the one being completed), which prints one candidate a
// line, "value<TAB>description", or ":files" when the word is a file name
// the shell completes itself. Session ids and branch names come from the
// store the words name (--store), or the default one.

// completeCommand is the hidden first argument that asks for candidates.
const completeCommand = "__complete"

// filesDirective asks the shell to complete file names.
const filesDirective = ":files"

// Completion says what a command's words are, for completion.
type Completion struct {
	Values map[string][]string // the values a flag takes, by its long name
	Args   ArgKind
	// Verbs and their descriptions, for ArgsVerbs; BranchVerbs take a
	// branch name.
	Verbs       [][2]string
	BranchVerbs []string
}

// ArgKind is what a command's positional arguments are.
type ArgKind int

const (
	ArgsSessions ArgKind = iota // session references
	ArgsFiles                   // files to read
	ArgsNone                    // none
	ArgsVerbs                   // sessions, then a verb and its argument (wc-branch)
)

// commonValues are the values of the flags every command has.
var commonValues = map[string][]string{"completion": {"bash", "zsh", "fish"}}

// maxSessionCandidates bounds the sessions offered, newest first.
const maxSessionCandidates = 200

// runComplete answers a "__complete" run: it opens the store the words
// name for reading, without waiting for its lock, and prints the
// candidates for the last word.
func runComplete(spec *Spec, words []string, stdout io.Writer) int {
	if len(words) == 0 {
		words = []string{""}
	}
	argv := []string{spec.Name, "--lock-timeout", "1s"}
	for i, w := range words[:len(words)-1] {
		switch {
		case w == "--store" && i+1 < len(words)-1:
			argv = append(argv, "--store", words[i+1])
		case strings.HasPrefix(w, "--store="):
			argv = append(argv, w)
		}
	}
	sub := *spec
	sub.Streams, sub.Signals, sub.Direct = false, "", nil
	sub.Action = func(c *Ctx) error { return c.complete(words) }
	return Run(&sub, argv, strings.NewReader(""), stdout, io.Discard)
}

// candidate is one completion and its description.
type candidate struct{ value, text string }

func (c *Ctx) complete(words []string) error {
	cur, before := words[len(words)-1], words[:len(words)-1]
	// bash splits "--format=md" at the "=" into three words.
	if cur == "=" {
		cur = ""
	} else if n := len(before); n > 0 && before[n-1] == "=" {
		before = before[:n-1]
	}
	flags := map[string]cli.Flag{}
	for _, f := range c.App.Flags {
		for _, n := range f.Names() {
			flags[n] = f
		}
	}
	var out []candidate
	prev := ""
	if len(before) > 0 {
		prev = before[len(before)-1]
	}
	if f, ok := flags[strings.TrimLeft(prev, "-")]; ok && strings.HasPrefix(prev, "-") && takesValue(f) {
		out = c.flagValues(f, "", cur)
	} else if name, value, ok := strings.Cut(cur, "="); ok && strings.HasPrefix(cur, "-") {
		if f, ok := flags[strings.TrimLeft(name, "-")]; ok && takesValue(f) {
			out = c.flagValues(f, name+"=", value)
		}
	} else if strings.HasPrefix(cur, "-") {
		out = flagCandidates(c.App.Flags, cur)
	} else {
		var err error
		if out, err = c.argCandidates(positionals(before, flags), cur); err != nil {
			return err
		}
	}
	for _, cand := range out {
		line := cand.value
		if cand.text != "" {
			line += "\t" + strings.Join(strings.Fields(cand.text), " ")
		}
		c.out.WriteString(line + "\n")
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	doc, ok := f.(cli.DocGenerationFlag)
	return ok && doc.TakesValue()
}

// flagValues are the values of flag f that start with prefix, each after
// lead ("--format=" when the word holds both).
func (c *Ctx) flagValues(f cli.Flag, lead, prefix string) []candidate {
	name := f.Names()[0]
	values := c.Spec.Complete.Values[name]
	if values == nil {
		values = commonValues[name]
	}
	if values == nil {
		if doc, ok := f.(cli.DocGenerationFlag); ok {
			if placeholder, _ := unquoteUsage(doc.GetUsage()); placeholder == "FILE" || placeholder == "DIR" {
				return []candidate{{value: filesDirective}}
			}
		}
		return nil
	}
	var out []candidate
	for _, v := range values {
		if strings.HasPrefix(v, prefix) {
			out = append(out, candidate{value: lead + v})
		}
	}
	return out
}

// flagCandidates are the long flags that start with prefix, and their
// usage.
func flagCandidates(flags []cli.Flag, prefix string) []candidate {
	var all []candidate
	for _, f := range flags {
		doc, ok := f.(cli.DocGenerationFlag)
		if !ok || isHidden(f) {
			continue
		}
		_, usage := unquoteUsage(doc.GetUsage())
		for _, n := range f.Names() {
			if len(n) > 1 {
				all = append(all, candidate{"--" + n, usage})
			}
		}
	}
	// --help and --version are among the flags: urfave/cli adds them as
	// the app starts.
	return slices.DeleteFunc(all, func(c candidate) bool { return !strings.HasPrefix(c.value, prefix) })
}

func isHidden(f cli.Flag) bool {
	v, ok := f.(interface{ IsVisible() bool })
	return ok && !v.IsVisible()
}

// positionals are the words that are not flags or their values; all after
// "--".
func positionals(words []string, flags map[string]cli.Flag) []string {
	var pos []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "--" {
			return append(pos, words[i+1:]...)
		}
		if len(w) < 2 || w[0] != '-' {
			pos = append(pos, w)
			continue
		}
		if f, ok := flags[strings.TrimLeft(w, "-")]; ok && takesValue(f) && !strings.Contains(w, "=") {
			i++
		}
	}
	return pos
}

// argCandidates are the candidates for a positional argument after pos.
func (c *Ctx) argCandidates(pos []string, cur string) ([]candidate, error) {
	comp := c.Spec.Complete
	switch comp.Args {
	case ArgsNone:
		return nil, nil
	case ArgsFiles:
		return []candidate{{value: filesDirective}}, nil
	case ArgsVerbs:
		at := slices.IndexFunc(pos, func(w string) bool { return hasVerb(comp.Verbs, w) })
		switch {
		case at < 0:
			var out []candidate
			for _, v := range comp.Verbs {
				if strings.HasPrefix(v[0], cur) {
					out = append(out, candidate{v[0], v[1]})
				}
			}
			sessions, err := c.sessionCandidates(cur)
			return append(out, sessions...), err
		case at == len(pos)-1 && at > 0 && slices.Contains(comp.BranchVerbs, pos[at]):
			return c.branchCandidates(pos[0], cur)
		}
		return nil, nil
	}
	return c.sessionCandidates(cur)
}

func hasVerb(verbs [][2]string, w string) bool {
	return slices.ContainsFunc(verbs, func(v [2]string) bool { return v[0] == w })
}

// sessionCandidates are the ids that start with cur, newest first, with
// their titles.
func (c *Ctx) sessionCandidates(cur string) ([]candidate, error) {
	digits, ok := store.RefDigits(cur)
	if !ok {
		return nil, nil
	}
	q := store.ListQuery{}
	st, err := c.OpenListing(q, false)
	if err != nil {
		return nil, nil // no candidates, rather than an error in the prompt
	}
	var out []candidate
	_ = st.ListInfo(q, func(info *session.Info) error {
		if strings.HasPrefix(strings.ReplaceAll(info.ID, "-", ""), digits) && len(out) < maxSessionCandidates {
			out = append(out, candidate{info.ID, info.Title})
		}
		return nil
	})
	return out, nil
}

// branchCandidates are the names of the branches of the session ref names.
func (c *Ctx) branchCandidates(ref, cur string) ([]candidate, error) {
	st, err := c.Open(store.Read)
	if err != nil {
		return nil, nil
	}
	id, err := st.Resolve(ref)
	if err != nil {
		return nil, nil
	}
	m, err := st.Meta(id)
	if err != nil {
		return nil, nil
	}
	var out []candidate
	for _, b := range m.Branches {
		if b.Name != "" && strings.HasPrefix(b.Name, cur) {
			out = append(out, candidate{b.Name, fmt.Sprintf("node %d", b.Seq)})
		}
	}
	return out, nil
}
