package format

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"
)

// Detect names the format of data.
//
//   - One JSON document: an object with info and messages is an opencode
//     export; an object with messages and request fields (model,
//     max_tokens, system, tools, …) is an Anthropic body when it has a
//     top-level system or Anthropic blocks (or a claude model), otherwise an
//     OpenAI body; any other object with messages is a native share. A bare
//     array of messages is native unless its messages are of OpenAI shape
//     (tool_calls, developer or system roles, image_url parts, null
//     content) or Anthropic shape (tool_use, tool_result, thinking blocks);
//     native spellings (tooluse, toolresult, created_at) win. An array of
//     shares is native: sessions gathered by jq -s.
//   - Otherwise JSONL, decided by the first line that is a JSON object and
//     says what it is: Codex rollout lines (session_meta, response_item,
//     event_msg, turn_context, compacted, or a payload), Claude Code records
//     (a known record type), or native lines: messages (role), wc-export
//     --format jsonl nodes, or shares (messages), one session a line.
//
// Nothing recognisable is a *session.InvalidError.
func Detect(data []byte) (Kind, error) {
	data = bytes.TrimSpace(bytes.TrimPrefix(data, utf8BOM))
	if len(data) == 0 {
		return "", badInputf("empty input")
	}
	if gjson.ValidBytes(data) {
		doc := gjson.ParseBytes(data)
		if k, ok := detectDocument(doc); ok {
			return k, nil
		}
		// One document, perhaps pretty-printed: what it is, as a line.
		if k := detectLine(doc); k != "" {
			return k, nil
		}
		if what := unsupportedShape(doc); what != "" {
			return "", badInputf("this looks like %s, which wc cannot read", what)
		}
		if doc.IsObject() {
			return "", badInputf("unrecognised input: a JSON object (%s) that is not a known transcript format", memberList(doc))
		}
	}
	var kind Kind
	anyJSON := false
	forEachLine(data, func(line []byte) {
		if kind != "" || !gjson.ValidBytes(line) {
			return
		}
		anyJSON = true
		kind = detectLine(gjson.ParseBytes(line))
	})
	switch {
	case kind == KindClaude && isStreamJSON(data) && isCursorStream(data):
		return KindCursor, nil
	case kind != "":
		return kind, nil
	case !anyJSON:
		return "", badInputf("input is not json")
	}
	return "", badInputf("unrecognised input: not a known transcript format")
}

var requestFields = []string{
	"model", "max_tokens", "max_completion_tokens", "system", "tools", "tool_choice",
	"temperature", "top_p", "stream", "stop", "stop_sequences", "metadata",
}

var nativeShareFields = []string{
	"id", "title", "title_source", "branches", "system_prompt", "project_path",
	"created_at", "updated_at", "usage", "session",
}

func detectDocument(doc gjson.Result) (Kind, bool) {
	switch {
	case isGeminiRecord(doc):
		return KindGemini, true
	case doc.IsObject() && doc.Get("loglines").IsArray():
		return KindClaude, true // Claude Code on the web
	case doc.IsObject():
		msgs := doc.Get("messages")
		if !msgs.IsArray() {
			return "", false
		}
		if doc.Get("info").IsObject() {
			return KindOpencode, true
		}
		if hasAnyField(doc, requestFields) && !hasAnyField(doc, nativeShareFields[1:]) {
			sig := messageSignals(msgs)
			switch {
			case doc.Get("system").Exists(), sig.anthropic > 0 && sig.openai == 0:
				return KindAnthropic, true
			case sig.openai > 0 || sig.openaiWeak > 0:
				return KindOpenAI, true
			case strings.HasPrefix(doc.Get("model").Str, "claude"):
				return KindAnthropic, true
			}
			return KindOpenAI, true
		}
		if hasAnyField(doc, nativeShareFields) {
			return KindNative, true
		}
		return listKind(msgs), true
	case doc.IsArray():
		first := doc.Get("0")
		if isShare(first) {
			return KindNative, true // shares gathered by jq -s
		}
		if !first.IsObject() || !first.Get("role").Exists() {
			return "", false
		}
		return listKind(doc), true
	}
	return "", false
}

func hasAnyField(v gjson.Result, keys []string) bool {
	for _, k := range keys {
		if v.Get(gjson.Escape(k)).Exists() {
			return true
		}
	}
	return false
}

func listKind(msgs gjson.Result) Kind {
	sig := messageSignals(msgs)
	switch {
	case sig.native > 0:
		return KindNative
	case sig.anthropic > 0:
		return KindAnthropic
	case sig.openai > 0 || sig.openaiWeak > 0:
		return KindOpenAI
	}
	return KindNative
}

type signals struct{ native, anthropic, openai, openaiWeak int }

// messageSignals counts the marks of each dialect in a message list.
func messageSignals(msgs gjson.Result) signals {
	var s signals
	eachElem(msgs, func(m gjson.Result) bool {
		if !m.IsObject() {
			return true
		}
		switch m.Get("role").Str {
		case "developer", "function":
			s.openai++
		case "system", "tool":
			s.openaiWeak++
		}
		if m.Get("tool_calls").Exists() || m.Get("function_call").Exists() || m.Get("refusal").Exists() {
			s.openai++
		}
		if m.Get("created_at").Exists() || m.Get("kind").Exists() {
			s.native++
		}
		c := m.Get("content")
		if c.Type == gjson.Null && c.Exists() {
			s.openai++
		}
		eachElem(c, func(b gjson.Result) bool {
			switch b.Get("type").Str {
			case "tooluse", "toolresult":
				s.native++
			case "tool_use", "tool_result", "document", "server_tool_use", "web_search_tool_result":
				s.anthropic++
			case "thinking":
				if b.Get("thinking").Exists() {
					s.anthropic++
				} else if b.Get("text").Exists() {
					s.native++
				}
			case "image_url", "input_audio", "file":
				s.openai++
			}
			if b.Get("cache_control").Exists() {
				s.anthropic++
			}
			return true
		})
		return true
	})
	return s
}

var claudeTypes = map[string]bool{
	"user": true, "assistant": true, "system": true, "progress": true, "summary": true,
	"file-history-snapshot": true, "queue-operation": true, "custom-title": true, "ai-title": true,
	"agent-name": true, "permission-mode": true, "attribution-snapshot": true, "cost-state": true,
	"mode": true, "attachment": true,
}

var codexTypes = map[string]bool{
	"session_meta": true, "response_item": true, "event_msg": true, "turn_context": true, "compacted": true,
}

func detectLine(v gjson.Result) Kind {
	if !v.IsObject() {
		return ""
	}
	t := v.Get("type")
	switch {
	case isGeminiRecord(v), v.Get("$set").IsObject(), v.Get("$rewindTo").Type == gjson.String:
		return KindGemini
	case t.Str == "init" && v.Get("session_id").Exists() && !v.Get("subtype").Exists():
		return KindGemini // gemini --output-format stream-json
	case strings.HasPrefix(t.Str, "thread.") || strings.HasPrefix(t.Str, "turn.") || strings.HasPrefix(t.Str, "item."):
		return KindCodex // codex exec --json
	case (t.Str == "thinking" || t.Str == "tool_call") && v.Get("session_id").Exists():
		return KindCursor
	}
	if t.Type == gjson.String && codexTypes[t.Str] {
		return KindCodex
	}
	if t.Type == gjson.String && v.Get("payload").IsObject() {
		return KindCodex
	}
	if t.Type == gjson.String && claudeTypes[t.Str] && !v.Get("role").Exists() {
		return KindClaude
	}
	if v.Get("role").Exists() || v.Get("message").IsObject() || isShare(v) { // messages, wc-export jsonl nodes or json shares
		return KindNative
	}
	return ""
}

// unsupportedShape names the known outputs that hold no transcript: the
// final answer alone.
func unsupportedShape(doc gjson.Result) string {
	switch {
	case doc.IsObject() && doc.Get("type").Str == "result" && doc.Get("session_id").Exists():
		return "the output of claude -p --output-format json (the final reply only, no transcript)"
	case doc.IsObject() && doc.Get("response").Exists() && doc.Get("stats").IsObject():
		return "the output of gemini --output-format json (the final reply only, no transcript)"
	}
	return ""
}

// memberList names up to five of an object's members.
func memberList(doc gjson.Result) string {
	var keys []string
	doc.ForEach(func(k, _ gjson.Result) bool {
		keys = append(keys, k.Str)
		return len(keys) < 6
	})
	if len(keys) == 0 {
		return "no members"
	}
	if len(keys) > 5 {
		return "members " + strings.Join(keys[:5], ", ") + ", …"
	}
	return "members " + strings.Join(keys, ", ")
}

// isCursorStream tells cursor-agent's stream-json from Claude Code's by
// what only cursor-agent writes: timestamp_ms, thinking and tool_call lines.
func isCursorStream(data []byte) bool {
	return bytes.Contains(data, []byte(`"timestamp_ms"`)) || bytes.Contains(data, []byte(`"type":"tool_call"`)) ||
		bytes.Contains(data, []byte(`"type":"thinking"`))
}
