package record

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/wctoolkit/wc/pkg/session"
)

// A node's record holds its header first, in a fixed order, so that
// DecodeNodeHeader reads it without parsing the message:
//
//	{"parent":P,"n":DEPTH,"tok":TOKENS,"users":USERS,"msg":MESSAGE}
//	{"parent":P,"n":DEPTH,"tok":TOKENS,"users":USERS,"same":S}
//	{"parent":P,"n":DEPTH,"tok":TOKENS,"users":USERS,"chunks":"SUMS"}
//
// The second is a reference: the node repeats the message of node S of
// its session, which holds it (see EncodeNodeRef). The third holds a
// message too large for one value of the engine: SUMS are the hex sha256
// of its pieces, stored apart, in order (see EncodeNodeChunked). MESSAGE
// is what session.Message.AppendJSON writes, and DecodeNode reads only
// the first form.

// EncodeNode is the record of a node.
func EncodeNode(n *session.Node) []byte {
	dst := appendNodeHeader(nil, n)
	dst = append(dst, `,"msg":`...)
	dst = n.Msg.AppendJSON(dst)
	return append(dst, '}')
}

// EncodeNodeRef is the record of a node whose message is node same's
// (which must hold its own): the header, then "same" where the message
// would be. A path rewritten by a compaction keeps its tail this way, at
// the cost of a header per message instead of a copy of each.
func EncodeNodeRef(n *session.Node, same uint64) []byte {
	dst := appendNodeHeader(make([]byte, 0, 96), n)
	dst = append(dst, `,"same":`...)
	dst = strconv.AppendUint(dst, same, 10)
	return append(dst, '}')
}

func appendNodeHeader(dst []byte, n *session.Node) []byte {
	dst = append(dst, `{"parent":`...)
	dst = strconv.AppendUint(dst, n.Parent, 10)
	dst = append(dst, `,"n":`...)
	dst = strconv.AppendUint(dst, n.Depth, 10)
	dst = append(dst, `,"tok":`...)
	dst = strconv.AppendUint(dst, n.Tokens, 10)
	dst = append(dst, `,"users":`...)
	return strconv.AppendUint(dst, n.Users, 10)
}

// AppendResolvedNodeRef appends to dst the node a reference stands for: its
// header with the message of target, the record of the node it names.
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
		return nil, errMalformedNode
	}
	cut := bytes.LastIndex(ref, []byte(nodeRefKey))
	dst = append(append(append(dst, ref[:cut]...), `,"msg":`...), msg...)
	return append(dst, '}'), nil
}

// EncodeNodeChunked is the record of a node whose message (full, a node's
// record) is stored apart in pieces of at most size bytes: it returns the
// record naming them, and the pieces.
func EncodeNodeChunked(full []byte, size int) ([]byte, [][]byte, error) {
	_, msg, err := DecodeNodeHeader(full)
	if err != nil || msg == nil || size <= 0 {
		return nil, nil, errMalformedNode
	}
	cut := len(full) - len(msg) - 1 - len(`,"msg":`)
	var pieces [][]byte
	dst := append(append(make([]byte, 0, cut+16+(len(msg)/size+1)*64), full[:cut]...), nodeChunksKey...)
	for rest := msg; len(rest) > 0; {
		piece := rest[:min(size, len(rest))]
		rest = rest[len(piece):]
		sum := sha256.Sum256(piece)
		dst = hex.AppendEncode(dst, sum[:])
		pieces = append(pieces, piece)
	}
	return append(dst, `"}`...), pieces, nil
}

// IsChunked tells a node record of the third form at a glance: the
// others end with a message object's brace or a number.
func IsChunked(b []byte) bool { return len(b) >= 2 && b[len(b)-2] == '"' }

// NodeChunks returns the sums of the pieces of a node record of the third
// form, in order; ok is false for any other record.
func NodeChunks(b []byte) (sums [][32]byte, ok bool) {
	i := bytes.LastIndex(b, []byte(nodeChunksKey))
	if i < 0 || !bytes.HasSuffix(b, []byte(`"}`)) {
		return nil, false
	}
	hexSums := b[i+len(nodeChunksKey) : len(b)-2]
	if len(hexSums) == 0 || len(hexSums)%64 != 0 || bytes.IndexByte(hexSums, '"') >= 0 {
		return nil, false
	}
	sums = make([][32]byte, len(hexSums)/64)
	for k := range sums {
		if _, err := hex.Decode(sums[k][:], hexSums[64*k:64*k+64]); err != nil {
			return nil, false
		}
	}
	return sums, true
}

// AppendNodeFromChunks appends to dst the node record a chunked one
// stands for, its pieces joined in order: its header with the message.
func AppendNodeFromChunks(dst, chunked []byte, pieces [][]byte) ([]byte, error) {
	i := bytes.LastIndex(chunked, []byte(nodeChunksKey))
	if i < 0 {
		return nil, errMalformedNode
	}
	dst = append(append(dst, chunked[:i]...), `,"msg":`...)
	for _, p := range pieces {
		dst = append(dst, p...)
	}
	return append(dst, '}'), nil
}

var nodeHeaderKeys = [...]string{`{"parent":`, `,"n":`, `,"tok":`, `,"users":`, `,"msg":`}

const (
	nodeRefKey    = `,"same":`
	nodeChunksKey = `,"chunks":"`
)

var errMalformedNode = &session.InvalidError{Msg: "stored node is malformed"}

// DecodeNodeHeader reads a node record's totals and returns the raw JSON
// of its message, without decoding it. For a reference (EncodeNodeRef)
// the message is nil and h.Same names the node holding it; for a chunked
// record (EncodeNodeChunked) the message is nil and h.Same 0.
func DecodeNodeHeader(b []byte) (session.NodeHeader, []byte, error) {
	var h session.NodeHeader
	fields := [...]*uint64{&h.Parent, &h.Depth, &h.Tokens, &h.Users}
	rest := b
	for i, key := range nodeHeaderKeys {
		if i == len(fields) && bytes.HasPrefix(rest, []byte(nodeChunksKey)) {
			if _, ok := NodeChunks(rest); !ok {
				return h, nil, errMalformedNode
			}
			return h, nil, nil // the message is in its pieces
		}
		if i == len(fields) && bytes.HasPrefix(rest, []byte(nodeRefKey)) {
			same, tail, ok := parseUint(rest[len(nodeRefKey):])
			if !ok || same == 0 || string(tail) != "}" {
				return h, nil, errMalformedNode
			}
			h.Same = same
			return h, nil, nil
		}
		if !bytes.HasPrefix(rest, []byte(key)) {
			return h, nil, errMalformedNode
		}
		rest = rest[len(key):]
		if i == len(fields) {
			break
		}
		v, tail, ok := parseUint(rest)
		if !ok {
			return h, nil, errMalformedNode
		}
		*fields[i] = v
		rest = tail
	}
	if len(rest) < 2 || rest[len(rest)-1] != '}' {
		return h, nil, errMalformedNode
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

// DecodeNode reads a node record.
func DecodeNode(seq uint64, b []byte) (session.Node, error) {
	h, raw, err := DecodeNodeHeader(b)
	if err != nil {
		return session.Node{}, err
	}
	if h.Same != 0 {
		// The store resolves references before anything decodes them.
		return session.Node{}, &session.InvalidError{Msg: "stored node " + strconv.FormatUint(seq, 10) + " refers to node " + strconv.FormatUint(h.Same, 10) + " unresolved"}
	}
	msg, ok := decodeMessage(raw)
	if !ok {
		return session.Node{}, errMalformedNode
	}
	return session.Node{Seq: seq, Parent: h.Parent, Depth: h.Depth, Tokens: h.Tokens, Users: h.Users, Msg: msg}, nil
}
