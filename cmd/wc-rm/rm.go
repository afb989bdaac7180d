package main

import (
	"bytes"
	"errors"

	"github.com/wctoolkit/wc/cmd/internal/tool"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/client"
)

func remove(c *tool.Ctx) error {
	dryRun, purge := c.Bool("dry-run"), c.Bool("purge")
	refs, err := removalRefs(c, purge)
	if err != nil {
		return err
	}
	var st client.Handle
	switch {
	case dryRun:
		st, err = c.OpenFor(client.Read, refs)
	case purge:
		st, err = c.OpenAlone(client.Write)
	default:
		st, err = c.OpenFor(client.Write, refs)
	}
	if err != nil {
		return err
	}
	ids, err := tool.Resolve(st, refs)
	if err != nil {
		return err
	}
	// All are read before any is removed: a session that cannot be read
	// stops the removal before it starts.
	var metas []session.Meta
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		m, err := st.Meta(id)
		if err != nil {
			return err
		}
		metas = append(metas, m)
	}
	r, ok := st.(client.Remover)
	if !ok {
		return errors.New("this store cannot remove sessions")
	}
	for i := range metas {
		if !dryRun {
			if err := r.DeleteSession(metas[i].ID); err != nil {
				return err
			}
		}
		if err := c.PrintJSON(metas[i].Info()); err != nil {
			return err
		}
	}
	if purge && !dryRun {
		return r.Purge()
	}
	return nil
}

// removalRefs are the sessions to remove. With --purge there may be none:
// no arguments, and stdin a terminal or empty.
func removalRefs(c *tool.Ctx, purge bool) ([]string, error) {
	if !purge || c.Args().Len() > 0 {
		return c.Refs()
	}
	if c.StdinIsTerminal() {
		return nil, nil
	}
	data, err := c.Stdin()
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return nil, err
	}
	return c.StdinRefs()
}
