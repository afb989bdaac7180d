package wirecheck

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A model of what whycodes' serde types load, from its source (in the
// search index as whycorporation/whycodes): crates/core/src/types.rs for
// Message, MessageContent, ContentBlock and ImageSource, and
// crates/session/src/session.rs and title.rs for Session and TitleSource,
// with the fields the latest release adds (reference/whycodes-session.md
// §1.2: branches, cost, edit_stats, checkpoint, last_rewind_report,
// stream_rules). serde_json's rules as they apply:
//
//   - enums are closed: an unknown role, block type, image source type or
//     title_source fails the whole session;
//   - a struct's unknown members are skipped unparsed (serde_json's
//     ignore_value: no recursion limit, no check of strings or numbers);
//   - a duplicated known member, a missing required one, a null or a value
//     of another type where no Option is declared, each fails;
//   - MessageContent is untagged and ContentBlock internally tagged, so a
//     message's whole content is first parsed into serde's Content: every
//     string in it must be valid (no lone surrogate), every number within
//     f64, and it counts toward the recursion limit of 128 levels, which
//     every struct, sequence and map parsed from the root counts toward.
//
// Fields of the latest release whose serde attributes the sources do not
// show are taken as defaulted when absent, and typed when present; the
// core of the session (id, title, messages, system_prompt, project_path,
// the times) is required, as in session.rs.

// WhycodesSession is what a whycodes load keeps of a share.
type WhycodesSession struct {
	ID, Title, TitleSource string
	Messages               []WhycodesMessage
	Branches               []WhycodesBranch
	SystemPrompt           string
	ProjectPath            string
	CreatedAt, UpdatedAt   string
	Usage                  [4]uint64 // input, output, cache creation, cache read
	HasCheckpoint          bool
}

// WhycodesBranch is one of its branches.
type WhycodesBranch struct {
	Name     *string
	Messages []WhycodesMessage
}

// WhycodesMessage is one of its messages.
type WhycodesMessage struct {
	Role       string
	Text       *string // Text content; nil for Blocks
	Blocks     []WhycodesBlock
	ToolCallID *string
	Name       *string
	CreatedAt  *string
}

// WhycodesBlock is one ContentBlock.
type WhycodesBlock struct {
	Type                  string
	Text                  string // text, thinking
	Signature             *string
	Data                  string // redacted_thinking
	ID, Name              string // tooluse
	Input                 string // tooluse, its JSON kind ("object", "string", …)
	ToolUseID, Result     string // toolresult
	IsError               *bool
	SourceType, MediaType string // image
	URL                   string
}

// serdeMaxDepth is serde_json's recursion limit: the 128th level fails.
const serdeMaxDepth = 127

// LoadWhycodes loads share JSON as whycodes' serde_json::from_str::<Session>
// would, and returns what it keeps or the error that makes the whole load
// fail.
func LoadWhycodes(share []byte) (*WhycodesSession, error) {
	root, err := parseJSON(share)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	var s WhycodesSession
	var hasCheckpoint bool
	err = structOf(root, 1, "Session", []field{
		{name: "id", required: true, decode: stringInto(&s.ID)},
		{name: "title", required: true, decode: stringInto(&s.Title)},
		{name: "title_source", decode: enumInto(&s.TitleSource, "TitleSource", "default", "heuristic", "generated", "manual")},
		{name: "messages", required: true, decode: func(v *node, d int) (err error) {
			s.Messages, err = messagesOf(v, d)
			return err
		}},
		{name: "branches", decode: func(v *node, d int) error {
			return seqOf(v, d, "Branch", func(b *node, d int) error {
				var br WhycodesBranch
				err := structOf(b, d, "Branch", []field{
					{name: "name", decode: optional(func(v *node, _ int) error {
						var name string
						if err := stringInto(&name)(v, 0); err != nil {
							return err
						}
						br.Name = &name
						return nil
					})},
					{name: "messages", required: true, decode: func(v *node, d int) (err error) {
						br.Messages, err = messagesOf(v, d)
						return err
					}},
				})
				s.Branches = append(s.Branches, br)
				return err
			})
		}},
		{name: "system_prompt", required: true, decode: stringInto(&s.SystemPrompt)},
		{name: "project_path", required: true, decode: stringInto(&s.ProjectPath)},
		{name: "created_at", required: true, decode: timeInto(&s.CreatedAt)},
		{name: "updated_at", required: true, decode: timeInto(&s.UpdatedAt)},
		{name: "usage", decode: func(v *node, d int) error {
			return structOf(v, d, "Usage", []field{
				{name: "input_tokens", required: true, decode: unsignedInto(&s.Usage[0], 64)},
				{name: "output_tokens", required: true, decode: unsignedInto(&s.Usage[1], 64)},
				{name: "cache_creation_input_tokens", decode: optional(unsignedInto(&s.Usage[2], 64))},
				{name: "cache_read_input_tokens", decode: optional(unsignedInto(&s.Usage[3], 64))},
			})
		}},
		{name: "cost", decode: func(v *node, d int) error {
			var steps uint64
			return structOf(v, d, "SessionCost", []field{
				{name: "usd", required: true, decode: float},
				{name: "unpriced_steps", required: true, decode: unsignedInto(&steps, 32)},
			})
		}},
		{name: "edit_stats", decode: func(v *node, d int) error {
			var n uint64
			return structOf(v, d, "EditStats", []field{
				{name: "added", required: true, decode: unsignedInto(&n, 64)},
				{name: "removed", required: true, decode: unsignedInto(&n, 64)},
				{name: "approximate", required: true, decode: boolean},
			})
		}},
		{name: "checkpoint", decode: optional(func(v *node, d int) error {
			var n uint64
			var str string
			hasCheckpoint = true
			return structOf(v, d, "CheckpointState", []field{
				{name: "keep_until", required: true, decode: unsignedInto(&n, 64)},
				{name: "goal", required: true, decode: stringInto(&str)},
				{name: "started_at", required: true, decode: timeInto(&str)},
			})
		})},
		{name: "last_rewind_report", decode: optional(stringInto(new(string)))},
		{name: "stream_rules", decode: func(v *node, d int) error {
			var n uint64
			return structOf(v, d, "StreamRuleLedger", []field{
				{name: "turn", decode: unsignedInto(&n, 64)},
				{name: "fired", decode: func(v *node, d int) error {
					if v.kind != 'o' {
						return typeErr(v, "a map")
					}
					if d > serdeMaxDepth {
						return errRecursion
					}
					for _, m := range v.members {
						if m.keyLone {
							return errLoneSurrogate
						}
						if err := unsignedInto(&n, 64)(m.val, d+1); err != nil {
							return err
						}
					}
					return nil
				}},
			})
		}},
		{name: "turn_context", decode: optional(stringInto(new(string)))},
		{name: "instruction_dirs", decode: func(v *node, d int) error {
			return seqOf(v, d, "PathBuf", func(p *node, _ int) error { return stringInto(new(string))(p, 0) })
		}},
	})
	if err != nil {
		return nil, err
	}
	s.HasCheckpoint = hasCheckpoint
	return &s, nil
}

var (
	errRecursion     = fmt.Errorf("recursion limit exceeded")
	errLoneSurrogate = fmt.Errorf("lone leading surrogate in hex escape")
)

// field is one member of a struct as serde derives it.
type field struct {
	name     string
	required bool // no Option, no #[serde(default)]
	decode   func(v *node, depth int) error
}

// structOf decodes an object into a struct: depth is the level of the
// object itself.
func structOf(v *node, depth int, what string, fields []field) error {
	if v == nil || v.kind != 'o' {
		return typeErr(v, "struct "+what)
	}
	if depth > serdeMaxDepth {
		return errRecursion
	}
	seen := map[string]bool{}
	for _, m := range v.members {
		for _, f := range fields {
			if f.name != m.key {
				continue
			}
			if seen[f.name] {
				return fmt.Errorf("duplicate field `%s` in %s", f.name, what)
			}
			seen[f.name] = true
			if err := f.decode(m.val, depth+1); err != nil {
				return fmt.Errorf("%s.%s: %w", what, f.name, err)
			}
		}
	}
	for _, f := range fields {
		if f.required && !seen[f.name] {
			return fmt.Errorf("missing field `%s` in %s", f.name, what)
		}
	}
	return nil
}

func seqOf(v *node, depth int, what string, each func(*node, int) error) error {
	if v == nil || v.kind != 'a' {
		return typeErr(v, "a sequence of "+what)
	}
	if depth > serdeMaxDepth {
		return errRecursion
	}
	for i, item := range v.items {
		if err := each(item, depth+1); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return nil
}

// optional is an Option<T>: null is None.
func optional(decode func(*node, int) error) func(*node, int) error {
	return func(v *node, d int) error {
		if v.kind == 'n' {
			return nil
		}
		return decode(v, d)
	}
}

func typeErr(v *node, want string) error {
	return fmt.Errorf("invalid type: %s, expected %s", v.describe(), want)
}

func stringInto(dst *string) func(*node, int) error {
	return func(v *node, _ int) error {
		if !v.isString() {
			return typeErr(v, "a string")
		}
		if v.lone {
			return errLoneSurrogate
		}
		*dst = v.str
		return nil
	}
}

// enumInto reads a closed enum of unit variants, spelled as given.
func enumInto(dst *string, enum string, variants ...string) func(*node, int) error {
	return func(v *node, _ int) error {
		if !v.isString() || v.lone {
			return typeErr(v, "enum "+enum)
		}
		if !slices.Contains(variants, v.str) {
			return fmt.Errorf("unknown variant `%s`, expected one of `%s`", v.str, strings.Join(variants, "`, `"))
		}
		*dst = v.str
		return nil
	}
}

// timeInto reads a chrono DateTime<Utc>: RFC 3339, a full stop before any
// fraction of a second.
func timeInto(dst *string) func(*node, int) error {
	return func(v *node, d int) error {
		var s string
		if err := stringInto(&s)(v, d); err != nil {
			return err
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil || strings.Contains(s, ",") {
			return fmt.Errorf("input contains invalid characters: %q is not an RFC 3339 time", s)
		}
		*dst = s
		return nil
	}
}

func unsignedInto(dst *uint64, bits int) func(*node, int) error {
	return func(v *node, _ int) error {
		if v.kind != '0' {
			return typeErr(v, "an unsigned integer")
		}
		if strings.ContainsAny(v.num, ".eE") {
			return typeErr(v, "an unsigned integer (not a floating point number)")
		}
		n, err := strconv.ParseUint(v.num, 10, bits)
		if err != nil {
			return fmt.Errorf("invalid value: %s, expected u%d", v.num, bits)
		}
		*dst = n
		return nil
	}
}

func float(v *node, _ int) error {
	if v.kind != '0' {
		return typeErr(v, "f64")
	}
	if f, err := strconv.ParseFloat(v.num, 64); err != nil && math.IsInf(f, 0) {
		return fmt.Errorf("number out of range")
	}
	return nil
}

func boolean(v *node, _ int) error {
	if v.kind != 'b' {
		return typeErr(v, "a boolean")
	}
	return nil
}

func messagesOf(v *node, depth int) ([]WhycodesMessage, error) {
	var out []WhycodesMessage
	err := seqOf(v, depth, "Message", func(m *node, d int) error {
		msg, err := messageOf(m, d)
		out = append(out, msg)
		return err
	})
	return out, err
}

func messageOf(v *node, depth int) (WhycodesMessage, error) {
	var m WhycodesMessage
	err := structOf(v, depth, "Message", []field{
		{name: "role", required: true, decode: enumInto(&m.Role, "Role", "system", "user", "assistant", "tool")},
		{name: "content", required: true, decode: func(v *node, d int) error { return contentOf(v, d, &m) }},
		{name: "tool_call_id", decode: optional(func(v *node, d int) error {
			m.ToolCallID = new(string)
			return stringInto(m.ToolCallID)(v, d)
		})},
		{name: "name", decode: optional(func(v *node, d int) error {
			m.Name = new(string)
			return stringInto(m.Name)(v, d)
		})},
		{name: "created_at", decode: optional(func(v *node, d int) error {
			m.CreatedAt = new(string)
			return timeInto(m.CreatedAt)(v, d)
		})},
	})
	return m, err
}

// contentOf decodes the untagged MessageContent: serde first parses the
// whole value into its Content, strictly, then tries Text, then Blocks.
func contentOf(v *node, depth int, m *WhycodesMessage) error {
	if err := bufferable(v, depth); err != nil {
		return err
	}
	if v.kind == 's' {
		m.Text = &v.str
		return nil
	}
	var blocks []WhycodesBlock
	if v.kind == 'a' {
		var err error
		for i, b := range v.items {
			var blk WhycodesBlock
			if blk, err = blockOf(b); err != nil {
				err = fmt.Errorf("block %d: %w", i, err)
				break
			}
			blocks = append(blocks, blk)
		}
		if err == nil {
			if blocks == nil {
				blocks = []WhycodesBlock{}
			}
			m.Blocks = blocks
			return nil
		}
		return fmt.Errorf("data did not match any variant of untagged enum MessageContent (%v)", err)
	}
	return fmt.Errorf("data did not match any variant of untagged enum MessageContent (%s)", v.describe())
}

// bufferable reports what keeps serde from parsing v into its Content: a
// lone surrogate in any string or key, a number past f64, or nesting past
// the recursion limit. depth is v's level.
func bufferable(v *node, depth int) error {
	switch v.kind {
	case 's':
		if v.lone {
			return errLoneSurrogate
		}
	case '0':
		if f, err := strconv.ParseFloat(v.num, 64); err != nil && math.IsInf(f, 0) {
			return fmt.Errorf("number out of range: %s", v.num)
		}
	case 'a', 'o':
		if depth > serdeMaxDepth {
			return errRecursion
		}
		for _, item := range v.items {
			if err := bufferable(item, depth+1); err != nil {
				return err
			}
		}
		for _, m := range v.members {
			if m.keyLone {
				return errLoneSurrogate
			}
			if err := bufferable(m.val, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// tagged splits an internally tagged enum's object into its tag and the
// other members, which the variant's struct then reads.
func tagged(v *node, enum string) (string, *node, error) {
	if v.kind != 'o' {
		return "", nil, typeErr(v, "internally tagged enum "+enum)
	}
	rest := &node{kind: 'o'}
	tag, found := "", false
	for _, m := range v.members {
		if m.key != "type" {
			rest.members = append(rest.members, m)
			continue
		}
		if found {
			return "", nil, fmt.Errorf("duplicate field `type`")
		}
		if !m.val.isString() {
			return "", nil, typeErr(m.val, "the tag of "+enum)
		}
		tag, found = m.val.str, true
	}
	if !found {
		return "", nil, fmt.Errorf("missing field `type`")
	}
	return tag, rest, nil
}

// blockOf decodes one ContentBlock (its Content was checked already, so
// depth no longer matters here).
func blockOf(v *node) (WhycodesBlock, error) {
	tag, rest, err := tagged(v, "ContentBlock")
	if err != nil {
		return WhycodesBlock{}, err
	}
	b := WhycodesBlock{Type: tag}
	var fields []field
	switch tag {
	case "text":
		fields = []field{{name: "text", required: true, decode: stringInto(&b.Text)}}
	case "image":
		fields = []field{{name: "source", required: true, decode: func(v *node, _ int) error {
			t, rest, err := tagged(v, "ImageSource")
			if err != nil {
				return err
			}
			b.SourceType = t
			switch t {
			case "base64":
				var data string
				return structOf(rest, 0, "ImageSource::Base64", []field{
					{name: "media_type", required: true, decode: stringInto(&b.MediaType)},
					{name: "data", required: true, decode: stringInto(&data)},
				})
			case "url":
				return structOf(rest, 0, "ImageSource::Url", []field{{name: "url", required: true, decode: stringInto(&b.URL)}})
			}
			return fmt.Errorf("unknown variant `%s`, expected `base64` or `url`", t)
		}}}
	case "tooluse":
		fields = []field{
			{name: "id", required: true, decode: stringInto(&b.ID)},
			{name: "name", required: true, decode: stringInto(&b.Name)},
			{name: "input", required: true, decode: func(v *node, _ int) error { b.Input = v.describe(); return nil }},
		}
	case "toolresult":
		fields = []field{
			{name: "tool_use_id", required: true, decode: stringInto(&b.ToolUseID)},
			{name: "content", required: true, decode: stringInto(&b.Result)},
			{name: "is_error", decode: optional(func(v *node, d int) error {
				if err := boolean(v, d); err != nil {
					return err
				}
				b.IsError = &v.b
				return nil
			})},
		}
	case "thinking":
		fields = []field{
			{name: "text", required: true, decode: stringInto(&b.Text)},
			{name: "signature", decode: optional(func(v *node, d int) error {
				b.Signature = new(string)
				return stringInto(b.Signature)(v, d)
			})},
		}
	case "redacted_thinking":
		fields = []field{{name: "data", required: true, decode: stringInto(&b.Data)}}
	default:
		return b, fmt.Errorf("unknown variant `%s`, expected one of `text`, `image`, `tooluse`, `toolresult`, `thinking`, `redacted_thinking`", tag)
	}
	return b, structOf(rest, 0, "ContentBlock::"+tag, fields)
}
