package session

// Node is one message in a session's tree. Every node carries running totals
// of the path from the root to it, so that moving the head anywhere (append,
// switch, revert) updates the session's counts without walking the path.
// A child's seq is always greater than its parent's: the active path read in
// seq order runs from the root to the head.
type Node struct {
	Seq    uint64 // from the store key; not part of the value
	Parent uint64 // 0 for a root
	Depth  uint64 // messages on the path root..this node, inclusive
	Tokens uint64 // their token estimate
	Users  uint64 // their user-role messages
	Msg    Message
	// Same, when not 0, is an earlier node of the session whose message
	// Msg is believed to repeat: a rewritten path's unchanged tail. The
	// store then may keep the message once (see record.EncodeNodeRef). It is a
	// hint the store checks, never a claim it trusts, and reads leave it 0.
	Same uint64
}

// NodeHeader is a node without its message. Same is not 0 for a node
// stored as a reference: the node whose message this one repeats.
type NodeHeader struct {
	Parent, Depth, Tokens, Users uint64
	Same                         uint64
}

// Header returns the node's totals.
func (n *Node) Header() NodeHeader {
	return NodeHeader{Parent: n.Parent, Depth: n.Depth, Tokens: n.Tokens, Users: n.Users}
}

// Child returns the node holding msg under n (or under the root when n is
// nil), with its running totals.
func Child(parent *Node, seq uint64, msg Message) Node {
	c := Node{Seq: seq, Depth: 1, Tokens: MessageTokens(&msg), Msg: msg}
	if msg.Role == RoleUser {
		c.Users = 1
	}
	if parent != nil {
		c.Parent = parent.Seq
		c.Depth += parent.Depth
		c.Tokens += parent.Tokens
		c.Users += parent.Users
	}
	return c
}

// messageSizeHint is about the length of the message's JSON, to size a
// buffer for it.
func messageSizeHint(m *Message) int {
	if !m.Content.IsBlocks {
		return len(m.Content.Text) + 64
	}
	size := 64
	for i := range m.Content.Blocks {
		b := &m.Content.Blocks[i]
		size += len(b.Text) + len(b.Result) + len(b.ResultRaw) + len(b.Input) + len(b.Source) + len(b.Raw) + len(b.Signature) + len(b.Data) + 48
	}
	return size
}

// HintRepeats sets the Same hint of each node of a rewritten path's new
// part whose message is, field for field, the old path's at the same
// distance from the end: where a rewrite (a compaction, a pruning, a new
// set of messages) keeps messages, it keeps them in place or as the tail.
// replaced is the old path after the part the two share.
func HintRepeats(nodes, replaced []Node) {
	for i, j := len(nodes)-1, len(replaced)-1; i >= 0 && j >= 0; i, j = i-1, j-1 {
		if nodes[i].Msg.sameFields(&replaced[j].Msg) {
			nodes[i].Same = replaced[j].Seq
		}
	}
}

// AppendNodeLine appends the line wc-export --format jsonl writes for n of
// session id: {"id","seq","parent",["head":true,]["branches":[…],]"message"}.
// head and branches (the names of the branches that end at n, "" for an
// unnamed one) are given for the lines of a whole tree.
func AppendNodeLine(dst []byte, id string, n *Node, head bool, branches []string) []byte {
	dst = appendString(append(dst, `{"id":`...), id)
	dst = appendUint(append(dst, `,"seq":`...), n.Seq)
	dst = appendUint(append(dst, `,"parent":`...), n.Parent)
	if head {
		dst = append(dst, `,"head":true`...)
	}
	if len(branches) > 0 {
		dst = AppendJSONStrings(append(dst, `,"branches":`...), branches)
	}
	dst = n.Msg.AppendJSON(append(dst, `,"message":`...))
	return append(dst, "}\n"...)
}
