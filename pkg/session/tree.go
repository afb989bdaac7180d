package session

import (
	"slices"
	"sort"
)

// Tree holds all of a session's nodes in memory, for work that needs the
// whole tree (share export, import, tree rows). Appends never build one.
type Tree struct {
	nodes    []Node // in seq order
	index    map[uint64]int
	children map[uint64][]uint64
}

// NewTree indexes nodes given in seq order.
func NewTree(nodes []Node) *Tree {
	t := &Tree{nodes: nodes, index: make(map[uint64]int, len(nodes)), children: map[uint64][]uint64{}}
	for i := range nodes {
		t.index[nodes[i].Seq] = i
		t.children[nodes[i].Parent] = append(t.children[nodes[i].Parent], nodes[i].Seq)
	}
	return t
}

// Node returns the node with seq, or nil.
func (t *Tree) Node(seq uint64) *Node {
	if i, ok := t.index[seq]; ok {
		return &t.nodes[i]
	}
	return nil
}

// Len is the number of nodes.
func (t *Tree) Len() int { return len(t.nodes) }

// Nodes returns every node in seq order.
func (t *Tree) Nodes() []Node { return t.nodes }

// Children returns the seqs of seq's children (0: the roots), in seq order.
func (t *Tree) Children(seq uint64) []uint64 { return t.children[seq] }

// Path returns the nodes from the root to seq; nil for seq 0, a seq that is
// not in the tree, or a path that breaks the parent-before-child rule.
func (t *Tree) Path(seq uint64) []*Node {
	var rev []*Node
	for seq != 0 {
		n := t.Node(seq)
		if n == nil || n.Parent >= n.Seq { // a parent precedes its child; else the tree is corrupt and could loop
			return nil
		}
		rev = append(rev, n)
		seq = n.Parent
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// Leaves returns the seqs of nodes without children, ascending.
func (t *Tree) Leaves() []uint64 {
	var out []uint64
	for i := range t.nodes {
		if len(t.children[t.nodes[i].Seq]) == 0 {
			out = append(out, t.nodes[i].Seq)
		}
	}
	return out
}

// Branch is a stored path the way whycodes shares it: a full copy from the
// root, with an optional name.
type Branch struct {
	Name     string
	HasName  bool
	Messages []*Message
}

// Branches lists every path kept besides the active one, as whycodes'
// branches: a full copy from the root, named or not, in the order kept.
func Branches(m *Meta, t *Tree) []Branch {
	out := make([]Branch, 0, len(m.Branches))
	for _, b := range m.Branches {
		out = append(out, Branch{Name: b.Name, HasName: b.Name != "", Messages: messagesOf(t.Path(b.Seq))})
	}
	return out
}

func messagesOf(path []*Node) []*Message {
	out := make([]*Message, len(path))
	for i, n := range path {
		out[i] = &n.Msg
	}
	return out
}

// treeBuilder grows a tree from full paths, sharing the nodes of common
// prefixes: the inverse of Branches.
type treeBuilder struct {
	nodes []Node
	next  uint64
	kids  map[uint64]map[string]uint64 // parent -> message JSON -> child
}

func newTreeBuilder() *treeBuilder {
	return &treeBuilder{next: 1, kids: map[uint64]map[string]uint64{}}
}

// addPath inserts msgs from the root and returns the seq of its last node
// (0 for an empty path).
func (b *treeBuilder) addPath(msgs []Message) uint64 {
	var parent *Node
	for i := range msgs {
		key := string(msgs[i].AppendJSON(nil))
		var parentSeq uint64
		if parent != nil {
			parentSeq = parent.Seq
		}
		if seq, ok := b.kids[parentSeq][key]; ok {
			parent = b.node(seq)
			continue
		}
		n := Child(parent, b.next, msgs[i])
		b.next++
		b.nodes = append(b.nodes, n)
		if b.kids[parentSeq] == nil {
			b.kids[parentSeq] = map[string]uint64{}
		}
		b.kids[parentSeq][key] = n.Seq
		parent = &b.nodes[len(b.nodes)-1]
	}
	if parent == nil {
		return 0
	}
	return parent.Seq
}

func (b *treeBuilder) node(seq uint64) *Node {
	i := sort.Search(len(b.nodes), func(i int) bool { return b.nodes[i].Seq >= seq })
	return &b.nodes[i]
}

// path returns the seqs from the root to seq.
func (b *treeBuilder) path(seq uint64) []uint64 {
	var rev []uint64
	for seq != 0 {
		rev = append(rev, seq)
		seq = b.node(seq).Parent
	}
	slices.Reverse(rev)
	return rev
}
