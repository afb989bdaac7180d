package format

import (
	"slices"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// nodeLine is a wc-export jsonl line's place in its session's tree.
type nodeLine struct {
	id          string
	seq, parent uint64
	line        int
	ok          bool // the line had an id, a seq and a parent
}

func nodeLineOf(v gjson.Result, line int) nodeLine {
	id, seq, parent := v.Get("id"), v.Get("seq"), v.Get("parent")
	if id.Type != gjson.String || seq.Type != gjson.Number || parent.Type != gjson.Number {
		return nodeLine{}
	}
	return nodeLine{id: id.Str, seq: seq.Uint(), parent: parent.Uint(), line: line, ok: seq.Uint() > 0}
}

// importNodes reads the lines of wc-export --format jsonl back into their
// sessions, one per id in the order the ids first appear. A session whose
// lines hold a whole tree (--tree: every parent an earlier line, more than
// one leaf) gets that tree back: the lines do not say which node was the
// head, so the newest leaf becomes it and the other leaves unnamed
// branches (wc-export --format json keeps the head and the names). Lines
// that do not (an active path, or lines a filter left out) stay a path in
// their order, as any message stream. ok is false when some message did
// not come from such a line: the stream is then one path, as before.
func importNodes(batch *Batch) (out []Imported, ok bool) {
	if len(batch.nodes) != len(batch.Messages) || len(batch.Messages) == 0 {
		return nil, false
	}
	var ids []string
	lines := map[string][]int{}
	for i, n := range batch.nodes {
		if !n.ok {
			return nil, false
		}
		if _, seen := lines[n.id]; !seen {
			ids = append(ids, n.id)
		}
		lines[n.id] = append(lines[n.id], i)
	}
	for _, id := range ids {
		imp := Imported{SourceID: id}
		var span timeSpan
		for _, i := range lines[id] {
			span.add(batch.Messages[i].CreatedAt)
		}
		imp.Share.Meta.CreatedAt, imp.Share.Meta.UpdatedAt = span.first, span.last
		if paths := treePaths(batch, lines[id]); paths != nil {
			imp.Share.Messages = paths[0]
			for _, p := range paths[1:] {
				imp.Share.Branches = append(imp.Share.Branches, session.SharedBranch{Messages: p})
			}
		} else {
			for _, i := range lines[id] {
				imp.Share.Messages = append(imp.Share.Messages, batch.Messages[i])
			}
		}
		if !hasTurns(&imp.Share) {
			return nil, true // Import's caller reports no messages
		}
		out = append(out, imp)
	}
	return out, true
}

// treePaths returns the path from the root to every leaf of the tree the
// lines (indexes into batch) hold, the newest leaf's first and the others
// in the order of their seqs; nil when the lines are not a whole tree with
// more than one leaf.
func treePaths(batch *Batch, lines []int) [][]session.Message {
	at := make(map[uint64]int, len(lines)) // seq -> index into batch
	hasChild := map[uint64]bool{}
	for _, i := range lines {
		n := batch.nodes[i]
		if _, dup := at[n.seq]; dup {
			return nil
		}
		if _, known := at[n.parent]; n.parent != 0 && !known {
			return nil // a parent left out, or after its child
		}
		at[n.seq] = i
		hasChild[n.parent] = true
	}
	var leaves []uint64
	for seq := range at {
		if !hasChild[seq] {
			leaves = append(leaves, seq)
		}
	}
	if len(leaves) < 2 {
		return nil
	}
	slices.Sort(leaves)
	newest := leaves[len(leaves)-1]
	leaves = append([]uint64{newest}, leaves[:len(leaves)-1]...)
	paths := make([][]session.Message, 0, len(leaves))
	for _, leaf := range leaves {
		var path []session.Message
		for seq := leaf; seq != 0; seq = batch.nodes[at[seq]].parent {
			path = append(path, batch.Messages[at[seq]])
		}
		slices.Reverse(path)
		paths = append(paths, path)
	}
	return paths
}
