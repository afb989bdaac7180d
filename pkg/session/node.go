package session

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/tidwall/gjson"
)

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
	// store then may keep the message once (see EncodeNodeRef). It is a
	// hint the store checks, never a claim it trusts, and reads leave it 0.
	Same uint64
}

// NodeHeader is a node without its message. Same is not 0 for a stored
// reference (EncodeNodeRef): the node whose message this one repeats.
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

// EncodeNode is the stored form of a node; the header comes first in a fixed
// order so that DecodeNodeHeader can read it without parsing the message.
func EncodeNode(n *Node) []byte {
	dst := appendNodeHeader(make([]byte, 0, 64+messageSizeHint(&n.Msg)), n)
	dst = append(dst, `,"msg":`...)
	dst = n.Msg.AppendJSON(dst)
	return append(dst, '}')
}

// EncodeNodeRef is the stored form of a node whose message is node same's
// (which must hold its own): the header, then "same" where the message
// would be. A path rewritten by a compaction keeps its tail this way, at
// the cost of a header per message instead of a copy of each.
func EncodeNodeRef(n *Node, same uint64) []byte {
	dst := appendNodeHeader(make([]byte, 0, 96), n)
	dst = append(dst, `,"same":`...)
	dst = appendUint(dst, same)
	return append(dst, '}')
}

func appendNodeHeader(dst []byte, n *Node) []byte {
	dst = append(dst, `{"parent":`...)
	dst = appendUint(dst, n.Parent)
	dst = append(dst, `,"n":`...)
	dst = appendUint(dst, n.Depth)
	dst = append(dst, `,"tok":`...)
	dst = appendUint(dst, n.Tokens)
	dst = append(dst, `,"users":`...)
	return appendUint(dst, n.Users)
}

// AppendResolvedNodeRef appends to dst the node a reference stands for: its
// header with the message of target, the stored value of the node it names.
func AppendResolvedNodeRef(dst, ref, target []byte) ([]byte, error) {
	h, _, err := DecodeNodeHeader(ref)
	if err != nil {
		return nil, err
	}
	th, msg, err := DecodeNodeHeader(target)
	if err != nil {
		return nil, err
	}
	if h.Same == 0 || th.Same != 0 {
		return nil, invalidf("stored node is malformed")
	}
	cut := bytes.LastIndex(ref, []byte(nodeRefKey))
	dst = append(append(append(dst, ref[:cut]...), `,"msg":`...), msg...)
	return append(dst, '}'), nil
}

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

var nodeHeaderKeys = [...]string{`{"parent":`, `,"n":`, `,"tok":`, `,"users":`, `,"msg":`}

const nodeRefKey = `,"same":`

// DecodeNodeHeader reads a stored node's totals and returns the raw JSON of
// its message, without decoding it. For a reference (EncodeNodeRef) the
// message is nil and h.Same names the node holding it.
func DecodeNodeHeader(b []byte) (NodeHeader, []byte, error) {
	var h NodeHeader
	fields := [...]*uint64{&h.Parent, &h.Depth, &h.Tokens, &h.Users}
	rest := b
	for i, key := range nodeHeaderKeys {
		if i == len(fields) && bytes.HasPrefix(rest, []byte(nodeRefKey)) {
			same, tail, ok := parseUint(rest[len(nodeRefKey):])
			if !ok || same == 0 || string(tail) != "}" {
				return h, nil, invalidf("stored node is malformed")
			}
			h.Same = same
			return h, nil, nil
		}
		if !bytes.HasPrefix(rest, []byte(key)) {
			return h, nil, invalidf("stored node is malformed")
		}
		rest = rest[len(key):]
		if i == len(fields) {
			break
		}
		v, tail, ok := parseUint(rest)
		if !ok {
			return h, nil, invalidf("stored node is malformed")
		}
		*fields[i] = v
		rest = tail
	}
	if len(rest) < 2 || rest[len(rest)-1] != '}' {
		return h, nil, invalidf("stored node is malformed")
	}
	return h, rest[:len(rest)-1], nil
}

// parseUint reads the decimal number b starts with.
func parseUint(b []byte) (uint64, []byte, bool) {
	end := 0
	for end < len(b) && b[end] >= '0' && b[end] <= '9' {
		end++
	}
	v, err := strconv.ParseUint(string(b[:end]), 10, 64)
	return v, b[end:], err == nil
}

// DecodeNode reads a stored node.
func DecodeNode(seq uint64, b []byte) (Node, error) {
	h, raw, err := DecodeNodeHeader(b)
	if err != nil {
		return Node{}, err
	}
	if h.Same != 0 {
		// The store resolves references before anything decodes them.
		return Node{}, invalidf("stored node %d refers to node %d unresolved", seq, h.Same)
	}
	msg, ok := decodeStored(raw)
	if !ok {
		if msg, err = DecodeMessage(raw); err != nil {
			return Node{}, err
		}
	}
	return Node{Seq: seq, Parent: h.Parent, Depth: h.Depth, Tokens: h.Tokens, Users: h.Users, Msg: msg}, nil
}

// objectFields splits a JSON object into its members, in order.
func objectFields(raw json.RawMessage) []Field {
	var out []Field
	gjson.ParseBytes(raw).ForEach(func(k, v gjson.Result) bool {
		out = append(out, rawField(k.Str, v))
		return true
	})
	return out
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
