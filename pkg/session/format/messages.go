package format

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
)

// Batch is what a message stream holds.
type Batch struct {
	Messages []session.Message
	Usage    *session.Usage // summed over provider responses, if any carried usage

	// nodes[i] is where Messages[i] was in its session's tree, when it
	// came from a wc-export jsonl node line; see importNodes.
	nodes []nodeLine
}

// ParseMessages reads a stream of JSON values: message objects, arrays of
// them, NDJSON, wc-export jsonl node lines, or provider response bodies (an
// Anthropic message, an OpenAI chat completion). Either all of it is valid
// or nothing is returned.
func ParseMessages(data []byte) (Batch, error) {
	if err := session.CheckNesting(data); err != nil {
		return Batch{}, err
	}
	var b Batch
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	line, counted := 1, 0 // the line of data[counted], counted as values go
	for n := 1; ; n++ {
		start := dec.InputOffset()
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return Batch{}, syntaxError(data, start, err)
		}
		// The value starts after the whitespace that ended the previous one.
		begin := int(start) + len(data[start:]) - len(bytes.TrimLeft(data[start:], " \t\r\n"))
		line += bytes.Count(data[counted:begin], []byte{'\n'})
		counted = begin
		if err := b.addValue(gjson.ParseBytes(raw), line); err != nil {
			return Batch{}, err
		}
	}
}

// syntaxError places a decoding error: a syntax error at its own offset
// (the decoder counts from the start of the stream), a value cut short at
// the line where that value starts.
func syntaxError(data []byte, start int64, err error) error {
	begin := int(start) + len(data[start:]) - len(bytes.TrimLeft(data[start:], " \t\r\n"))
	var se *json.SyntaxError
	if errors.As(err, &se) && !errors.Is(err, io.ErrUnexpectedEOF) {
		off := min(int(se.Offset), len(data))
		if off > 0 {
			off-- // Offset is just past the offending byte
		}
		return &session.InvalidError{Msg: fmt.Sprintf("invalid JSON on line %d", 1+bytes.Count(data[:off], []byte{'\n'}))}
	}
	line := 1 + bytes.Count(data[:begin], []byte{'\n'})
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &session.InvalidError{Msg: fmt.Sprintf("invalid JSON: input ends inside a value (line %d)", line)}
	}
	return &session.InvalidError{Msg: fmt.Sprintf("invalid JSON on line %d", line)}
}

func (b *Batch) addValue(v gjson.Result, line int) error {
	if v.IsArray() {
		var err error
		v.ForEach(func(_, el gjson.Result) bool {
			err = b.addObject(el, line)
			return err == nil
		})
		return err
	}
	return b.addObject(v, line)
}

func (b *Batch) addObject(v gjson.Result, line int) error {
	if !v.IsObject() {
		return lineErr(line, "a message must be a JSON object, not %s", kindOf(v))
	}
	switch {
	case v.Get("choices").IsArray(): // OpenAI chat completion
		msg := v.Get("choices.0.message")
		if !msg.IsObject() {
			return lineErr(line, "an OpenAI response without choices[0].message")
		}
		u, err := openAIUsage(v.Get("usage"))
		if err != nil {
			return lineErr(line, "%v", err)
		}
		if err := b.addUsage(u, line); err != nil {
			return err
		}
		if err := b.addMessage(msg, line); err != nil {
			return err
		}
		b.nodes = append(b.nodes, nodeLine{})
		return nil
	case v.Get("type").Str == "message" && v.Get("role").Exists() && v.Get("content").Exists(): // Anthropic message
		u, err := anthropicUsage(v.Get("usage"))
		if err != nil {
			return lineErr(line, "%v", err)
		}
		if err := b.addUsage(u, line); err != nil {
			return err
		}
		if err := b.addMessage(v, line); err != nil {
			return err
		}
		b.nodes = append(b.nodes, nodeLine{})
		return nil
	case !v.Get("role").Exists() && v.Get("message").IsObject(): // a jsonl node line
		if err := b.addMessage(v.Get("message"), line); err != nil {
			return err
		}
		b.nodes = append(b.nodes, nodeLineOf(v, line))
		return nil
	}
	if err := b.addMessage(v, line); err != nil {
		return err
	}
	b.nodes = append(b.nodes, nodeLine{})
	return nil
}

// addMessage decodes one message; a provider response's own members (id,
// model, stop_reason, …) are not message data and are left out.
func (b *Batch) addMessage(v gjson.Result, line int) error {
	if len(v.Raw) > session.MaxMessageBytes {
		return lineErr(line, "a message of %d MiB is over the %d MiB limit", len(v.Raw)>>20, session.MaxMessageBytes>>20)
	}
	raw := v.Raw
	if v.Get("type").Str == "message" && v.Get("model").Exists() {
		raw = `{"role":` + v.Get("role").Raw + `,"content":` + v.Get("content").Raw + `}`
	}
	if err := checkInput(v); err != nil {
		return lineErr(line, "%v", err)
	}
	msg, err := session.DecodeMessage([]byte(raw))
	if err != nil {
		return lineErr(line, "%v", err)
	}
	b.Messages = append(b.Messages, msg)
	return nil
}

// checkInput refuses what a message given to wc may not hold, though a
// stored one (written by an earlier wc) or an import may: a kind that is
// not a string, and a tool call whose input is not an object of arguments
// (what both providers and whycodes' tools take).
func checkInput(v gjson.Result) error {
	if k := v.Get("kind"); k.Exists() && k.Type != gjson.String {
		return fmt.Errorf("kind must be a string, not %s", kindOf(k))
	}
	var err error
	i := 0
	v.Get("content").ForEach(func(_, b gjson.Result) bool {
		i++
		if t := b.Get("type").Str; t != session.BlockToolUse && t != "tool_use" {
			return true
		}
		if in := b.Get("input"); in.Exists() && in.Type != gjson.Null && !in.IsObject() {
			err = fmt.Errorf("block %d: tooluse input must be a JSON object, not %s", i, kindOf(in))
		}
		return err == nil
	})
	return err
}

func (b *Batch) addUsage(u *session.Usage, line int) error {
	if u == nil {
		return nil
	}
	if b.Usage == nil {
		b.Usage = &session.Usage{}
	}
	if !b.Usage.Fits(*u) {
		return lineErr(line, "%s", errUsageRange)
	}
	b.Usage.Add(*u)
	return nil
}

func anthropicUsage(u gjson.Result) (*session.Usage, error) {
	if !u.IsObject() {
		return nil, nil
	}
	out := &session.Usage{}
	var err error
	for _, f := range []struct {
		key string
		dst *uint64
	}{{"input_tokens", &out.InputTokens}, {"output_tokens", &out.OutputTokens}} {
		n, ok, ferr := tokenCount(u, f.key)
		if ok {
			*f.dst = n
		}
		err = cmp.Or(err, ferr)
	}
	for _, f := range []struct {
		key string
		dst **uint64
	}{{"cache_creation_input_tokens", &out.CacheCreationInputTokens}, {"cache_read_input_tokens", &out.CacheReadInputTokens}} {
		n, ok, ferr := tokenCount(u, f.key)
		if ok {
			*f.dst = &n
		}
		err = cmp.Or(err, ferr)
	}
	return out, err
}

// openAIUsage maps prompt tokens the way Anthropic counts them: cached
// prompt tokens are cache reads, not input.
func openAIUsage(u gjson.Result) (*session.Usage, error) {
	if !u.IsObject() {
		return nil, nil
	}
	prompt, _, err := tokenCount(u, "prompt_tokens")
	completion, _, cerr := tokenCount(u, "completion_tokens")
	cached, ok, kerr := tokenCount(u, "prompt_tokens_details.cached_tokens")
	if err = cmp.Or(err, cerr, kerr); err != nil {
		return nil, err
	}
	out := &session.Usage{OutputTokens: completion}
	if ok && cached <= prompt {
		out.CacheReadInputTokens = &cached
		prompt -= cached
	}
	out.InputTokens = prompt
	return out, nil
}

// tokenCount reads a usage member: a whole number of tokens, or null or
// nothing (ok false). A negative, fractional or quoted count is refused,
// never read as 0.
func tokenCount(u gjson.Result, key string) (n uint64, ok bool, err error) {
	v := u.Get(key)
	if !v.Exists() || v.Type == gjson.Null {
		return 0, false, nil
	}
	if v.Type == gjson.Number {
		if n, err := strconv.ParseUint(v.Raw, 10, 64); err == nil {
			return n, true, nil
		}
	}
	return 0, false, fmt.Errorf("usage %s must be a whole number of tokens, not %s", key, v.Raw)
}

func lineErr(line int, format string, args ...any) error {
	return &session.InvalidError{Msg: fmt.Sprintf("line %d: ", line) + fmt.Sprintf(format, args...)}
}

func kindOf(v gjson.Result) string {
	if v.IsObject() {
		return "an object"
	}
	switch v.Type {
	case gjson.String:
		return "a string"
	case gjson.Number:
		return "a number"
	case gjson.True, gjson.False:
		return "a boolean"
	case gjson.Null:
		return "null"
	}
	return "an array"
}
