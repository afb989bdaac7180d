package session

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
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
// Text within the cap, by bytes or by chars, is returned unchanged. Text
// that already ends in the notice is judged by what precedes it, and a
// further cut adds to the count, so capping again changes nothing (whycodes
// re-cut its own notice on every pass).
func CapToolText(text string, max int) (string, bool) {
	out, cut, _ := capToolText(text, max)
	return out, cut
}

// capToolText is CapToolText, which also tells whether a cut leaves fewer
// chars than text had.
func capToolText(text string, max int) (out string, cut, shorter bool) {
	head, omitted := splitTruncationNotice(text)
	if len(head) <= max {
		return text, false, false
	}
	n := runeCount(head)
	if n <= max {
		return text, false, false
	}
	notice := truncationNotice(omitted + n - max)
	// Both notices are ASCII: their chars are their bytes.
	shorter = max+len(notice) < n+len(text)-len(head)
	return head[:runeOffset(head, max)] + notice, true, shorter
}

const (
	noticePrefix = "\n\n[... "
	noticeSuffix = " characters truncated for context management]"
)

func truncationNotice(omitted int) string {
	return noticePrefix + strconv.Itoa(omitted) + noticeSuffix
}

// splitTruncationNotice separates a trailing notice from the text before it.
func splitTruncationNotice(text string) (string, int) {
	rest, ok := strings.CutSuffix(text, noticeSuffix)
	if !ok {
		return text, 0
	}
	i := strings.LastIndex(rest, noticePrefix)
	if i < 0 {
		return text, 0
	}
	n, err := strconv.Atoi(rest[i+len(noticePrefix):])
	if err != nil || n <= 0 {
		return text, 0
	}
	return rest[:i], n
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

// editResultParts applies edit to the text parts of a toolresult whose
// content is a provider block list (a string part, or a part of type text),
// as the cap passes do to text blocks: a tool's output is no less capped,
// pruned or spilled for coming as a list. raw is replaced, never written
// through, when a part changed; it returns how many parts edit changed.
func editResultParts(raw *json.RawMessage, edit func(text *string) int) int {
	v := gjson.ParseBytes(*raw)
	if !v.IsArray() {
		return 0
	}
	changed := 0
	out := make([]byte, 0, len(*raw))
	out = append(out, '[')
	v.ForEach(func(_, part gjson.Result) bool {
		if len(out) > 1 {
			out = append(out, ',')
		}
		switch {
		case part.Type == gjson.String:
			text := part.Str
			if edit(&text) > 0 {
				changed++
				out = appendString(out, text)
				return true
			}
		case part.IsObject() && part.Get("type").Str == BlockText:
			t := gjson.Get(part.Raw, "text") // Index is then within part.Raw
			if t.Type == gjson.String && t.Index > 0 && part.Raw[t.Index:t.Index+len(t.Raw)] == t.Raw {
				text := t.Str
				if edit(&text) > 0 {
					changed++
					out = append(out, part.Raw[:t.Index]...)
					out = appendString(out, text)
					out = append(out, part.Raw[t.Index+len(t.Raw):]...)
					return true
				}
			}
		}
		out = append(out, part.Raw...)
		return true
	})
	if changed > 0 {
		*raw = append(out, ']')
	}
	return changed
}
