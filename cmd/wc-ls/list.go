package main

import (
	"cmp"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wctoolkit/wc/cmd/internal/tool"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
)

type filter struct {
	project      string
	since, until time.Time
	title, grep  string
	fold         bool
}

func list(c *tool.Ctx) error {
	if c.Args().Len() > 0 {
		return tool.Usagef("unexpected argument %q", c.Args().First()).WithHint("filters are flags: see wc-ls --help")
	}
	f, err := readFilter(c)
	if err != nil {
		return err
	}
	order, err := sortOrder(c.String("sort"))
	if err != nil {
		return err
	}
	if c.Bool("json") && c.Bool("table") {
		return tool.Usagef("--json and --table cannot be combined")
	}
	if c.Int("limit") < 0 {
		return tool.Usagef("--limit must not be negative")
	}
	st, err := c.Open(store.Read)
	if err != nil {
		return err
	}
	var metas []session.Meta
	err = st.List(func(m *session.Meta) error {
		if f.keep(m) {
			metas = append(metas, *m)
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortStableFunc(metas, func(a, b session.Meta) int {
		if c.Bool("reverse") {
			return order(b, a)
		}
		return order(a, b)
	})
	var rows []session.Meta
	for i := range metas {
		if limit := c.Int("limit"); limit > 0 && len(rows) == limit {
			break
		}
		if f.grep != "" {
			found, err := contains(st, &metas[i], f.grep, f.fold)
			if err != nil {
				return err
			}
			if !found {
				continue
			}
		}
		rows = append(rows, metas[i])
	}
	if c.Bool("table") || c.StdoutIsTerminal() && !c.Bool("json") {
		printTable(c, rows)
		return nil
	}
	for i := range rows {
		if err := c.PrintJSON(rows[i].Info()); err != nil {
			return err
		}
	}
	return nil
}

func readFilter(c *tool.Ctx) (filter, error) {
	f := filter{title: c.String("title"), grep: c.String("grep"), fold: c.Bool("ignore-case")}
	if c.IsSet("project") {
		p, err := filepath.Abs(c.String("project"))
		if err != nil {
			return f, tool.Usagef("--project %q: %v", c.String("project"), err)
		}
		f.project = p
	}
	for _, b := range []struct {
		flag string
		dst  *time.Time
	}{{"since", &f.since}, {"until", &f.until}} {
		if c.IsSet(b.flag) {
			t, err := tool.ParseTime(c.String(b.flag), c.Now)
			if err != nil {
				return f, err
			}
			*b.dst = t
		}
	}
	if f.fold {
		f.title, f.grep = strings.ToLower(f.title), strings.ToLower(f.grep)
	}
	return f, nil
}

func (f *filter) keep(m *session.Meta) bool {
	if f.project != "" && m.ProjectPath != f.project && !strings.HasPrefix(m.ProjectPath, f.project+"/") && f.project != "/" {
		return false
	}
	if !f.since.IsZero() || !f.until.IsZero() {
		t, err := time.Parse(time.RFC3339Nano, m.UpdatedAt)
		if err != nil || (!f.since.IsZero() && t.Before(f.since)) || (!f.until.IsZero() && !t.Before(f.until)) {
			return false
		}
	}
	if f.title != "" {
		title := m.Title
		if f.fold {
			title = strings.ToLower(title)
		}
		if !strings.Contains(title, f.title) {
			return false
		}
	}
	return true
}

func sortOrder(key string) (func(a, b session.Meta) int, error) {
	switch key {
	case "updated":
		return func(a, b session.Meta) int { return cmpTime(b.UpdatedAt, a.UpdatedAt) }, nil
	case "created":
		return func(a, b session.Meta) int { return cmpTime(b.CreatedAt, a.CreatedAt) }, nil
	case "title":
		return func(a, b session.Meta) int { return cmp.Compare(strings.ToLower(a.Title), strings.ToLower(b.Title)) }, nil
	case "messages":
		return func(a, b session.Meta) int { return cmp.Compare(b.MessageCount, a.MessageCount) }, nil
	case "tokens":
		return func(a, b session.Meta) int { return cmp.Compare(b.Tokens, a.Tokens) }, nil
	}
	return nil, tool.Usagef("unknown --sort key %q", key).WithHint("keys: updated, created, title, messages, tokens")
}

// cmpTime orders RFC 3339 times, which do not sort as text across offsets
// and fraction lengths.
func cmpTime(a, b string) int {
	ta, errA := time.Parse(time.RFC3339Nano, a)
	tb, errB := time.Parse(time.RFC3339Nano, b)
	if errA != nil || errB != nil {
		return cmp.Compare(a, b)
	}
	return ta.Compare(tb)
}

// contains reports whether any stored message of the session holds text.
func contains(st store.Handle, m *session.Meta, text string, fold bool) (bool, error) {
	found := false
	err := st.Nodes(m.ID, func(seq uint64, raw []byte) error {
		n, err := session.DecodeNode(seq, raw)
		if err != nil {
			return err
		}
		if session.MessageContains(&n.Msg, text, fold) {
			found = true
			return errFound
		}
		return nil
	})
	if errors.Is(err, errFound) {
		err = nil
	}
	return found, err
}

var errFound = errors.New("found")

func printTable(c *tool.Ctx, rows []session.Meta) {
	var cells [][]string
	for i := range rows {
		m := &rows[i]
		updated := m.UpdatedAt
		if t, err := time.Parse(time.RFC3339Nano, m.UpdatedAt); err == nil {
			updated = t.Local().Format("2006-01-02 15:04")
		}
		title := []rune(m.Title)
		if len(title) > 60 {
			title = append(title[:59], '…')
		}
		cells = append(cells, []string{m.ID[:8], updated, strconv.FormatUint(m.MessageCount, 10),
			strconv.FormatUint(m.Tokens, 10), string(title)})
	}
	c.Table([]string{"ID", "UPDATED", "MSGS", "TOKENS", "TITLE"}, cells)
}
