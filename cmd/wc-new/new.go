package main

import (
	"bytes"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/cmd/internal/tool"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
)

func newSession(c *tool.Ctx) error {
	system, err := c.TextArg("system")
	if err != nil {
		return err
	}
	if c.IsSet("title") && session.SanitizeTitle(c.String("title")) == "" {
		return tool.Usagef("--title is empty")
	}
	if !c.IsSet("import") {
		if c.Args().Len() > 0 {
			return tool.Usagef("unexpected argument %q", c.Args().First()).WithHint("FILE arguments need --import")
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
	meta  session.Meta
	nodes []session.Node
}

// readImports reads and converts every file before the store is touched.
func readImports(c *tool.Ctx, system string) ([]importedSession, error) {
	if kind := c.String("import"); kind != "native" {
		return nil, tool.Usagef("unknown import format %q", kind).WithHint("formats: native")
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
		if !gjson.ValidBytes(data) {
			return nil, tool.DataErrf("%s is not valid JSON", name)
		}
		sh, err := session.DecodeShare(data)
		if err != nil {
			return nil, tool.DataErrf("%s: %v", name, err)
		}
		meta, nodes := session.FromShare(&sh, tool.NewID(), c.Now)
		if c.IsSet("project") || meta.ProjectPath == "" {
			if meta.ProjectPath, err = c.ProjectDir(); err != nil {
				return nil, err
			}
		}
		if c.IsSet("system") {
			meta.SetSystemPrompt(system)
		}
		meta.SetTitleManual(c.String("title"))
		out = append(out, importedSession{meta: meta, nodes: nodes})
	}
	return out, nil
}

func commit(c *tool.Ctx, sessions []importedSession) error {
	st, err := c.Open(store.Write)
	if err != nil {
		return err
	}
	for i := range sessions {
		if err := st.Commit(&sessions[i].meta, sessions[i].nodes); err != nil {
			return err
		}
		if err := c.PrintJSON(sessions[i].meta.Info()); err != nil {
			return err
		}
	}
	return nil
}
