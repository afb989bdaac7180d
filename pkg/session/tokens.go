package session

import (
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
// taking runs of ASCII eight bytes at a time: estimates and caps count
// every character of every message, and transcripts are mostly ASCII.
func runeCount(s string) int {
	n := 0
	for i := 0; i < len(s); {
		for i+8 <= len(s) {
			w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if w&0x8080808080808080 != 0 {
				break
			}
			i += 8
			n += 8
		}
		if i >= len(s) {
			break
		}
		if s[i] < utf8.RuneSelf {
			i++
		} else {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
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
