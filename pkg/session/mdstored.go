package session

import (
	"bytes"
)

// StoredNode writes the message of a stored node (a value EncodeNode wrote),
// exactly as Message writes what DecodeNode reads from it. A message in the
// forms AppendJSON writes for the common cases is written straight from its
// JSON, its text unescaped into the page: building the Message (allocating
// its strings) and scanning its text once more for control characters were
// most of the cost of a long export. Any other is decoded and written by
// Message. A malformed node is an *InvalidError, as from DecodeNode.
func (mw *MarkdownWriter) StoredNode(seq uint64, raw []byte) error {
	_, msg, err := DecodeNodeHeader(raw)
	if err != nil {
		return err
	}
	if ok, err := mw.storedMessage(msg); ok || err != nil {
		return err
	}
	n, err := DecodeNode(seq, raw)
	if err != nil {
		return err
	}
	return mw.Message(&n.Msg)
}

// storedMessage writes raw and reports true, or writes nothing and reports
// false. It takes only what decodeStored takes too, and nothing whose
// rendering depends on a member that comes after the content: a tool
// message marked is_error, or a note or summary, is left to Message.
func (mw *MarkdownWriter) storedMessage(raw []byte) (bool, error) {
	r := storedPage{storedScanner: storedScanner{b: raw, buf: mw.text}, out: mw.buf[:0]}
	ok := r.message()
	mw.text = r.buf[:0]
	if !ok {
		mw.buf = r.out[:0]
		return false, nil
	}
	// A control character comes from an escape other than \n, \t, \" or
	// \\ (raw ones are not JSON), or is DEL or C1, which IndexByte finds.
	if r.rareEscape || bytes.IndexByte(r.out, 0x7f) >= 0 || bytes.IndexByte(r.out, 0xc2) >= 0 {
		return true, mw.flush(r.out)
	}
	mw.buf = r.out[:0]
	if mw.err == nil {
		_, mw.err = mw.w.Write(r.out)
	}
	return true, mw.err
}

// storedPage renders the JSON it scans into out.
type storedPage struct {
	storedScanner
	out  []byte
	tool bool // a tool message: its text is output, fenced as a result
}

var roleLabels = [...]struct{ json, label string }{
	{`"user"`, "User"}, {`"assistant"`, "Assistant"}, {`"system"`, "System"}, {`"tool"`, "Tool"},
}

func (r *storedPage) message() bool {
	if !r.byte('{') || !r.plainKey("role") {
		return false
	}
	label := ""
	for _, rl := range roleLabels {
		if r.literal(rl.json) {
			label = rl.label
			break
		}
	}
	if label == "" || !r.byte(',') || !r.plainKey("content") {
		return false
	}
	r.tool = label == "Tool"
	r.out = append(append(append(r.out, "### "...), label...), "\n\n"...)
	if !r.content() {
		return false
	}
	// The other members, read by decodeStored's rules.
	seen := memberRole | memberContent
	var extras [8][]byte
	nextras := 0
	for {
		if r.byte('}') {
			return r.pos == len(r.b)
		}
		if !r.byte(',') {
			return false
		}
		k, ok := r.anyPlainKey()
		if !ok {
			return false
		}
		bit := messageMembers[string(k)]
		if bit == 0 {
			for _, e := range extras[:nextras] {
				if bytes.Equal(e, k) {
					return false
				}
			}
			if nextras == len(extras) {
				return false
			}
			extras[nextras] = k
			nextras++
		} else if seen&bit != 0 {
			return false
		}
		seen |= bit
		switch bit {
		case memberToolCallID, memberName:
			if _, ok := r.text(); !ok {
				return false
			}
		case memberCreatedAt:
			t, ok := r.text()
			if !ok {
				return false
			}
			if !ValidTime(string(t)) {
				return false
			}
		case memberIsError:
			isError, ok := r.boolean()
			if !ok || isError && r.tool {
				return false
			}
		case memberKind: // a marker changes the heading
			v, ok := r.value()
			if !ok {
				return false
			}
			if v[0] == '"' {
				sub := storedScanner{b: v}
				k, ok := sub.text()
				if !ok || Kind(k) == KindNote || Kind(k) == KindSummary || Kind(k) == KindRewind {
					return false
				}
			}
		case 0: // kept as data
			if _, ok := r.value(); !ok {
				return false
			}
		default: // tool_calls, wc_content
			return false
		}
	}
}

// plainKey reads the member name want, which has no escapes, and its colon.
func (r *storedPage) plainKey(want string) bool {
	k, ok := r.anyPlainKey()
	return ok && string(k) == want
}

// anyPlainKey reads a member name without escapes, and its colon.
func (r *storedPage) anyPlainKey() ([]byte, bool) {
	if !r.byte('"') {
		return nil, false
	}
	start := r.pos
	end := start + nextSpecial(r.b[start:])
	if end >= len(r.b) || r.b[end] != '"' {
		return nil, false
	}
	r.pos = end + 1
	return r.b[start:end], r.byte(':')
}

func (r *storedPage) content() bool {
	if r.peek('"') {
		start := len(r.out)
		var ok bool
		if r.tool {
			r.out, ok = r.appendStr(beginFence(r.out, "result"))
			r.out = endFence(r.out, start, "result", "result")
		} else {
			r.out, ok = r.appendStr(r.out)
			r.out = endMarkdownText(r.out, start)
		}
		return ok
	}
	if !r.byte('[') {
		return false
	}
	if r.byte(']') {
		return true
	}
	for {
		if !r.block() {
			return false
		}
		if r.byte(']') {
			return true
		}
		if !r.byte(',') {
			return false
		}
	}
}

// Block kinds storedPage writes.
const (
	pageText = iota
	pageThinking
	pageToolUse
	pageToolResult
	pageImage
	pageRedacted
)

var pageBlocks = [...]struct {
	json    string
	members map[string]bool
}{
	pageText:       {`"text"`, blockFields[BlockText]},
	pageThinking:   {`"thinking"`, blockFields[BlockThinking]},
	pageToolUse:    {`"tooluse"`, blockFields[BlockToolUse]},
	pageToolResult: {`"toolresult"`, blockFields[BlockToolResult]},
	pageImage:      {`"image"`, blockFields[BlockImage]},
	pageRedacted:   {`"redacted_thinking"`, blockFields[BlockRedactedThinking]},
}

// block writes one block whose type comes first, as AppendJSON writes it,
// as appendMarkdownBlock would.
func (r *storedPage) block() bool {
	if !r.byte('{') || !r.plainKey("type") {
		return false
	}
	kind := -1
	for i, pb := range pageBlocks {
		if r.literal(pb.json) {
			kind = i
			break
		}
	}
	if kind < 0 {
		return false // unknown and foreign types are rare: Message writes them
	}
	start := len(r.out)
	info := ""
	switch {
	case kind == pageText && r.tool:
		info = "result"
	case kind == pageThinking:
		info = "thinking"
	case kind == pageToolUse:
		info = "tool"
	case kind == pageToolResult:
		info = "result"
	}
	if info != "" {
		r.out = beginFence(r.out, info)
	}
	isError := false
	var seen uint16
	var extras [8][]byte
	nextras := 0
	for !r.byte('}') {
		if !r.byte(',') {
			return false
		}
		k, ok := r.anyPlainKey()
		if !ok {
			return false
		}
		if !pageBlocks[kind].members[string(k)] {
			if string(k) == "type" || string(k) == "thinking" && kind == pageThinking || nextras == len(extras) {
				return false
			}
			for _, e := range extras[:nextras] {
				if bytes.Equal(e, k) {
					return false
				}
			}
			extras[nextras] = k
			nextras++
			if _, ok := r.value(); !ok {
				return false
			}
			continue
		}
		bit := blockMembers[string(k)]
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		null := r.literal("null")
		switch {
		case bit == fieldInput: // after the name
			if seen&fieldName == 0 {
				return false
			}
			v := []byte("null")
			if !null {
				if v, ok = r.value(); !ok {
					return false
				}
			}
			r.out = appendPrettyJSON(append(r.out, '\n'), v)
		case bit == fieldSource:
			if !null {
				if _, ok := r.value(); !ok {
					return false
				}
			}
		case bit == fieldIsError:
			if !null {
				if isError, ok = r.boolean(); !ok {
					return false
				}
			}
		case null:
		case bit == fieldText || bit == fieldName || bit == fieldContent: // the body
			if !r.peek('"') {
				return false
			}
			if r.out, ok = r.appendStr(r.out); !ok {
				return false
			}
		default: // signature, data, id, tool_use_id
			if _, ok := r.text(); !ok {
				return false
			}
		}
	}
	switch kind {
	case pageText:
		if !r.tool {
			r.out = endMarkdownText(r.out, start)
			return true
		}
	case pageToolUse:
		if seen&fieldInput == 0 { // no input: {}
			if seen&fieldName == 0 {
				return false
			}
			r.out = append(r.out, "\n{}"...)
		}
	case pageImage:
		r.out = append(r.out, "*[image]*\n\n"...)
		return true
	case pageRedacted:
		r.out = append(r.out, "*[redacted thinking]*\n\n"...)
		return true
	}
	final := info
	if isError {
		final = "error"
	}
	r.out = endFence(r.out, start, info, final)
	return true
}
