package session

import (
	"math/bits"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// ImageTokens is whycodes' flat estimate for an image.
const ImageTokens = 100

// EstimateTokens is whycodes' chars/4 estimate: ceil(n/4), where n is the
// byte length of ASCII text and the char count of anything else.
func EstimateTokens(s string) uint64 {
	return uint64(runeCount(s)+3) / 4
}

// runeCount is utf8.RuneCountInString (an invalid byte counts as one),
// taking ASCII eight bytes at a time: estimates and caps count every
// character of every message, and transcripts are mostly ASCII.
func runeCount(s string) int {
	n := 0
	i := 0
	for i+8 <= len(s) {
		w := s[i : i+8] // one load: the length is known
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		high := x & 0x8080808080808080
		if high == 0 {
			i += 8
			n += 8
			continue
		}
		// The bytes before the first non-ASCII one are ASCII; then runes
		// one at a time while they are not.
		k := bits.TrailingZeros64(high) / 8
		i += k
		n += k
		rest := s[i:]
		i = len(s)
		for j, r := range rest {
			if r < utf8.RuneSelf {
				i = len(s) - len(rest) + j
				break
			}
			n++
		}
	}
	for range s[i:] {
		n++
	}
	return n
}

// MessageTokens is the estimate of one message.
func MessageTokens(m *Message) uint64 {
	if !m.Content.IsBlocks {
		return EstimateTokens(m.Content.Text)
	}
	var t uint64
	for i := range m.Content.Blocks {
		t += BlockTokens(&m.Content.Blocks[i])
	}
	return t
}

// BlockTokens is the estimate of one block. Unknown block types count their
// text fields, so that provider-native blocks are not free.
func BlockTokens(b *Block) uint64 {
	switch b.Type {
	case BlockText:
		return EstimateTokens(b.Text)
	case BlockToolResult:
		return EstimateTokens(b.ResultText())
	case BlockToolUse:
		input := string(b.Input)
		if input == "" {
			input = "{}"
		}
		return EstimateTokens(b.Name) + EstimateTokens(input)
	case BlockImage:
		return ImageTokens
	case BlockThinking:
		return EstimateTokens(b.Text) + EstimateTokens(b.Signature)
	case BlockRedactedThinking:
		return EstimateTokens(b.Data)
	}
	if b.Raw != nil {
		var t uint64
		gjson.ParseBytes(b.Raw).ForEach(func(k, v gjson.Result) bool {
			if k.Str != "type" && v.Type == gjson.String {
				t += EstimateTokens(v.Str)
			}
			return true
		})
		return t
	}
	return 0
}
