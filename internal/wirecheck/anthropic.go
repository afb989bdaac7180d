package wirecheck

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// The Messages API's structural rules for a request body, each from
// Anthropic's documentation or the API's own error text:
//
//   - the system prompt is the top-level "system" (a string or text
//     blocks); a message's role is "user" or "assistant" (Messages API
//     reference);
//   - roles alternate, starting with "user" (Messages API reference, "Our
//     models are trained to operate on alternating user and assistant
//     conversational turns");
//   - every message has non-empty content ("all messages must have
//     non-empty content except for the optional final assistant message");
//     a final assistant message is a prefill, which newer models refuse
//     ("This model does not support assistant message prefill") and which
//     must not end in whitespace ("final assistant content cannot end with
//     trailing whitespace") nor with a thinking block (whycodes'
//     strip_trailing_thinking);
//   - no text block is empty or whitespace only ("text content blocks must
//     contain non-whitespace text");
//   - each tool_use is answered by a tool_result with its id in the next
//     message, whose tool_result blocks come first ("Tool result blocks must
//     immediately follow their corresponding tool use blocks", "the
//     tool_result blocks must come FIRST in the content array", Handle tool
//     calls); a tool_result answers a tool_use of the message before it
//     ("unexpected tool_use_id found in tool_result blocks");
//   - tool_use ids match ^[a-zA-Z0-9_-]+$ and are unique in the body
//     ("String should match pattern", "tool_use ids must be unique");
//     tool_use.input is an object; a server_tool_use's id matches
//     ^srvtoolu_[a-zA-Z0-9_]+$ and its result follows it in its message;
//   - a tool_result's content is a string or text, image and document
//     blocks (Handle tool calls);
//   - thinking blocks carry their signature, redacted_thinking its data
//     (ThinkingBlockParam: type, thinking, signature required);
//   - an image's source is base64 of image/jpeg, image/png, image/gif or
//     image/webp, or a url (Vision); a document's is base64 PDF, plain
//     text or a url (PDF support);
//   - a block has only the members its type declares ("Extra inputs are
//     not permitted").

// AnthropicOptions loosen CheckAnthropic where the caller asked for it.
type AnthropicOptions struct {
	Prefill bool // a final assistant message is allowed (wc-export --prefill)
}

var (
	toolUseID    = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	serverToolID = regexp.MustCompile(`^srvtoolu_[a-zA-Z0-9_]+$`)
	toolName     = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)
)

var anthropicMembers = map[string][]string{
	"text":              {"type", "text", "cache_control", "citations"},
	"image":             {"type", "source", "cache_control"},
	"document":          {"type", "source", "title", "context", "citations", "cache_control"},
	"tool_use":          {"type", "id", "name", "input", "cache_control"},
	"tool_result":       {"type", "tool_use_id", "content", "is_error", "cache_control"},
	"thinking":          {"type", "thinking", "signature"},
	"redacted_thinking": {"type", "data"},
}

// anthropicServerResults are the result blocks of Anthropic's server tools.
var anthropicServerResults = map[string]bool{
	"web_search_tool_result": true, "web_fetch_tool_result": true, "code_execution_tool_result": true,
	"bash_code_execution_tool_result": true, "text_editor_code_execution_tool_result": true,
	"tool_search_tool_result": true,
}

// CheckAnthropic returns every rule body breaks.
func CheckAnthropic(body []byte, opt AnthropicOptions) error {
	c, root, err := newChecker(body)
	if err != nil {
		return err
	}
	if mt := root.get("max_tokens"); mt == nil || mt.kind != '0' || strings.ContainsAny(mt.num, ".eE-") || mt.num == "0" {
		c.fail("max_tokens: a positive integer is required")
	}
	if sys := root.get("system"); sys != nil {
		switch {
		case sys.isString():
		case sys.kind == 'a':
			for i, b := range sys.items {
				c.textBlock(fmt.Sprintf("system.%d", i), b)
			}
		default:
			c.fail("system: must be a string or text blocks, not %s", sys.describe())
		}
	}
	if tools := root.get("tools"); tools != nil {
		c.anthropicTools(tools)
	}
	msgs := root.get("messages")
	if msgs == nil || msgs.kind != 'a' || len(msgs.items) == 0 {
		c.fail("messages: a non-empty array is required")
		return c.err()
	}
	ids := map[string]bool{}
	var open []string // the previous assistant message's tool_use ids
	for i, m := range msgs.items {
		where := fmt.Sprintf("messages.%d", i)
		if m.kind != 'o' {
			c.fail("%s: not an object", where)
			continue
		}
		role := m.get("role")
		switch {
		case !role.isString() || role.s() != "user" && role.s() != "assistant":
			c.fail("%s.role: must be user or assistant, not %s", where, role.describe())
			continue
		case i == 0 && role.s() != "user":
			c.fail("%s: the first message must be the user's", where)
		case i > 0 && role.s() == msgs.items[i-1].get("role").s():
			c.fail("%s: two %s messages in a row (roles must alternate)", where, role.s())
		}
		for _, mm := range m.members {
			if mm.key != "role" && mm.key != "content" {
				c.fail("%s.%s: not a message member", where, mm.key)
			}
		}
		last := i == len(msgs.items)-1
		if last && role.s() == "assistant" && !opt.Prefill {
			c.fail("%s: the body ends with an assistant message, a prefill", where)
		}
		blocks := c.contentBlocks(where, m.get("content"), last && role.s() == "assistant")
		if role.s() == "user" {
			open = c.answers(where, blocks, open)
			continue
		}
		if len(open) > 0 {
			c.fail("%s: tool_use ids %v have no tool_result in the next message", where, open)
		}
		open = c.assistantBlocks(where, blocks, ids)
		if n := len(blocks); last && opt.Prefill && n > 0 {
			switch b := blocks[n-1]; b.get("type").s() {
			case "text":
				if t := b.get("text").s(); strings.TrimRight(t, " \t\r\n") != t {
					c.fail("%s: final assistant content cannot end with trailing whitespace", where)
				}
			case "thinking", "redacted_thinking":
				c.fail("%s: a final assistant message cannot end with a thinking block", where)
			}
		}
	}
	if len(open) > 0 {
		c.fail("messages: tool_use ids %v are never answered", open)
	}
	return c.err()
}

type checker struct{ errs []error }

// newChecker parses a body, which must be an object naming a model.
func newChecker(body []byte) (*checker, *node, error) {
	root, err := parseJSON(body)
	if err != nil {
		return nil, nil, fmt.Errorf("not JSON: %v", err)
	}
	if root.kind != 'o' {
		return nil, nil, errors.New("the body is not an object")
	}
	c := &checker{}
	if !root.get("model").isString() || root.get("model").s() == "" {
		c.fail("model: a model name is required")
	}
	return c, root, nil
}

func (c *checker) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

func (c *checker) err() error { return errors.Join(c.errs...) }

// contentBlocks checks a message's content and returns its blocks (a
// string is one text block).
func (c *checker) contentBlocks(where string, content *node, finalAssistant bool) []*node {
	switch {
	case content.isString():
		if strings.TrimSpace(content.str) == "" && !finalAssistant {
			c.fail("%s.content: empty or whitespace-only text", where)
		}
		return []*node{{kind: 'o', members: []member{{key: "type", val: &node{kind: 's', str: "text"}}, {key: "text", val: content}}}}
	case content != nil && content.kind == 'a':
		if len(content.items) == 0 && !finalAssistant {
			c.fail("%s.content: all messages must have non-empty content", where)
		}
		return content.items
	}
	c.fail("%s.content: must be a string or an array of blocks, not %s", where, content.describe())
	return nil
}

func (c *checker) members(where string, b *node, allowed []string) {
	for _, m := range b.members {
		ok := false
		for _, a := range allowed {
			ok = ok || a == m.key
		}
		if !ok {
			c.fail("%s.%s: Extra inputs are not permitted", where, m.key)
		}
	}
}

func (c *checker) textBlock(where string, b *node) {
	if b.kind != 'o' || b.get("type").s() != "text" {
		c.fail("%s: not a text block", where)
		return
	}
	c.members(where, b, anthropicMembers["text"])
	if t := b.get("text"); !t.isString() || strings.TrimSpace(t.s()) == "" {
		c.fail("%s: text content blocks must contain non-whitespace text", where)
	}
}

// answers checks a user message against the tool_use ids left open by the
// assistant message before it.
func (c *checker) answers(where string, blocks []*node, open []string) []string {
	want := map[string]bool{}
	for _, id := range open {
		want[id] = true
	}
	results := true
	for j, b := range blocks {
		at := fmt.Sprintf("%s.content.%d", where, j)
		typ := b.get("type")
		if b.kind != 'o' || !typ.isString() {
			c.fail("%s: a block needs a type", at)
			continue
		}
		if typ.s() != "tool_result" {
			results = false
		}
		switch typ.s() {
		case "text", "image", "document":
			c.userBlock(at, b)
		case "tool_result":
			if !results {
				c.fail("%s: a tool_result after other content (tool_result blocks must come first)", at)
			}
			c.members(at, b, anthropicMembers["tool_result"])
			id := b.get("tool_use_id")
			if !id.isString() || !want[id.s()] {
				c.fail("%s: unexpected tool_use_id %q in a tool_result (no such tool_use in the message before)", at, id.s())
			}
			delete(want, id.s())
			if e := b.get("is_error"); e != nil && e.kind != 'b' {
				c.fail("%s.is_error: must be a boolean", at)
			}
			c.resultContent(at, b.get("content"))
		default:
			c.fail("%s: %q is not a block of a user message", at, typ.s())
		}
	}
	var unanswered []string
	for _, id := range open {
		if want[id] {
			unanswered = append(unanswered, id)
		}
	}
	if len(unanswered) > 0 {
		c.fail("%s: tool_use ids were found without tool_result blocks immediately after: %v", where, unanswered)
	}
	return nil
}

// userBlock checks a text, image or document block, and reports whether b
// is one.
func (c *checker) userBlock(where string, b *node) bool {
	switch b.get("type").s() {
	case "text":
		c.textBlock(where, b)
	case "image":
		c.members(where, b, anthropicMembers["image"])
		c.imageSource(where, b.get("source"))
	case "document":
		c.members(where, b, anthropicMembers["document"])
		c.documentSource(where, b.get("source"))
	default:
		return false
	}
	return true
}

func (c *checker) resultContent(where string, content *node) {
	switch {
	case content == nil:
	case content.isString():
		if strings.TrimSpace(content.str) == "" {
			c.fail("%s.content: empty or whitespace-only text", where)
		}
	case content.kind == 'a':
		for k, p := range content.items {
			at := fmt.Sprintf("%s.content.%d", where, k)
			if !c.userBlock(at, p) {
				c.fail("%s: a tool_result holds text, image and document blocks, not %q", at, p.get("type").s())
			}
		}
	default:
		c.fail("%s.content: must be a string or blocks, not %s", where, content.describe())
	}
}

// assistantBlocks checks an assistant message's blocks and returns its
// tool_use ids.
func (c *checker) assistantBlocks(where string, blocks []*node, ids map[string]bool) []string {
	var calls []string
	serverOpen := map[string]bool{}
	for j, b := range blocks {
		at := fmt.Sprintf("%s.content.%d", where, j)
		typ := b.get("type")
		if b.kind != 'o' || !typ.isString() {
			c.fail("%s: a block needs a type", at)
			continue
		}
		switch t := typ.s(); {
		case t == "text":
			c.textBlock(at, b)
		case t == "thinking":
			c.members(at, b, anthropicMembers["thinking"])
			if !b.get("thinking").isString() {
				c.fail("%s.thinking: a string is required", at)
			}
			if s := b.get("signature"); !s.isString() || s.s() == "" {
				c.fail("%s.signature: a thinking block needs its signature", at)
			}
		case t == "redacted_thinking":
			c.members(at, b, anthropicMembers["redacted_thinking"])
			if d := b.get("data"); !d.isString() || d.s() == "" {
				c.fail("%s.data: a redacted_thinking block needs its data", at)
			}
		case t == "tool_use":
			c.members(at, b, anthropicMembers["tool_use"])
			id := b.get("id")
			switch {
			case !id.isString() || !toolUseID.MatchString(id.s()):
				c.fail("%s.id: String should match pattern '^[a-zA-Z0-9_-]+$' (%q)", at, id.s())
			case ids[id.s()]:
				c.fail("%s: tool_use ids must be unique (%q)", at, id.s())
			}
			ids[id.s()] = true
			calls = append(calls, id.s())
			if n := b.get("name"); !n.isString() || n.str == "" {
				c.fail("%s.name: a tool name is required", at)
			}
			if in := b.get("input"); in == nil || in.kind != 'o' {
				c.fail("%s.input: must be an object, not %s", at, in.describe())
			}
		case t == "server_tool_use":
			id := b.get("id")
			if !id.isString() || !serverToolID.MatchString(id.s()) || ids[id.s()] {
				c.fail("%s.id: a server_tool_use needs a unique srvtoolu_ id (%q)", at, id.s())
			}
			ids[id.s()] = true
			serverOpen[id.s()] = true
			if in := b.get("input"); in == nil || in.kind != 'o' {
				c.fail("%s.input: must be an object", at)
			}
		case anthropicServerResults[t]:
			id := b.get("tool_use_id")
			if !id.isString() || !serverOpen[id.s()] {
				c.fail("%s: a %s answers no server_tool_use before it in the message", at, t)
			}
			delete(serverOpen, id.s())
		default:
			c.fail("%s: %q is not a block of an assistant message", at, t)
		}
	}
	for id := range serverOpen {
		c.fail("%s: server_tool_use %q has no result in its message", where, id)
	}
	return calls
}

var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

func (c *checker) imageSource(where string, src *node) {
	if src == nil || src.kind != 'o' {
		c.fail("%s.source: an object is required", where)
		return
	}
	switch src.get("type").s() {
	case "base64":
		c.members(where+".source", src, []string{"type", "media_type", "data"})
		if mt := src.get("media_type"); !mt.isString() || !imageTypes[mt.s()] {
			c.fail("%s.source.media_type: image/jpeg, image/png, image/gif or image/webp, not %q", where, mt.s())
		}
		if d := src.get("data"); !d.isString() || d.s() == "" {
			c.fail("%s.source.data: base64 data is required", where)
		}
	case "url":
		c.members(where+".source", src, []string{"type", "url"})
		c.httpURL(where, src.get("url"))
	default:
		c.fail("%s.source.type: base64 or url, not %q", where, src.get("type").s())
	}
}

func (c *checker) httpURL(where string, u *node) {
	if !strings.HasPrefix(u.s(), "https://") && !strings.HasPrefix(u.s(), "http://") {
		c.fail("%s.source.url: an http(s) URL is required", where)
	}
}

func (c *checker) documentSource(where string, src *node) {
	if src == nil || src.kind != 'o' {
		c.fail("%s.source: an object is required", where)
		return
	}
	switch src.get("type").s() {
	case "base64":
		if src.get("media_type").s() != "application/pdf" || src.get("data").s() == "" {
			c.fail("%s.source: base64 documents are PDF data", where)
		}
	case "text":
		if src.get("media_type").s() != "text/plain" || !src.get("data").isString() {
			c.fail("%s.source: text documents are text/plain data", where)
		}
	case "url":
		c.httpURL(where, src.get("url"))
	default:
		c.fail("%s.source.type: base64, text or url, not %q", where, src.get("type").s())
	}
}

func (c *checker) anthropicTools(tools *node) {
	if tools.kind != 'a' {
		c.fail("tools: must be an array")
		return
	}
	names := map[string]bool{}
	for i, t := range tools.items {
		name := t.get("name")
		switch {
		case !name.isString() || !toolName.MatchString(name.s()):
			c.fail("tools.%d.name: must match ^[a-zA-Z0-9_-]{1,128}$", i)
		case names[name.s()]:
			c.fail("tools: Tool names must be unique (%q)", name.s())
		}
		names[name.s()] = true
		if s := t.get("input_schema"); s == nil || s.kind != 'o' {
			c.fail("tools.%d.input_schema: an object is required", i)
		}
	}
}
