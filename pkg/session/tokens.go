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
	if s == "" {
		return 0
	}
	n := len(s)
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			n = utf8.RuneCountInString(s)
			break
		}
	}
	return uint64(n+3) / 4
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
