package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/format"
	"github.com/wctoolkit/wc/pkg/session/render"
	"github.com/wctoolkit/wc/pkg/session/request"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

type exporter func(c *command.Ctx, st store.Handle, m *session.Meta) error

func export(c *command.Ctx) error {
	run, err := pickFormat(c)
	if err != nil {
		return err
	}
	var backup *record.BackupWriter
	if c.String("format") == "backup" && !c.IsSet("blob") {
		backup = record.NewBackupWriter(c.Out())
		run = func(c *command.Ctx, st store.Handle, m *session.Meta) error { return exportBackup(backup, st, m) }
	}
	refs, err := c.Refs()
	if err != nil {
		return err
	}
	st, err := c.OpenFor(store.Read, refs)
	if err != nil {
		return err
	}
	ids, err := command.Resolve(st, refs)
	if err != nil {
		return err
	}
	// HTML is one page, whatever the sessions, each in it once; a backup
	// holds each once too, or it would not restore under the same ids. The
	// text of several sessions is set apart, as head(1) sets files apart.
	page := c.String("format") == "html" && !c.IsSet("blob")
	if page || backup != nil {
		seen := map[string]bool{}
		ids = slices.DeleteFunc(ids, func(id string) bool {
			dup := seen[id]
			seen[id] = true
			return dup
		})
	}
	for i, id := range ids {
		m, err := st.Meta(id)
		if err != nil {
			return err
		}
		switch {
		case page && i == 0:
			title := m.Title
			if len(ids) > 1 {
				title = strconv.Itoa(len(ids)) + " sessions"
			}
			err = format.WriteHTMLStart(c.Out(), title)
		case c.String("format") == "text" && len(ids) > 1:
			err = writeTextHeading(c, i, &m)
		}
		if err != nil {
			return err
		}
		if err := run(c, st, &m); err != nil {
			return err
		}
	}
	switch {
	case page:
		return format.WriteHTMLEnd(c.Out())
	case backup != nil:
		return backup.End() // only once every session is whole
	}
	return nil
}

// writeTextHeading sets a session's text apart from the one before:
// "==> ID TITLE <==", after a blank line but for the first.
func writeTextHeading(c *command.Ctx, i int, m *session.Meta) error {
	line := "==> " + m.ID + " " + strings.Join(strings.Fields(m.Title), " ") + " <==\n"
	if i > 0 {
		line = "\n" + line
	}
	_, err := c.Out().WriteString(line)
	return err
}

func pickFormat(c *command.Ctx) (exporter, error) {
	if c.IsSet("blob") {
		if c.IsSet("format") || c.Bool("tree") {
			return nil, command.Usagef("--blob prints one blob: it takes no --format or --tree")
		}
		sum, err := hex.DecodeString(strings.TrimPrefix(c.String("blob"), session.BlobRefPrefix))
		if err != nil || len(sum) != 32 {
			return nil, command.Usagef("--blob %q is not a sha256 in hex", c.String("blob"))
		}
		return func(c *command.Ctx, st store.Handle, m *session.Meta) error {
			data, err := st.Blob(m.ID, [32]byte(sum))
			if err != nil {
				return err
			}
			_, err = c.Out().Write(data)
			return err
		}, nil
	}
	if c.Bool("tree") && c.String("format") != "jsonl" {
		return nil, command.Usagef("--tree goes with --format jsonl")
	}
	if (c.Bool("prefill") || c.Bool("no-prefill")) && c.String("format") != "request" {
		return nil, command.Usagef("--prefill and --no-prefill go with --format request")
	}
	switch c.String("format") {
	case "json":
		return exportShare, nil
	case "jsonl":
		return exportNodes, nil
	case "backup":
		return nil, nil // export writes it, through one writer for all the sessions
	case "markdown", "md":
		return exportMarkdown, nil
	case "text":
		return exportText, nil
	case "info":
		if c.Int("snippet-chars") < 0 {
			return nil, command.Usagef("--snippet-chars must not be negative")
		}
		return exportInfo, nil
	case "html":
		return exportHTML, nil
	case "request":
		return requestExporter(c)
	case "summary":
		secs, err := durationSeconds(c.String("duration"))
		if err != nil {
			return nil, err
		}
		return func(c *command.Ctx, _ store.Handle, m *session.Meta) error {
			model := c.String("model")
			if model == "" {
				model = "unknown"
			}
			_, err := c.Out().WriteString(render.ExitSummary(m, secs, model, c.String("binary")))
			return err
		}, nil
	}
	return nil, command.Usagef("unknown format %q", c.String("format")).WithHint("formats: json, jsonl, markdown, text, info, summary, html, request, backup")
}

func durationSeconds(s string) (uint64, error) {
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		return n, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 && f < math.MaxInt64/1e9 {
		return uint64(f), nil // whole seconds, as a DURATION gives them
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, command.Usagef("--duration %q is not a duration", s)
	}
	return uint64(d / time.Second), nil
}

func exportShare(c *command.Ctx, st store.Handle, m *session.Meta) error {
	t, err := command.LoadTree(st, m.ID)
	if err != nil {
		return err
	}
	_, err = c.Out().Write(append(session.AppendShare(nil, m, t), '\n'))
	return err
}

// infoLine is the info every command prints, with what whycodes asks of a
// session's messages: first_user_text, first_assistant_snippet and
// compaction_prefix_end (null when there is none).
type infoLine struct {
	session.Info
	FirstUserText         *string `json:"first_user_text"`
	FirstAssistantSnippet *string `json:"first_assistant_snippet"`
	CompactionPrefixEnd   uint64  `json:"compaction_prefix_end"`
}

var errEnough = errors.New("read enough")

// exportInfo reads the path from the root only as far as its first user
// turn and assistant text, and back from the head only to its last real
// user turn.
func exportInfo(c *command.Ctx, st store.Handle, m *session.Meta) error {
	line := infoLine{Info: m.Info(), CompactionPrefixEnd: m.MessageCount}
	o := session.Openings{SnippetChars: c.Int("snippet-chars")}
	err := st.Path(m.ID, m.Head, func(n *session.Node) error {
		if o.Add(&n.Msg) {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return err
	}
	if o.HasUserText {
		line.FirstUserText = &o.UserText
	}
	if o.HasSnippet {
		line.FirstAssistantSnippet = &o.Snippet
	}
	if m.Head != 0 {
		err = st.Walk(m.ID, m.Head, 0, func(n *session.Node) bool {
			if session.IsRealUserTurn(&n.Msg) {
				line.CompactionPrefixEnd = n.Depth - 1
				return false
			}
			return true
		})
		if err != nil {
			return err
		}
	}
	return c.PrintJSON(line)
}

func exportNodes(c *command.Ctx, st store.Handle, m *session.Meta) error {
	if !c.Bool("tree") {
		var line []byte
		return st.Path(m.ID, m.Head, func(n *session.Node) error {
			line = session.AppendNodeLine(line[:0], m.ID, n, false, nil)
			_, err := c.Out().Write(line)
			return err
		})
	}
	_, err := writeTree(c.Out(), st, m)
	return err
}

// writeTree writes the lines of every node of the session, which say
// which node is the head and which the branches end at ("" for an unnamed
// one), so that importing them makes the same session. It returns the
// blobs the nodes point at.
func writeTree(w io.Writer, st store.Handle, m *session.Meta) ([][32]byte, error) {
	names := m.BranchNames()
	var line []byte
	var blobs [][32]byte
	seen := map[[32]byte]bool{}
	err := st.Nodes(m.ID, func(seq uint64, raw []byte) error {
		n, err := record.DecodeNode(seq, raw)
		if err != nil {
			return err
		}
		if bytes.Contains(raw, []byte(session.BlobRefPrefix)) {
			for _, sum := range session.BlobRefs([]session.Node{n}) {
				if !seen[sum] {
					seen[sum] = true
					blobs = append(blobs, sum)
				}
			}
		}
		line = session.AppendNodeLine(line[:0], m.ID, &n, n.Seq == m.Head, names[n.Seq])
		_, err = w.Write(line)
		return err
	})
	return blobs, err
}

// exportBackup writes everything the session holds (record.BackupReader
// reads it back): its metadata, every node as a tree's jsonl line, and the
// blobs they point at. A pointer to no blob the store holds (text that
// only looks like one) has none to save.
func exportBackup(w *record.BackupWriter, st store.Handle, m *session.Meta) error {
	if err := w.Header(m); err != nil {
		return err
	}
	blobs, err := writeTree(w, st, m)
	if err != nil {
		return err
	}
	for _, sum := range blobs {
		data, err := st.Blob(m.ID, sum)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if err := w.Blob(m.ID, data); err != nil {
			return err
		}
	}
	return nil
}

func exportMarkdown(c *command.Ctx, st store.Handle, m *session.Meta) error {
	mw := render.NewMarkdownWriter(c.Out())
	if err := mw.Header(m); err != nil {
		return err
	}
	return st.Path(m.ID, m.Head, func(n *session.Node) error { return mw.Message(&n.Msg) })
}

func exportText(c *command.Ctx, st store.Handle, m *session.Meta) error {
	return st.Path(m.ID, m.Head, func(n *session.Node) error { return render.TranscriptText(c.Out(), &n.Msg) })
}

func exportHTML(c *command.Ctx, st store.Handle, m *session.Meta) error {
	hw := format.NewHTMLWriter(c.Out())
	if err := hw.Header(m); err != nil {
		return err
	}
	if err := st.Path(m.ID, m.Head, hw.Message); err != nil {
		return err
	}
	return hw.Footer()
}

// requestExporter checks the request flags and reads --tools before the
// store is opened.
func requestExporter(c *command.Ctx) (exporter, error) {
	opt := request.Options{Model: c.String("model"), MaxTokens: c.Uint64("max-tokens")}
	var build func(string, []session.Message, request.Options) ([]byte, error)
	var api string
	var hottest float64
	toolName := request.AnthropicToolName
	switch c.String("provider") {
	case "anthropic":
		build, api, hottest = request.Anthropic, "the Messages API", 1
	case "openai":
		build, api, hottest, toolName = request.OpenAI, "the Chat Completions API", 2, request.OpenAIToolName
	case "":
		return nil, command.Usagef("--format request needs --provider anthropic or openai")
	default:
		return nil, command.Usagef("unknown provider %q", c.String("provider")).WithHint("providers: anthropic, openai")
	}
	if opt.Model == "" { // both APIs require it
		return nil, command.Usagef("--format request needs --model, the model to ask").
			WithHint("as the provider names it: --model claude-sonnet-4-5, --model gpt-4.1")
	}
	if c.IsSet("temperature") {
		t := c.Float64("temperature")
		if math.IsNaN(t) || math.IsInf(t, 0) || t < 0 {
			return nil, command.Usagef("--temperature %s is not a temperature", c.String("temperature"))
		}
		if t > hottest {
			return nil, command.Usagef("--temperature %s is past %g, the most %s takes", c.String("temperature"), hottest, api)
		}
		opt.Temperature = &t
	}
	if c.IsSet("tools") {
		data, err := c.ReadText(c.String("tools"), "a --tools file")
		if err != nil {
			return nil, err
		}
		if err := format.CheckTools(data); err != nil {
			return nil, command.DataErrf("%s: %v", c.String("tools"), err)
		}
		if err := request.CheckTools(data, toolName); err != nil {
			return nil, command.DataErrf("%s: %v", c.String("tools"), err)
		}
		opt.Tools = data
	}
	switch {
	case c.Bool("prefill") && c.Bool("no-prefill"):
		return nil, command.Usagef("--prefill and --no-prefill exclude each other")
	case c.Bool("prefill"):
		opt.Trailing = request.TrailingKeep
	case c.Bool("no-prefill"):
		opt.Trailing = request.TrailingDrop
	}
	return func(c *command.Ctx, st store.Handle, m *session.Meta) error {
		var msgs []session.Message
		if err := st.Path(m.ID, m.Head, func(n *session.Node) error { msgs = append(msgs, n.Msg); return nil }); err != nil {
			return err
		}
		body, err := build(m.SystemPrompt, msgs, opt)
		if err != nil {
			return requestError(m.ID, err)
		}
		_, err = c.Out().Write(append(body, '\n'))
		return err
	}, nil
}

// requestError is the refusal of a body the provider would refuse.
func requestError(id string, err error) error {
	short := id[:min(8, len(id))]
	switch err.(type) {
	case *request.PrefillError:
		return command.DataErrf("session %s ends with an assistant message, which the Messages API takes as a prefill", short).
			WithHint("append the next user turn first (wc-append %s --role user --text ...),", short).
			WithHint("or give --no-prefill to leave that message out, or --prefill to send it as a prefill")
	case *request.NothingToSendError:
		return command.DataErrf("session %s has no message to send", short)
	}
	return err
}
