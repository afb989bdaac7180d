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
}

// NodeHeader is a node without its message.
type NodeHeader struct {
	Parent, Depth, Tokens, Users uint64
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
	dst := make([]byte, 0, 64+messageSizeHint(&n.Msg))
	dst = append(dst, `{"parent":`...)
	dst = appendUint(dst, n.Parent)
	dst = append(dst, `,"n":`...)
	dst = appendUint(dst, n.Depth)
	dst = append(dst, `,"tok":`...)
	dst = appendUint(dst, n.Tokens)
	dst = append(dst, `,"users":`...)
	dst = appendUint(dst, n.Users)
	dst = append(dst, `,"msg":`...)
	dst = n.Msg.AppendJSON(dst)
	return append(dst, '}')
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

// DecodeNodeHeader reads a stored node's totals and returns the raw JSON of
// its message, without decoding it.
func DecodeNodeHeader(b []byte) (NodeHeader, []byte, error) {
	var h NodeHeader
	fields := [...]*uint64{&h.Parent, &h.Depth, &h.Tokens, &h.Users}
	rest := b
	for i, key := range nodeHeaderKeys {
		if !bytes.HasPrefix(rest, []byte(key)) {
			return h, nil, invalidf("stored node is malformed")
		}
		rest = rest[len(key):]
		if i == len(fields) {
			break
		}
		end := 0
		for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
			end++
		}
		v, err := strconv.ParseUint(string(rest[:end]), 10, 64)
		if err != nil {
			return h, nil, invalidf("stored node is malformed")
		}
		*fields[i] = v
		rest = rest[end:]
	}
	if len(rest) < 2 || rest[len(rest)-1] != '}' {
		return h, nil, invalidf("stored node is malformed")
	}
	return h, rest[:len(rest)-1], nil
}

// DecodeNode reads a stored node.
func DecodeNode(seq uint64, b []byte) (Node, error) {
	h, raw, err := DecodeNodeHeader(b)
	if err != nil {
		return Node{}, err
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
