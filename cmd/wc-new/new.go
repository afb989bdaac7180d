package main

import (
	"bytes"

	"github.com/wctoolkit/wc/cmd/internal/tool"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/format"
	"github.com/wctoolkit/wc/pkg/session/store/client"
)

func newSession(c *tool.Ctx) error {
	if c.Bool("restore") {
		return restore(c)
	}
	if c.Bool("new-ids") {
		return tool.Usagef("--new-ids goes with --restore")
	}
	system, err := c.TextArg("system")
	if err != nil {
		return err
	}
	if c.IsSet("title") && session.SanitizeTitle(c.String("title")) == "" {
		return tool.Usagef("--title is empty")
	}
	if !c.IsSet("import") && c.Args().Len() == 0 {
		if c.Bool("sidechains") {
			return tool.Usagef("--sidechains goes with --import")
		}
		project, err := c.ProjectDir()
		if err != nil {
			return err
		}
		meta := session.New(tool.NewID(), project, system, c.Now)
		meta.SetTitleManual(c.String("title"))
		return commit(c, []importedSession{{meta: meta}})
	}
	sessions, err := readImports(c, system)
	if err != nil {
		return err
	}
	return commit(c, sessions)
}

type importedSession struct {
	meta     session.Meta
	nodes    []session.Node
	skipped  map[string]int
	sourceID string
}

// readImports reads and converts every file before the store is touched.
func readImports(c *tool.Ctx, system string) ([]importedSession, error) {
	kind, err := format.ParseKind(c.String("import"))
	if err != nil {
		return nil, tool.Usagef("unknown import format %q", c.String("import")).WithHint("formats: auto, native, claude, codex, opencode, openai, anthropic")
	}
	files := c.Args().Slice()
	if len(files) == 0 {
		files = []string{"-"}
	}
	var out []importedSession
	for _, f := range files {
		name := f
		if f == "-" {
			name = "stdin"
		}
		data, err := c.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, tool.DataErrf("%s is empty", name)
		}
		if session.IsBackup(data) {
			return nil, tool.DataErrf("%s is a backup, not a transcript", name).WithHint("restore it with wc-new --restore")
		}
		imported, err := format.Import(kind, data, format.Options{Sidechains: c.Bool("sidechains")})
		if err != nil {
			return nil, tool.DataErrf("%s: %v", name, err)
		}
		for i := range imported {
			imp := &imported[i]
			if err := checkShareSizes(&imp.Share); err != nil {
				return nil, tool.DataErrf("%s: %v", name, err)
			}
			meta, nodes := session.FromShare(&imp.Share, tool.NewID(), c.Now)
			if c.IsSet("project") || meta.ProjectPath == "" {
				if meta.ProjectPath, err = c.ProjectDir(); err != nil {
					return nil, err
				}
			}
			if c.IsSet("system") {
				meta.SetSystemPrompt(system)
			}
			meta.SetTitleManual(c.String("title"))
			out = append(out, importedSession{meta: meta, nodes: nodes, skipped: imp.Skipped, sourceID: imp.SourceID})
		}
	}
	return out, nil
}

func commit(c *tool.Ctx, sessions []importedSession) error {
	st, err := c.Open(client.Write)
	if err != nil {
		return err
	}
	for i := range sessions {
		if err := st.Commit(&sessions[i].meta, sessions[i].nodes); err != nil {
			return err
		}
		if err := c.PrintJSON(struct {
			session.Info
			SourceID string         `json:"source_id,omitempty"`
			Skipped  map[string]int `json:"skipped,omitempty"`
		}{sessions[i].meta.Info(), sessions[i].sourceID, sessions[i].skipped}); err != nil {
			return err
		}
	}
	return nil
}

// checkShareSizes applies the message size limit to every path of a share.
func checkShareSizes(sh *session.Share) error {
	if err := session.CheckSizes(sh.Messages, false); err != nil {
		return err
	}
	for _, b := range sh.Branches {
		if err := session.CheckSizes(b.Messages, false); err != nil {
			return err
		}
	}
	return nil
}
