package format

import (
	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// nodeLine is a wc-export jsonl line's place in its session's tree.
type nodeLine struct {
	id          string
	seq, parent uint64
	line        int
	ok          bool // the line had a string id and whole numbers for seq (above 0) and parent
	// What a tree's lines (--tree) say of the session: whether the node
	// is the head, and the names of the branches that end at it.
	head     bool
	branches []string
	bad      string // why head or branches cannot be read
}

// follows reports whether the node can come next on a path in its order
// after node prev (0 before the first): its parent is at or after prev,
// whatever a filter left out between them, and before the node itself.
func (n nodeLine) follows(prev uint64) bool {
	return n.parent >= prev && n.parent < n.seq
}

// CheckPath refuses the lines of wc-export --format jsonl that are not one
// path in order of one session, for the commands that take a stream as
// the messages of one path: the lines of a tree (--tree) or lines out of
// order would interleave its branches, and two sessions' lines would join
// two conversations. Lines a filter thinned pass, and so does any other
// message.
func (b *Batch) CheckPath() error {
	var id string
	var prev uint64
	for _, n := range b.nodes {
		switch {
		case !n.ok:
		case id != "" && n.id != id:
			return lineErr(n.line, "the lines are of two sessions, %s and %s: give one session's lines", id, n.id)
		case !n.follows(prev):
			return lineErr(n.line, "session %s: the lines are not one path in order (node %d's parent %d "+
				"is not the node before it): export the path, without --tree", n.id, n.seq, n.parent)
		default:
			id, prev = n.id, n.seq
		}
	}
	return nil
}

func nodeLineOf(v gjson.Result, line int) nodeLine {
	id, seq, parent := v.Get("id"), v.Get("seq"), v.Get("parent")
	if id.Type != gjson.String || !seq.Exists() || !parent.Exists() {
		return nodeLine{}
	}
	// Other tools' lines may carry members of these names: only wc's
	// spelling of them makes a node line, the rest are plain messages.
	n := nodeLine{id: id.Str, line: line}
	var okSeq, okParent bool
	n.seq, okSeq = session.WholeNumber(seq)
	n.parent, okParent = session.WholeNumber(parent)
	n.ok = okSeq && okParent && n.seq > 0
	switch head := v.Get("head"); {
	case !head.Exists():
	case head.Type == gjson.True:
		n.head = true
	default:
		n.bad = `"head" must be true`
	}
	if names := v.Get("branches"); names.Exists() {
		if !names.IsArray() {
			n.bad = `"branches" must be an array of names`
		}
		for _, name := range names.Array() {
			if name.Type != gjson.String {
				n.bad = `"branches" must be an array of names`
				break
			}
			if err := session.CheckBranchName(name.Str); err != nil {
				n.bad = err.Error()
				break
			}
			n.branches = append(n.branches, name.Str)
		}
	}
	return n
}

// isNodeLine reports a lone wc-export jsonl line, which is valid JSON but
// no share.
func isNodeLine(data []byte) bool {
	v := gjson.ParseBytes(data)
	return v.IsObject() && v.Get("message").IsObject() && !v.Get("role").Exists() && !v.Get("messages").Exists()
}

// importNodes reads the lines of wc-export --format jsonl back into their
// sessions, one per id in the order the ids first appear. A session's lines
// that hold its whole tree (--tree: every parent an earlier line) make that
// tree again, with the head and the branch names its lines give ("head",
// "branches"); lines without them make the newest leaf the head and the
// other leaves unnamed branches. Lines of one path in its order make
// that path, also when a filter left some of them out. Lines that are
// neither (a thinned tree, lines out of order) are refused: read as one
// path they would interleave the branches. ok is false when some message
// did not come from such a line: the stream is then one path, as any.
func importNodes(batch *Batch) (out []Imported, ok bool, err error) {
	if len(batch.nodes) != len(batch.Messages) || len(batch.Messages) == 0 {
		return nil, false, nil
	}
	var ids []string
	lines := map[string][]int{}
	for i, n := range batch.nodes {
		if !n.ok {
			return nil, false, nil
		}
		if _, seen := lines[n.id]; !seen {
			ids = append(ids, n.id)
		}
		lines[n.id] = append(lines[n.id], i)
	}
	turns := false
	for _, id := range ids {
		imp, err := importNodeSession(batch, id, lines[id])
		if err != nil {
			return nil, true, err
		}
		// A session with no turn is still one: only a stream with none at
		// all is refused, as any import.
		turns = turns || hasTurns(&imp.Share)
		out = append(out, imp)
	}
	if !turns {
		return nil, true, errNoMessages
	}
	return out, true, nil
}

// importNodeSession makes one session of its lines (indexes into batch).
func importNodeSession(batch *Batch, id string, lines []int) (Imported, error) {
	var meta session.Meta
	var span timeSpan
	msgs := make([]session.Message, len(lines))
	for k, i := range lines {
		msgs[k] = batch.Messages[i]
		span.add(msgs[k].CreatedAt)
	}
	meta.CreatedAt, meta.UpdatedAt = span.first, span.last
	imp := Imported{SourceID: id}

	pos := make(map[uint64]int, len(lines)) // seq -> k
	parents := make([]int, len(lines))
	children := make([]int, len(lines))
	whole := true
	// Lines that say anything of the head or the branches say all of it:
	// names is not nil once one does.
	marked, names := -1, map[int][]string(nil)
	for k, i := range lines {
		n := batch.nodes[i]
		if _, dup := pos[n.seq]; dup {
			return imp, lineErr(n.line, "node %d of session %s appears twice", n.seq, id)
		}
		switch {
		case n.bad != "":
			return imp, lineErr(n.line, "%s", n.bad)
		case n.head && marked >= 0:
			return imp, lineErr(n.line, "session %s has two heads", id)
		case n.head:
			marked = k
		}
		if (n.head || n.branches != nil) && names == nil {
			names = map[int][]string{}
		}
		if len(n.branches) > 0 {
			names[k] = n.branches
		}
		parents[k] = -1
		if n.parent != 0 {
			p, known := pos[n.parent]
			if !known {
				whole = false
			} else {
				parents[k] = p
				children[p]++
			}
		}
		pos[n.seq] = k
	}
	if whole {
		head, leaves := -1, 0
		for k := range lines {
			if children[k] == 0 {
				leaves++
				if head < 0 || batch.nodes[lines[k]].seq > batch.nodes[lines[head]].seq {
					head = k
				}
			}
		}
		if names != nil {
			imp.Share = session.TreeShare(meta, msgs, parents, marked, names)
			return imp, nil
		}
		if leaves > 1 {
			imp.Share = session.TreeShare(meta, msgs, parents, head, names)
			return imp, nil
		}
		imp.Share = session.Share{Meta: meta, Messages: msgs} // one chain, parents first
		return imp, nil
	}
	var prev uint64
	for _, i := range lines {
		n := batch.nodes[i]
		if !n.follows(prev) {
			return imp, lineErr(n.line, "session %s: the lines are neither its whole tree nor one path in order "+
				"(node %d's parent %d is not the node before it); import wc-export --format jsonl --tree as it is, "+
				"or --format json", id, n.seq, n.parent)
		}
		prev = n.seq
	}
	imp.Share = session.Share{Meta: meta, Messages: msgs}
	return imp, nil
}
