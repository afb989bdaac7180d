package session

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Caps on tool output, in Unicode scalar values.
const (
	ToolResultMaxChars   = 32_768
	ToolResultPruneChars = 2_048
	ToolResultShakeChars = 512
)

// ImagePayloadMarkers open an image a tool returns inline: the marker, the
// media type, a newline, then base64. Both spellings whycodes used are read.
var ImagePayloadMarkers = []string{"WHYCODES_IMAGE_B64:", "WHYCODE_IMAGE_B64:"}

// CapToolText keeps the first max chars of text and says how many were cut.
// Text within the cap, by bytes or by chars, is returned unchanged.
func CapToolText(text string, max int) (string, bool) {
	if len(text) <= max {
		return text, false
	}
	n := utf8.RuneCountInString(text)
	if n <= max {
		return text, false
	}
	cut := 0
	for i := range text {
		if cut == max {
			cut = i
			break
		}
		cut++
	}
	return text[:cut] + "\n\n[... " + strconv.Itoa(n-max) + " characters truncated for context management]", true
}

// ToolResultContent is how a tool's output is stored: an inline image payload
// becomes a preface and an image block; anything else is capped text.
func ToolResultContent(content string) (Content, bool) {
	if c, ok := imagePayload(content); ok {
		return c, false
	}
	text, capped := CapToolText(content, ToolResultMaxChars)
	return TextContent(text), capped
}

func imagePayload(content string) (Content, bool) {
	for _, mark := range ImagePayloadMarkers {
		i := strings.Index(content, mark)
		if i < 0 {
			continue
		}
		rest := content[i+len(mark):]
		nl := strings.IndexByte(rest, '\n')
		if nl < 0 {
			return Content{}, false
		}
		media, data := strings.TrimSpace(rest[:nl]), strings.TrimSpace(rest[nl+1:])
		if media == "" || data == "" {
			return Content{}, false
		}
		preface := strings.TrimSpace(content[:i])
		if preface == "" {
			preface = "[image " + media + "]"
		}
		src := appendString([]byte(`{"type":"base64","media_type":`), media)
		src = appendString(append(src, `,"data":`...), data)
		src = append(src, '}')
		return BlockContent(Block{Type: BlockText, Text: preface}, Block{Type: BlockImage, Source: src}), true
	}
	return Content{}, false
}
