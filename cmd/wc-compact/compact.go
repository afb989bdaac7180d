package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/wctoolkit/wc/cmd/internal/batch"
	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
)

// plan is the compaction asked for, read and checked before the store opens.
type plan struct {
	truncate, prune, shake, spill bool
	maxTokens                     uint64
	summary                       *string
	fullReplace                   bool
	native                        *session.Block
	print, full, prefix, dropped  bool
	strict                        bool
	maxChars                      int
	discard, dryRun               bool
}

func compact(c *command.Ctx) error {
	p, err := readPlan(c)
	if err != nil {
		return err
	}
	shard, err := c.Shard()
	if err != nil {
		return err
	}
	var refs []string
	switch {
	case c.Bool("all") && c.Args().Len() > 0:
		return command.Usagef("--all takes no session arguments")
	case c.IsSet("shard") && !c.Bool("all"):
		return command.Usagef("--shard needs --all: it selects from the listing")
	case !c.Bool("all"):
		if refs, err = c.Refs(); err != nil {
			return err
		}
	}
	mode := store.Write
	if p.print || p.dryRun {
		mode = store.Read
	}
	bulk := c.Bool("all") || len(refs) > 1
	open := c.Open
	if bulk {
		open = c.OpenBatch
	}
	st, err := open(mode)
	if err != nil {
		return err
	}
	var ids []string
	if c.Bool("all") {
		// The listing names every session without reading each one's
		// metadata (the compaction rows of wcbench run measure it).
		err = st.ListInfo(store.ListQuery{Shard: shard}, func(info *session.Info) error { ids = append(ids, info.ID); return nil })
	} else {
		ids, err = command.Resolve(st, refs)
	}
	if err != nil {
		return err
	}
	if c.Bool("all") || bulk && mode == store.Write {
		// In store order each merge of the batch's writes rewrites only
		// their neighbourhood; in the order of a listing (newest first,
		// random ids) it would rewrite most of the store.
		slices.Sort(ids)
	}
	single := !c.Bool("all") && len(ids) == 1
	progress := c.Progress("compacting", len(ids))
	failed, over := 0, 0
	// Sessions are read and compacted ahead, in parallel, and committed
	// here in order. A bulk store takes calls from several goroutines; it
	// closes after this returns, so the work in flight is waited for.
	// A client of a store process (a store on etcd) takes one call at a
	// time.
	ahead := batch.Start(ids, bulk && !c.OnSharedStore(), mode == store.Write, func(id string, reserve func(uint64) bool) *worked {
		return work(c, st, id, p, reserve)
	})
	defer ahead.Stop()
	for i, id := range ids {
		if err := c.Interrupted(i, len(ids)); err != nil {
			return err
		}
		w := ahead.Take(i)
		err := finish(c, st, w, p)
		if errors.Is(err, store.ErrChanged) && single {
			// A writer on another machine committed to it after it was
			// read (a store on etcd): read and compact it again.
			err = c.RetryChanged(func() error { return finish(c, st, work(c, st, id, p, anySize), p) })
		}
		if errors.Is(err, store.ErrChanged) && !single {
			// A batch leaves it to that writer (or the next batch) rather
			// than holding up the rest: not a failure.
			if perr := c.PrintJSON(skippedLine{ID: id, Skipped: "changed since it was read"}); perr != nil {
				return perr
			}
			err = nil
		}
		if err != nil {
			if p.print || single {
				return err // one session: an error like any command's
			}
			failed++
			if perr := c.PrintJSON(struct {
				ID    string `json:"id"`
				Error string `json:"error"`
			}{id, strings.Join(strings.Fields(err.Error()), " ")}); perr != nil {
				return perr
			}
		}
		if w.err == nil && w.line.StillOver != nil && *w.line.StillOver {
			over++
		}
		ahead.Done(i)
		progress(i + 1)
		if err := st.Settle(); err != nil {
			return err
		}
	}
	if failed > 0 {
		return &command.Error{Code: command.ExitFailure, Msg: fmt.Sprintf("%d of %d sessions failed", failed, len(ids)), Partial: true}
	}
	if p.strict && over > 0 {
		return &command.Error{Code: exitStillOver, Msg: fmt.Sprintf("%d of %d sessions still over %d tokens", over, len(ids), p.maxTokens), Partial: true}
	}
	return nil
}

// skippedLine is a batch's line for a session another writer changed
// while the batch compacted it.
type skippedLine struct {
	ID      string `json:"id"`
	Skipped string `json:"skipped"`
}

// anySize is the reserve of a session read outside a batch's window.
func anySize(uint64) bool { return true }

// exitStillOver is --strict's status for a compaction that left a session
// over its budget.
const exitStillOver = 4

func readPlan(c *command.Ctx) (*plan, error) {
	p := &plan{
		truncate: c.Bool("truncate"), prune: c.Bool("prune"), shake: c.Bool("shake"), spill: c.Bool("spill"),
		maxTokens: c.Uint64("max-tokens"), fullReplace: c.Bool("full-replace"),
		print: c.Bool("print-transcript"), full: c.Bool("full"), prefix: c.Bool("prefix"), dropped: c.Bool("dropped"),
		strict:   c.Bool("strict"),
		maxChars: c.Int("max-chars"), discard: c.Bool("discard"), dryRun: c.Bool("dry-run"),
	}
	if c.IsSet("max-tokens") && p.maxTokens == 0 {
		return nil, command.Usagef("--max-tokens must be above 0")
	}
	if p.maxChars <= 0 {
		return nil, command.Usagef("--max-chars must be above 0")
	}
	if (p.full || p.prefix || p.fullReplace) && !c.IsSet("max-chars") {
		p.maxChars = session.FullTranscriptMaxChars // whycodes' cap for a whole transcript
	}
	modes := 0
	for _, f := range []string{"max-tokens", "full-replace", "native"} {
		if c.IsSet(f) {
			modes++
		}
	}
	if modes > 1 {
		return nil, command.Usagef("--max-tokens, --full-replace and --native exclude each other")
	}
	for _, f := range []string{"full", "prefix"} {
		if c.Bool(f) && !p.print {
			return nil, command.Usagef("--%s goes with --print-transcript", f)
		}
	}
	if p.full && p.prefix {
		return nil, command.Usagef("--full and --prefix exclude each other")
	}
	if p.strict && !c.IsSet("max-tokens") {
		return nil, command.Usagef("--strict goes with --max-tokens")
	}
	if p.print && (c.IsSet("summary") || c.IsSet("native") || p.dryRun) {
		return nil, command.Usagef("--print-transcript only prints: it takes no --summary, --native or --dry-run")
	}
	if !p.print && !p.truncate && !p.prune && !p.shake && !p.spill && modes == 0 && !c.IsSet("summary") {
		return nil, command.Usagef("no compaction asked for").WithHint("give --max-tokens N, or --truncate, --prune, --shake, --spill, --summary, --full-replace or --native")
	}
	if c.IsSet("summary") {
		data, err := c.ReadText(c.String("summary"), "a summary")
		if err != nil {
			return nil, err
		}
		s := string(data)
		if session.FormatCompactSummary(s) == "" {
			return nil, command.DataErrf("the summary is empty")
		}
		p.summary = &s
	}
	if c.IsSet("native") {
		data, err := c.ReadText(c.String("native"), "a native compaction block")
		if err != nil {
			return nil, err
		}
		if err := session.CheckNesting(data); err != nil {
			return nil, command.DataErrf("%s: %v", c.String("native"), err)
		}
		if !gjson.ValidBytes(data) || !gjson.ParseBytes(data).IsObject() {
			return nil, command.DataErrf("%s is not a JSON object", c.String("native"))
		}
		if t := gjson.GetBytes(data, "type"); t.Type != gjson.String || t.Str == "" {
			return nil, command.DataErrf("the native compaction block needs a string \"type\"")
		}
		// Decoded as any block would be, so that a known type with members
		// of the wrong types is refused here, not stored.
		msg, err := session.DecodeMessage([]byte(`{"role":"assistant","content":[` + string(compactJSON(data)) + `]}`))
		if err != nil {
			return nil, command.DataErrf("%s: %v", c.String("native"), err)
		}
		p.native = &msg.Content.Blocks[0]
	}
	if (c.IsSet("summary") || c.IsSet("native")) && (c.Args().Len() == 0 && !c.Bool("all")) &&
		(c.String("summary") == "-" || c.String("native") == "-") {
		return nil, command.Usagef("--summary - and --native - read stdin, which holds the sessions here").WithHint("pass the session as an argument")
	}
	return p, nil
}

func compactJSON(data []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, data); err != nil {
		return bytes.TrimSpace(data)
	}
	return out.Bytes()
}

// errStopped is the result of work the batch stopped before it read.
var errStopped = errors.New("the batch stopped")

// worked is one session of a batch, read and compacted, waiting for its
// commit: err is the failure of either.
type worked struct {
	id     string
	m      session.Meta
	path   []session.Node
	next   []session.Message
	shared int
	line   outcomeLine
	blobs  map[[32]byte][]byte
	print  string
	err    error
}

// work reads a session and compacts it in memory; finish commits it.
// reserve is told the session's size before its path is read, and may wait;
// it returns false when the batch stopped, and nothing more is read.
func work(c *command.Ctx, st store.Handle, id string, p *plan, reserve func(tokens uint64) bool) *worked {
	w := &worked{id: id}
	if w.m, w.err = st.Meta(id); w.err != nil {
		return w
	}
	if !reserve(w.m.Tokens) {
		w.err = errStopped
		return w
	}
	if w.err = st.Path(id, w.m.Head, func(n *session.Node) error { w.path = append(w.path, *n); return nil }); w.err != nil {
		return w
	}
	msgs := make([]session.Message, len(w.path))
	for i := range w.path {
		msgs[i] = w.path[i].Msg
	}
	if p.print {
		w.print, w.path = transcriptToPrint(&w.m, msgs, p), nil // held until printed: only the text
		return w
	}
	w.blobs = map[[32]byte][]byte{}
	next, out, err := apply(&w.m, msgs, p, c, func(body string) string {
		sum := sha256.Sum256([]byte(body))
		w.blobs[sum] = []byte(body)
		return hex.EncodeToString(sum[:])
	})
	if err != nil {
		w.err = err
		return w
	}
	w.next, w.shared = next, sharedPrefix(msgs, next)
	changed := w.shared < len(msgs) || w.shared < len(next)
	if p.dryRun {
		w.path, w.next, w.blobs = nil, nil, nil // only a commit needs them
	}
	w.line = outcomeLine{ID: id, CompactOutcome: out, Changed: changed, Reduced: out.Reduced()}
	if !p.dropped {
		w.line.DroppedTranscript = ""
	}
	if p.maxTokens > 0 {
		still := out.StillOver(p.maxTokens)
		w.line.StillOver = &still
	}
	return w
}

// finish commits a worked session, if it changed, and prints its line.
func finish(c *command.Ctx, st store.Handle, w *worked, p *plan) error {
	if w.err != nil {
		return w.err
	}
	if p.print {
		c.Out().WriteString(w.print)
		return nil
	}
	if w.line.Changed && !p.dryRun {
		var err error
		if w.line.Branch, err = commitPath(c, st, &w.m, w.path, w.shared, w.next[w.shared:], w.blobs, p.discard); err != nil {
			return err
		}
	}
	w.line.Head, w.line.DryRun = w.m.Head, p.dryRun
	return c.PrintJSON(w.line)
}

type outcomeLine struct {
	ID string `json:"id"`
	session.CompactOutcome
	Changed   bool   `json:"changed"`
	Reduced   bool   `json:"reduced"`
	StillOver *bool  `json:"still_over,omitempty"`
	Branch    string `json:"branch,omitempty"`
	Head      uint64 `json:"head"`
	DryRun    bool   `json:"dry_run,omitempty"`
}

// apply runs the requested steps over a copy of the active path.
func apply(m *session.Meta, msgs []session.Message, p *plan, c *command.Ctx, put func(string) string) ([]session.Message, session.CompactOutcome, error) {
	out := session.CompactOutcome{MessagesBefore: uint64(len(msgs))}
	next := prepare(msgs, p, put)
	// A step counts the path it is given and the one it returns; those
	// are the totals wanted unless other steps ran before or after it.
	var step session.CompactOutcome
	counted, countedAfter := true, true
	switch {
	case p.maxTokens > 0:
		next, step = session.Compact(m.SystemPrompt, next, p.maxTokens, c.Now)
		// A model's summary takes the place of the local one, or of the
		// summary a compacted path opens with.
		if p.summary != nil && (step.DroppedMessages() || session.LeadsWithSummary(next)) {
			next = session.PrependSummary(next, *p.summary, c.Now)
			countedAfter = false
		}
	case p.fullReplace:
		summary := ""
		if p.summary != nil {
			summary = *p.summary
		}
		next, step = session.FullReplace(m.SystemPrompt, next, summary, c.Now)
	case p.native != nil:
		var err error
		if next, step, err = session.NativeCompaction(m.SystemPrompt, next, *p.native, c.Now); err != nil {
			out.TokensBefore = session.PathTokens(m.SystemPrompt, msgs)
			return nil, out, err
		}
	case p.summary != nil:
		next, step = session.SummarizePrefix(m.SystemPrompt, next, *p.summary, c.Now)
	default:
		counted, countedAfter = false, false
	}
	if counted && !p.prepares() {
		out.TokensBefore = step.TokensBefore
	} else {
		out.TokensBefore = session.PathTokens(m.SystemPrompt, msgs)
	}
	if countedAfter {
		out.TokensAfter = step.TokensAfter
	} else {
		out.TokensAfter = session.PathTokens(m.SystemPrompt, next)
	}
	out.DroppedTranscript = cutAtRune(step.DroppedTranscript, p.maxChars)
	out.MessagesAfter = uint64(len(next))
	return next, out, nil
}

// prepares reports whether prepare changes anything.
func (p *plan) prepares() bool { return p.truncate || p.prune || p.shake || p.spill }

// prepare runs the capping and spilling steps over a copy of msgs.
func prepare(msgs []session.Message, p *plan, put func(string) string) []session.Message {
	next := append([]session.Message(nil), msgs...)
	if p.truncate {
		session.TruncateToolResults(next)
	}
	if p.prune {
		session.PruneToolResults(next)
	}
	if p.shake {
		session.ShakeToolResults(next)
	}
	if p.spill {
		session.SpillToolResults(next, put)
	}
	return next
}

// cutAtRune keeps at most n bytes of s without splitting a character.
func cutAtRune(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// transcriptToPrint is the text the same flags with --summary would replace:
// the same capping and spilling steps run first, so both see one path.
func transcriptToPrint(m *session.Meta, msgs []session.Message, p *plan) string {
	msgs = prepare(msgs, p, func(body string) string {
		sum := sha256.Sum256([]byte(body))
		return hex.EncodeToString(sum[:])
	})
	switch {
	case p.prefix:
		return session.PrefixTranscriptForSummary(msgs, p.maxChars)
	case p.full || p.fullReplace:
		return session.TranscriptForFullSummary(msgs, p.maxChars)
	case p.maxTokens > 0:
		prepared, cut := session.CompactCut(m.SystemPrompt, msgs, p.maxTokens)
		if cut.Start == 0 && session.LeadsWithSummary(prepared) {
			return session.MessagesTranscript(prepared[:1], p.maxChars) // the summary --summary replaces
		}
		return session.MessagesTranscript(cut.Dropped(prepared), p.maxChars)
	}
	return session.MessagesTranscript(msgs[:session.SummaryCut(msgs)], p.maxChars)
}

// sharedPrefix counts the leading messages that stayed byte for byte.
func sharedPrefix(a, b []session.Message) int {
	n := 0
	for n < len(a) && n < len(b) && a[n].SameJSON(&b[n]) {
		n++
	}
	return n
}

// commitPath writes the new tail after the path's first shared nodes as
// new nodes and moves the head there, keeping the old head as
// pre-compact-N. Blobs go first and the metadata last, so a crash leaves
// the session as it was.
func commitPath(c *command.Ctx, st store.Handle, m *session.Meta, path []session.Node, shared int, tail []session.Message, blobs map[[32]byte][]byte, discard bool) (string, error) {
	for sum, data := range blobs {
		if err := st.PutBlob(m.ID, sum, data); err != nil {
			return "", err
		}
	}
	branch := ""
	if !discard && m.Head != 0 {
		branch = session.NextBranchName(m, "pre-compact-")
		m.Branches = append(m.Branches, session.NamedBranch{Name: branch, Seq: m.Head})
	}
	var parent *session.Node
	if shared > 0 {
		parent = &path[shared-1]
	}
	nodes := make([]session.Node, 0, len(tail))
	for _, msg := range tail {
		nodes = append(nodes, session.Child(parent, m.NextSeq, msg))
		m.NextSeq++
		parent = &nodes[len(nodes)-1]
	}
	session.HintRepeats(nodes, path[shared:])
	m.MoveHead(parent, false)
	m.Touch(c.Now)
	return branch, st.Commit(m, nodes)
}
