package session

import (
	"slices"
	"time"
)

// MaxMessageBytes bounds one message's JSON. Tool output is capped far below
// it; anything larger is a mistake, not a message.
const MaxMessageBytes = 32 << 20

// New returns the metadata of a new, empty session.
func New(id, project, systemPrompt string, now time.Time) Meta {
	t := FormatTime(now)
	m := Meta{
		ID: id, ProjectPath: project,
		Title: DefaultTitle(project, id), TitleSource: TitleDefault,
		CreatedAt: t, UpdatedAt: t, NextSeq: 1,
	}
	m.SetSystemPrompt(systemPrompt)
	return m
}

// SetSystemPrompt replaces the system prompt and its share of the estimate.
func (m *Meta) SetSystemPrompt(s string) {
	pathTokens := m.Tokens - m.SystemTokens
	m.SystemPrompt = s
	m.SystemTokens = EstimateTokens(s)
	m.Tokens = m.SystemTokens + pathTokens
}

// SetHead makes n the active leaf (nil: the empty path) and takes the
// path's counts from its running totals.
func (m *Meta) SetHead(n *Node) {
	var h NodeHeader
	m.Head = 0
	if n != nil {
		h = n.Header()
		m.Head = n.Seq
	}
	m.MessageCount, m.UserMessageCount = h.Depth, h.Users
	m.Tokens = m.SystemTokens + h.Tokens
}

// ToolNameLookup finds the tool name of an earlier tooluse by its id. The
// store answers it from a bounded walk back from the head.
type ToolNameLookup func(toolCallID string) (string, bool)

// AppendOptions tune Append.
type AppendOptions struct {
	NoCap bool // store tool output as given instead of capping it
}

// AppendResult says what Append wrote.
type AppendResult struct {
	Nodes  []Node
	Capped int // tool bodies cut to ToolResultMaxChars
}

// Append adds msgs to the active path after head (nil for an empty path),
// the way whycodes' add_* methods do: each message is stamped, tool output is
// capped, tool messages get their tool name, edit stats and the heuristic
// title are updated. Its cost does not depend on the session's length.
func Append(m *Meta, head *Node, msgs []Message, now time.Time, lookup ToolNameLookup, opt AppendOptions) AppendResult {
	stamp := FormatTime(now)
	var res AppendResult
	prev := head
	batchTools := map[string]string{}
	toolName := func(id string) string {
		if name, ok := batchTools[id]; ok {
			return name
		}
		if lookup != nil {
			if name, ok := lookup(id); ok {
				return name
			}
		}
		return ""
	}
	for _, msg := range msgs {
		if msg.CreatedAt == "" {
			msg.CreatedAt = stamp
		}
		if msg.Role == RoleTool && msg.Name == "" && msg.ToolCallID != "" {
			msg.Name = toolName(msg.ToolCallID)
		}
		m.recordEdits(&msg, toolName) // before capping, which can cut the trailer
		res.Capped += prepareToolOutput(&msg, opt.NoCap)
		if msg.IsUserTurn() {
			m.StreamRules.BeginTurn()
			if text, ok := msg.AsText(); ok {
				m.ApplyHeuristicTitle(text)
			}
		}
		for _, b := range msg.Content.Blocks {
			if b.Type == BlockToolUse && b.ID != "" {
				batchTools[b.ID] = b.Name
			}
		}
		n := Child(prev, m.NextSeq, msg)
		m.NextSeq++
		res.Nodes = append(res.Nodes, n)
		prev = &res.Nodes[len(res.Nodes)-1]
	}
	if prev != head {
		m.SetHead(prev)
	}
	m.Touch(now)
	return res
}

// prepareToolOutput applies add_tool_results' rules to tool output: images
// come out of inline payloads and bodies are capped. It returns how many
// bodies were capped.
func prepareToolOutput(msg *Message, noCap bool) int {
	capped := 0
	if msg.Role == RoleTool && !msg.Content.IsBlocks {
		if c, ok := imagePayload(msg.Content.Text); ok {
			msg.Content = c
		} else if !noCap {
			var cut bool
			if msg.Content.Text, cut = CapToolText(msg.Content.Text, ToolResultMaxChars); cut {
				capped++
			}
		}
	}
	if noCap {
		return capped
	}
	cloned := false
	for i := range msg.Content.Blocks {
		b := &msg.Content.Blocks[i]
		if b.Type != BlockToolResult {
			continue
		}
		if b.ResultRaw != nil {
			raw := b.ResultRaw // replaced, not written through, when a part is cut
			n := editResultParts(&raw, func(text *string) int {
				var cut bool
				if *text, cut = CapToolText(*text, ToolResultMaxChars); cut {
					return 1
				}
				return 0
			})
			if n > 0 {
				if !cloned {
					msg.Content.Blocks = slices.Clone(msg.Content.Blocks)
					cloned = true
				}
				msg.Content.Blocks[i].ResultRaw = raw
				capped += n
			}
			continue
		}
		if text, cut := CapToolText(b.Result, ToolResultMaxChars); cut {
			if !cloned { // the blocks are the caller's: never write through them
				msg.Content.Blocks = slices.Clone(msg.Content.Blocks)
				cloned = true
			}
			msg.Content.Blocks[i].Result = text
			capped++
		}
	}
	return capped
}

func (m *Meta) recordEdits(msg *Message, toolName func(string) string) {
	if msg.Role == RoleTool {
		text, _ := msg.AsText()
		m.EditStats.Record(msg.Name, text, msg.IsError)
	}
	for i := range msg.Content.Blocks {
		b := &msg.Content.Blocks[i]
		if b.Type == BlockToolResult {
			m.EditStats.Record(toolName(b.ToolUseID), b.ResultText(), b.IsError != nil && *b.IsError)
		}
	}
}

// AddUsage adds provider usage, or refuses a sum past a counter's range
// and changes nothing.
func (m *Meta) AddUsage(u Usage, now time.Time) error {
	if !m.Usage.Fits(u) {
		return invalidf("the session's token usage would pass 2^64")
	}
	m.Usage.Add(u)
	m.Touch(now)
	return nil
}

// CheckSizes refuses a message whose JSON is over MaxMessageBytes. Tool
// output about to be capped is exempt when cap is true.
func CheckSizes(msgs []Message, cap bool) error {
	for i := range msgs {
		m := &msgs[i]
		if cap && m.Role == RoleTool && !m.Content.IsBlocks {
			continue
		}
		if messageSizeHint(m) < MaxMessageBytes/2 {
			continue // far below the limit: no need to encode it
		}
		if size := jsonSize(m); size > MaxMessageBytes {
			return invalidf("message %d is %d MiB, over the %d MiB limit", i+1, size>>20, MaxMessageBytes>>20)
		}
	}
	return nil
}

// jsonSize is len(m.AppendJSON(nil)); a text message is measured without
// encoding its text, which may grow sixfold as JSON.
func jsonSize(m *Message) int {
	if m.Content.IsBlocks {
		return len(m.AppendJSON(nil))
	}
	bare := *m
	bare.Content = TextContent("")
	return len(bare.AppendJSON(nil)) - len(`""`) + stringJSONLen(m.Content.Text)
}
