package main

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/format"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// toolLookback bounds the walk back from the head that names tool output
// after its tooluse, keeping an append O(1) in the session's length.
const toolLookback = 64

// plan is everything to apply to each session, read and checked before the
// store is opened.
type plan struct {
	msgs     []session.Message
	usage    *session.Usage
	cost     *float64
	unpriced bool
	title    string
	genTitle string
	system   *string
	rules    []string
	noCap    bool
}

var metadataFlags = []string{"usage", "cost", "unpriced", "title", "generated-title", "system", "stream-rule"}

func appendTo(c *command.Ctx) error {
	p, err := readPlan(c)
	if err != nil {
		return err
	}
	refs, err := c.Refs()
	if err != nil {
		return err
	}
	st, err := c.OpenFor(store.Write, refs)
	if err != nil {
		return err
	}
	ids, err := command.Resolve(st, refs)
	if err != nil {
		return err
	}
	for i, id := range ids {
		// A writer on another machine may commit to the session between
		// our read and our commit (a store on etcd): read it again.
		if err := c.RetryChanged(func() error { return appendOne(c, st, id, p) }); err != nil {
			if i > 0 {
				return command.Partial(err) // the sessions before it were appended to
			}
			return err
		}
	}
	return nil
}

func appendOne(c *command.Ctx, st store.Handle, id string, p *plan) error {
	meta, err := st.Meta(id)
	if err != nil {
		return err
	}
	var head *session.Node
	if meta.Head != 0 {
		n, err := st.Node(id, meta.Head)
		if err != nil {
			return err
		}
		head = &n
	}
	// As whycodes on resume: a placeholder title is first upgraded from the
	// session's first prompt, so that a new prompt does not take it. Only
	// an append that could title the session reads for it.
	if slices.ContainsFunc(p.msgs, func(m session.Message) bool { return m.IsUserTurn() }) {
		if _, err := command.UpgradeTitle(st, &meta); err != nil {
			return err
		}
	}
	var walkErr error
	var recentTools map[string]string
	lookup := func(callID string) (string, bool) {
		if recentTools == nil {
			recentTools = map[string]string{}
			if meta.Head != 0 {
				walkErr = st.Walk(id, meta.Head, toolLookback, func(n *session.Node) bool {
					for _, b := range n.Msg.Content.Blocks {
						if b.Type == session.BlockToolUse && recentTools[b.ID] == "" {
							recentTools[b.ID] = b.Name
						}
					}
					return true
				})
			}
		}
		name, ok := recentTools[callID]
		return name, ok
	}
	res := session.Append(&meta, head, p.msgs, c.Now, lookup, session.AppendOptions{NoCap: p.noCap})
	if walkErr != nil {
		return walkErr
	}
	// Checked again as stored (stamped, named, capped): a message over the
	// limit only with its created_at would not import back from an export.
	stored := make([]session.Message, len(res.Nodes))
	for i := range res.Nodes {
		stored[i] = res.Nodes[i].Msg
	}
	if err := session.CheckSizes(stored, false); err != nil {
		return command.DataErrf("%v", err)
	}
	if p.usage != nil {
		if !meta.Usage.Fits(*p.usage) {
			return command.DataErrf("session %s: its token usage would exceed what wc can count", id)
		}
		meta.Usage.Add(*p.usage)
	}
	if p.cost != nil || p.unpriced {
		if !meta.Cost.Fits(p.cost) {
			return command.DataErrf("session %s: its total cost would exceed what wc can store", id)
		}
		meta.Cost.Add(p.cost)
	}
	if p.system != nil {
		meta.SetSystemPrompt(*p.system)
	}
	meta.SetTitleManual(p.title)
	if p.genTitle != "" {
		meta.ApplyGeneratedTitle(p.genTitle)
	}
	for _, r := range p.rules {
		meta.StreamRules.Record(r)
	}
	meta.Touch(c.Now)
	if err := st.Commit(&meta, res.Nodes); err != nil {
		return err
	}
	out := appendResult{Info: meta.Info(), Appended: []uint64{}, Capped: res.Capped}
	for _, n := range res.Nodes {
		out.Appended = append(out.Appended, n.Seq)
	}
	return c.PrintJSON(out)
}

// appendResult is the line printed for each session.
type appendResult struct {
	session.Info
	Appended []uint64 `json:"appended"`
	Capped   int      `json:"capped,omitempty"`
}

// AppendPrintJSON writes what encoding/json would, without its reflection.
func (r appendResult) AppendPrintJSON(dst []byte) []byte {
	dst = append(record.AppendInfoFields(append(dst, '{'), &r.Info), `,"appended":`...)
	if r.Appended == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, seq := range r.Appended {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendUint(dst, seq, 10)
		}
		dst = append(dst, ']')
	}
	if r.Capped != 0 {
		dst = strconv.AppendInt(append(dst, `,"capped":`...), int64(r.Capped), 10)
	}
	return append(dst, '}')
}

func readPlan(c *command.Ctx) (*plan, error) {
	p := &plan{noCap: c.Bool("no-cap"), unpriced: c.Bool("unpriced"), rules: c.StringSlice("stream-rule")}
	if err := readMetadataFlags(c, p); err != nil {
		return nil, err
	}
	hasMeta := false
	for _, f := range metadataFlags {
		hasMeta = hasMeta || c.IsSet(f)
	}
	var content []string
	for _, f := range []string{"text", "file", "note"} {
		if c.IsSet(f) {
			content = append(content, "--"+f)
		}
	}
	if len(content) > 1 {
		return nil, command.Usagef("%s cannot be combined", strings.Join(content, " and "))
	}
	if c.IsSet("note") && c.IsSet("role") {
		return nil, command.Usagef("--note cannot be combined with --role: a note is always a user-role message")
	}
	role := session.RoleUser
	if c.IsSet("role") {
		role = session.Role(c.String("role"))
		switch role {
		case session.RoleUser, session.RoleAssistant, session.RoleSystem, session.RoleTool:
		default:
			return nil, command.Usagef("unknown role %q", c.String("role")).WithHint("roles: user, assistant, system, tool")
		}
	}
	if (c.IsSet("tool-call-id") || c.Bool("error")) && role != session.RoleTool {
		return nil, command.Usagef("--tool-call-id and --error go with --role tool")
	}
	fromArgs := c.Args().Len() > 0
	switch {
	case c.IsSet("note"):
		p.msgs = []session.Message{{Role: session.RoleUser, Kind: session.KindNote, Content: session.TextContent(c.String("note"))}}
	case c.IsSet("text"):
		p.msgs = []session.Message{textMessage(c, role, c.String("text"))}
	case c.IsSet("file"):
		if c.String("file") == "-" && !fromArgs {
			return nil, command.Usagef("--file - reads stdin, which holds the sessions here").WithHint("pass the session as an argument")
		}
		data, err := c.ReadText(c.String("file"), "a message")
		if err != nil {
			return nil, err
		}
		p.msgs = []session.Message{textMessage(c, role, trimNewlines(string(data)))}
	case !fromArgs && c.IsSet("role"):
		return nil, command.Usagef("--role needs --text or --file when the sessions come from stdin")
	case !fromArgs:
		if !hasMeta {
			return nil, command.Usagef("nothing to append").WithHint("give --text, --file or --note, or pass the session as an argument and pipe messages")
		}
	case c.StdinIsTerminal():
		if c.IsSet("role") {
			return nil, command.Usagef("no text for --role: give --text or --file, or pipe the text")
		}
		if !hasMeta {
			return nil, command.Usagef("nothing to append").WithHint("pipe messages to stdin, or give --text, --file or --note")
		}
	case c.IsSet("role"):
		data, err := c.StdinText("a message")
		if err != nil {
			return nil, err
		}
		p.msgs = []session.Message{textMessage(c, role, trimNewlines(string(data)))}
	default:
		data, err := c.Stdin()
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(data)) == 0 {
			if hasMeta {
				break
			}
			return nil, command.DataErrf("no messages on stdin").WithHint("pipe message JSON, or use --role with raw text")
		}
		batch, err := format.ParseMessages(data)
		if err == nil {
			err = batch.CheckPath()
		}
		if err != nil {
			return nil, command.DataErrf("stdin: %v", err)
		}
		if len(batch.Messages) == 0 && batch.Usage == nil && !hasMeta {
			// An empty array: nothing to append, and nothing to touch.
			return nil, command.DataErrf("no messages on stdin").WithHint("pipe message JSON, or use --role with raw text")
		}
		p.msgs = batch.Messages
		if batch.Usage != nil {
			if p.usage == nil {
				p.usage = &session.Usage{}
			}
			if !p.usage.Fits(*batch.Usage) {
				return nil, command.DataErrf("stdin: the token usage with --usage adds up past what wc can count")
			}
			p.usage.Add(*batch.Usage)
		}
	}
	if err := session.CheckSizes(p.msgs, !p.noCap); err != nil {
		return nil, command.DataErrf("%v", err)
	}
	return p, nil
}

func textMessage(c *command.Ctx, role session.Role, text string) session.Message {
	m := session.Message{Role: role, Content: session.TextContent(text)}
	if role == session.RoleTool {
		m.ToolCallID, m.IsError = c.String("tool-call-id"), c.Bool("error")
	}
	if role == session.RoleAssistant { // whycodes' assistant content is always blocks
		m.Content = session.BlockContent(session.Block{Type: session.BlockText, Text: text})
	}
	return m
}

func trimNewlines(s string) string { return strings.TrimRight(s, "\r\n") }

func readMetadataFlags(c *command.Ctx, p *plan) error {
	if c.IsSet("usage") {
		// Strict: an object of another shape (OpenAI's prompt_tokens, a
		// typo) would otherwise record no usage at all.
		var u session.Usage
		raw := strings.TrimSpace(c.String("usage"))
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.DisallowUnknownFields()
		if !strings.HasPrefix(raw, "{") || dec.Decode(&u) != nil || dec.More() ||
			!strings.Contains(raw, `"input_tokens"`) || !strings.Contains(raw, `"output_tokens"`) {
			return command.Usagef("--usage is not a usage object").WithHint(`example: --usage '{"input_tokens":1200,"output_tokens":300}' (and optionally cache_creation_input_tokens, cache_read_input_tokens)`)
		}
		p.usage = &u
	}
	if c.IsSet("cost") {
		usd, err := strconv.ParseFloat(c.String("cost"), 64)
		if err != nil || usd < 0 || math.IsInf(usd, 0) || math.IsNaN(usd) {
			return command.Usagef("--cost %q is not an amount in USD", c.String("cost"))
		}
		p.cost = &usd
	}
	if c.IsSet("cost") && p.unpriced {
		return command.Usagef("--cost and --unpriced cannot be combined")
	}
	if c.IsSet("title") {
		if p.title = c.String("title"); session.SanitizeTitle(p.title) == "" {
			return command.Usagef("--title is empty")
		}
	}
	if c.IsSet("generated-title") {
		if p.genTitle = c.String("generated-title"); session.SanitizeTitle(p.genTitle) == "" {
			return command.Usagef("--generated-title is empty")
		}
	}
	if c.IsSet("system") {
		s, err := c.TextArg("system")
		if err != nil {
			return err
		}
		p.system = &s
	}
	return nil
}
