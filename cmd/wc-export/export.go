package main

import (
	"encoding/hex"
	"github.com/wctoolkit/wc/pkg/session/format"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/wctoolkit/wc/cmd/internal/tool"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/client"
)

type exporter func(c *tool.Ctx, st client.Handle, m *session.Meta) error

func export(c *tool.Ctx) error {
	run, err := pickFormat(c)
	if err != nil {
		return err
	}
	refs, err := c.Refs()
	if err != nil {
		return err
	}
	st, err := c.OpenFor(client.Read, refs)
	if err != nil {
		return err
	}
	ids, err := tool.Resolve(st, refs)
	if err != nil {
		return err
	}
	for _, id := range ids {
		m, err := st.Meta(id)
		if err != nil {
			return err
		}
		if err := run(c, st, &m); err != nil {
			return err
		}
	}
	return nil
}

func pickFormat(c *tool.Ctx) (exporter, error) {
	if c.IsSet("blob") {
		if c.IsSet("format") || c.Bool("tree") {
			return nil, tool.Usagef("--blob prints one blob: it takes no --format or --tree")
		}
		sum, err := hex.DecodeString(strings.TrimPrefix(c.String("blob"), session.BlobRefPrefix))
		if err != nil || len(sum) != 32 {
			return nil, tool.Usagef("--blob %q is not a sha256 in hex", c.String("blob"))
		}
		return func(c *tool.Ctx, st client.Handle, m *session.Meta) error {
			data, err := st.Blob(m.ID, [32]byte(sum))
			if err != nil {
				return err
			}
			_, err = c.Out().Write(data)
			return err
		}, nil
	}
	if c.Bool("tree") && c.String("format") != "jsonl" {
		return nil, tool.Usagef("--tree goes with --format jsonl")
	}
	switch c.String("format") {
	case "json":
		return exportShare, nil
	case "jsonl":
		return exportNodes, nil
	case "markdown", "md":
		return exportMarkdown, nil
	case "text":
		return exportText, nil
	case "info":
		return func(c *tool.Ctx, _ client.Handle, m *session.Meta) error { return c.PrintJSON(m.Info()) }, nil
	case "html":
		return exportHTML, nil
	case "request":
		return requestExporter(c)
	case "summary":
		secs, err := durationSeconds(c.String("duration"))
		if err != nil {
			return nil, err
		}
		return func(c *tool.Ctx, _ client.Handle, m *session.Meta) error {
			model := c.String("model")
			if model == "" {
				model = "unknown"
			}
			_, err := c.Out().WriteString(session.ExitSummary(m, secs, model, c.String("binary")))
			return err
		}, nil
	}
	return nil, tool.Usagef("unknown format %q", c.String("format")).WithHint("formats: json, jsonl, markdown, text, info, summary, html, request")
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
		return 0, tool.Usagef("--duration %q is not a duration", s)
	}
	return uint64(d / time.Second), nil
}

func exportShare(c *tool.Ctx, st client.Handle, m *session.Meta) error {
	t, err := tool.LoadTree(st, m.ID)
	if err != nil {
		return err
	}
	_, err = c.Out().Write(append(session.AppendShare(nil, m, t), '\n'))
	return err
}

func exportNodes(c *tool.Ctx, st client.Handle, m *session.Meta) error {
	tree := c.Bool("tree")
	// A tree's lines say which node is the head and which the branches end
	// at ("" for an unnamed one), so that importing them makes the same
	// session.
	names := map[uint64][]string{}
	if tree {
		for _, b := range m.Branches {
			names[b.Seq] = append(names[b.Seq], b.Name)
		}
	}
	var line []byte
	write := func(n *session.Node) error {
		line = append(line[:0], `{"id":"`...)
		line = append(line, m.ID...)
		line = append(line, `","seq":`...)
		line = strconv.AppendUint(line, n.Seq, 10)
		line = append(line, `,"parent":`...)
		line = strconv.AppendUint(line, n.Parent, 10)
		if tree && n.Seq == m.Head {
			line = append(line, `,"head":true`...)
		}
		if len(names[n.Seq]) > 0 {
			line = append(line, `,"branches":`...)
			line = session.AppendJSONStrings(line, names[n.Seq])
		}
		line = append(line, `,"message":`...)
		line = n.Msg.AppendJSON(line)
		line = append(line, "}\n"...)
		_, err := c.Out().Write(line)
		return err
	}
	if !tree {
		return st.Path(m.ID, m.Head, write)
	}
	return st.Nodes(m.ID, func(seq uint64, raw []byte) error {
		n, err := session.DecodeNode(seq, raw)
		if err != nil {
			return err
		}
		return write(&n)
	})
}

func exportMarkdown(c *tool.Ctx, st client.Handle, m *session.Meta) error {
	mw := session.NewMarkdownWriter(c.Out())
	if err := mw.Header(m); err != nil {
		return err
	}
	return st.PathRaw(m.ID, m.Head, mw.StoredNode)
}

func exportText(c *tool.Ctx, st client.Handle, m *session.Meta) error {
	return st.Path(m.ID, m.Head, func(n *session.Node) error { return session.ConversationText(c.Out(), &n.Msg) })
}

func exportHTML(c *tool.Ctx, st client.Handle, m *session.Meta) error {
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
func requestExporter(c *tool.Ctx) (exporter, error) {
	opt := format.RequestOptions{Model: c.String("model"), MaxTokens: c.Uint64("max-tokens")}
	if c.IsSet("temperature") {
		t := c.Float64("temperature")
		if math.IsNaN(t) || math.IsInf(t, 0) || t < 0 {
			return nil, tool.Usagef("--temperature %s is not a temperature", c.String("temperature"))
		}
		opt.Temperature = &t
	}
	if c.IsSet("tools") {
		data, err := c.ReadText(c.String("tools"), "a --tools file")
		if err != nil {
			return nil, err
		}
		if err := format.CheckTools(data); err != nil {
			return nil, tool.DataErrf("%s: %v", c.String("tools"), err)
		}
		opt.Tools = data
	}
	var build func(string, []session.Message, format.RequestOptions) []byte
	switch c.String("provider") {
	case "anthropic":
		build = format.AnthropicRequest
	case "openai":
		build = format.OpenAIRequest
	case "":
		return nil, tool.Usagef("--format request needs --provider anthropic or openai")
	default:
		return nil, tool.Usagef("unknown provider %q", c.String("provider")).WithHint("providers: anthropic, openai")
	}
	return func(c *tool.Ctx, st client.Handle, m *session.Meta) error {
		var msgs []session.Message
		if err := st.Path(m.ID, m.Head, func(n *session.Node) error { msgs = append(msgs, n.Msg); return nil }); err != nil {
			return err
		}
		_, err := c.Out().Write(append(build(m.SystemPrompt, msgs, opt), '\n'))
		return err
	}, nil
}
