package session

import (
	"strconv"

	"github.com/tidwall/gjson"
)

// What whycodes' serde types (crates/core/src/types.rs) can load of a
// message's content. Content is an untagged enum and blocks an internally
// tagged one, so serde_json reads all of it strictly: a block type it does
// not have, a field of the wrong type, a number past f64, or JSON nested
// past its recursion limit fails the whole session. A share therefore
// carries, in "content", the part of the content whycodes loads and, in
// "wc_content" (a member serde ignores, and reads without those limits),
// the content as wc stores it; DecodeMessage prefers wc_content.

// whycodesMaxDepth is serde_json's recursion limit: it counts every array
// and object it parses strictly, from the share's root, and refuses the
// 128th level.
const whycodesMaxDepth = 127

// whycodesBlockDepth is the level of a block in a share: in the messages of
// a branch, session > branches > branch > messages > message > content >
// block (one less in the active path; the deeper bound serves both).
const whycodesBlockDepth = 7

// whycodesView returns the content whycodes loads, and whether it differs
// from c: blocks of types whycodes does not have and images whose source it
// does not know are left out, a tool result's block list becomes its text,
// block members whycodes cannot parse are left out, and a tool input it
// cannot parse becomes the input's JSON text as a string.
func (c *Content) whycodesView() (Content, bool) {
	if !c.IsBlocks {
		return *c, false
	}
	var out []Block
	changed := false
	for i := range c.Blocks {
		b, keep, same := c.Blocks[i].whycodesView()
		changed = changed || !same
		if keep {
			if out == nil {
				out = make([]Block, 0, len(c.Blocks))
			}
			out = append(out, b)
		}
	}
	if !changed {
		return *c, false
	}
	if out == nil {
		out = []Block{}
	}
	return Content{Blocks: out, IsBlocks: true}, true
}

func (b *Block) whycodesView() (view Block, keep, same bool) {
	if b.Raw != nil {
		return Block{}, false, false
	}
	view, same = *b, true
	switch b.Type {
	case BlockImage:
		if !whycodesImageSource(b.Source) {
			return Block{}, false, false
		}
	case BlockToolUse:
		if b.Input != nil && !whycodesValue(b.Input, whycodesBlockDepth+1) {
			view.Input, same = appendString(nil, string(b.Input)), false
		}
	case BlockToolResult:
		if b.ResultRaw != nil {
			view.Result, view.ResultRaw, same = b.ResultText(), nil, false
		}
	}
	for i, f := range b.Extra {
		if !whycodesValue(f.Value, whycodesBlockDepth+1) {
			view.Extra, same = whycodesFields(b.Extra[i:], view.Extra[:i:i]), false
			break
		}
	}
	return view, true, same
}

// whycodesFields appends to kept the fields whycodes can parse.
func whycodesFields(fields, kept []Field) []Field {
	for _, f := range fields {
		if whycodesValue(f.Value, whycodesBlockDepth+1) {
			kept = append(kept, f)
		}
	}
	return kept
}

// whycodesImageSource reports a source serde reads as whycodes' ImageSource:
// {"type":"base64","media_type","data"} or {"type":"url","url"}, each
// member once and a string.
func whycodesImageSource(src []byte) bool {
	v := gjson.ParseBytes(src)
	if !v.IsObject() || !whycodesValue(src, whycodesBlockDepth+1) {
		return false
	}
	counts := map[string]int{}
	strs := map[string]bool{}
	v.ForEach(func(k, val gjson.Result) bool {
		counts[k.Str]++
		strs[k.Str] = val.Type == gjson.String
		return true
	})
	want := []string{"type"}
	switch v.Get("type").Str {
	case "base64":
		want = append(want, "media_type", "data")
	case "url":
		want = append(want, "url")
	default:
		return false
	}
	for _, k := range want {
		if counts[k] != 1 || !strs[k] {
			return false
		}
	}
	return true
}

// whycodesValue reports whether serde_json parses the JSON raw, found at
// nesting level depth (its first array or object is level depth), into a
// Value: no level past whycodesMaxDepth and no number past f64's range.
// Lone surrogates, which it refuses too, never get past CompactRaw.
func whycodesValue(raw []byte, depth int) bool {
	level := depth - 1
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		case c == '[' || c == '{':
			if level++; level > whycodesMaxDepth {
				return false
			}
		case c == ']' || c == '}':
			level--
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(raw) && (raw[j] >= '0' && raw[j] <= '9' || raw[j] == '.' || raw[j] == 'e' || raw[j] == 'E' || raw[j] == '+' || raw[j] == '-') {
				j++
			}
			// Past the range ParseFloat gives an infinity, below it zero,
			// which serde_json reads as zero too.
			if f, err := strconv.ParseFloat(string(raw[i:j]), 64); err != nil && f != 0 {
				return false
			}
			i = j - 1
		}
	}
	return true
}
