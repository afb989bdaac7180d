package main

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
)

func remove(c *command.Ctx) error {
	dryRun, purge := c.Bool("dry-run"), c.Bool("purge")
	rows, err := removalRefs(c, purge)
	if err != nil {
		return err
	}
	refs := make([]string, len(rows))
	for i, r := range rows {
		refs[i] = r.Ref
	}
	var st store.Handle
	switch {
	case dryRun:
		st, err = c.OpenFor(store.Read, refs)
	case purge:
		st, err = c.OpenAlone(store.Write)
	default:
		st, err = c.OpenFor(store.Write, refs)
	}
	if err != nil {
		return err
	}
	ids, err := command.Resolve(st, refs)
	if err != nil {
		return err
	}
	// All are read before any is removed: a session that cannot be read
	// stops the removal before it starts.
	var metas []session.Meta
	seen := map[string]bool{}
	for i, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		m, err := st.Meta(id)
		if err != nil {
			return err
		}
		if c.Bool("if-unchanged") {
			if err := unchanged(rows[i].Row, &m); err != nil {
				return err
			}
		}
		metas = append(metas, m)
	}
	r, ok := st.(store.Remover)
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

// unchanged refuses to remove a session that has changed since the row
// its reference came in (a line of wc-ls, say) was printed: what the row
// says of its updated_at, head and message_count is what the store says.
// Between "wc-ls --empty" and "wc-rm" a pipeline may append to a session.
// It is asked for (--if-unchanged): a row kept as a handle on a session
// ("wc-new > s.json", then work on it) names it whatever it now holds.
func unchanged(row gjson.Result, m *session.Meta) error {
	info := m.Info()
	var differs string
	if u := row.Get("updated_at"); u.Type == gjson.String && u.Str != info.UpdatedAt {
		differs = fmt.Sprintf("its updated_at is %s, the row's %s", info.UpdatedAt, u.Str)
	}
	for _, f := range []struct {
		name string
		now  uint64
	}{{"head", info.Head}, {"message_count", info.MessageCount}} {
		if v, ok := session.WholeNumber(row.Get(f.name)); row.Get(f.name).Type == gjson.Number && (!ok || v != f.now) {
			differs = fmt.Sprintf("its %s is %d, the row's %s", f.name, f.now, row.Get(f.name).Raw)
		}
	}
	if differs == "" {
		return nil
	}
	return (&command.Error{Code: command.ExitFailure, Msg: fmt.Sprintf("session %s changed since it was listed (%s); nothing was removed", m.ID[:8], differs)}).
		WithHint("list the sessions again, and remove those still to go")
}

// removalRefs are the sessions to remove. With --purge there may be none:
// no arguments, and stdin a terminal or empty.
func removalRefs(c *command.Ctx, purge bool) ([]command.RefRow, error) {
	if !purge || c.Args().Len() > 0 {
		return c.RefRows()
	}
	if c.StdinIsTerminal() {
		return nil, nil
	}
	data, err := c.Stdin()
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return nil, err
	}
	return c.StdinRefRows()
}
