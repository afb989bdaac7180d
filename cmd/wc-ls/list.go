package main

import (
	"bytes"
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/textindex"
)

// tableRows is how many sessions a table shows unless --limit says.
const tableRows = 20

// listLineBytes is about what a session's line of JSON takes (450 bytes
// in the benchmark's store).
const listLineBytes = 512

func list(c *command.Ctx) error {
	if c.Args().Len() > 0 {
		return command.Usagef("unexpected argument %q", c.Args().First()).WithHint("filters are flags: see wc-ls --help")
	}
	q, err := readQuery(c)
	if err != nil {
		return err
	}
	order, err := sortOrder(c.String("sort"))
	if err != nil {
		return err
	}
	if c.Bool("json") && c.Bool("table") {
		return command.Usagef("--json and --table cannot be combined")
	}
	if c.Int("limit") < 0 {
		return command.Usagef("--limit must not be negative")
	}
	table := c.Bool("table") || c.StdoutIsTerminal() && !c.Bool("json")
	if q.Search != "" {
		return search(c, q, table)
	}
	// A table is for a person: the newest tableRows, and how many more.
	// Counting them needs all the rows; a grep stops at one more.
	limit, shorten := c.Int("limit"), table && !c.IsSet("limit")
	if shorten {
		limit = 0
		if q.Grep != "" {
			limit = tableRows + 1
		}
	}
	var rows []session.Info
	var st store.Handle
	if order == nil && !c.Bool("empty") {
		// The store keeps sessions in update order: it filters, greps and
		// stops at the limit itself.
		q.Oldest, q.Limit = c.Bool("reverse"), limit
		if st, err = c.OpenListing(q, !table); err != nil {
			return err
		}
		if !table {
			// Lines the store process rendered: none to decode or encode.
			if q.Limit > 0 {
				// Room for them at once rather than growing by doubling
				// through ten sizes of buffer (the listing rows of
				// wcbench run). Not for a limit far above the sessions
				// there are.
				c.Out().Grow(min(q.Limit, 1000) * listLineBytes)
			}
			return listJSON(c, st, q)
		}
		err = st.ListInfo(q, func(info *session.Info) error {
			rows = append(rows, *info)
			return nil
		})
		if err == nil {
			err = upgradeTitles(st, rows)
		}
	} else {
		if st, err = c.Open(store.Read); err != nil {
			return err
		}
		rows, err = sortedRows(c, st, q, order, limit)
	}
	if err != nil {
		return err
	}
	if table {
		more := 0
		if shorten && len(rows) > tableRows {
			more = len(rows) - tableRows
			rows = rows[:tableRows]
		}
		printTable(c, rows)
		switch {
		case more > 0 && q.Grep != "":
			c.Out().WriteString("… and more (wc-ls -n 0 lists all)\n")
		case more > 0:
			fmt.Fprintf(c.Out(), "… and %d more (wc-ls -n 0 lists all)\n", more)
		}
		return nil
	}
	for i := range rows {
		if err := c.PrintJSON(&rows[i]); err != nil {
			return err
		}
	}
	return nil
}

// sortedRows lists the sessions q selects in another order than the
// store's (nil: the store's, for --empty): all of them are read (the
// store greps, from its index) and sorted (sessions that compare equal in
// id order, in either direction), until the limit.
func sortedRows(c *command.Ctx, st store.Handle, q store.ListQuery, order func(a, b *session.Info) int, limit int) ([]session.Info, error) {
	reverse := c.Bool("reverse")
	onlyEmpty := c.Bool("empty")
	if order == nil {
		q.Oldest = reverse
	}
	var infos []session.Info
	err := st.ListInfo(q, func(info *session.Info) error {
		if !onlyEmpty || isEmpty(info) {
			infos = append(infos, *info)
		}
		return nil
	})
	if err == nil {
		err = upgradeTitles(st, infos) // before sorting: a title may sort elsewhere
	}
	if err != nil {
		return nil, err
	}
	if order != nil {
		slices.SortFunc(infos, func(a, b session.Info) int {
			r := order(&a, &b)
			if reverse {
				r = -r
			}
			if r != 0 {
				return r
			}
			return strings.Compare(a.ID, b.ID)
		})
	}
	if limit > 0 && len(infos) > limit {
		infos = infos[:limit]
	}
	return infos, nil
}

// listJSON prints the lines the store process rendered. A session whose
// title is still a placeholder while it holds user messages is shown with
// the title of its first prompt, as whycodes lists it; the lines from the
// first such one on wait until the listing ends, since reading its first
// prompt takes the connection.
func listJSON(c *command.Ctx, st store.Handle, q store.ListQuery) error {
	var held [][]byte
	err := st.ListJSON(q, func(line []byte) error {
		if held == nil && !placeholderLine(line) {
			return c.PrintJSONLine(line)
		}
		held = append(held, bytes.Clone(line))
		return nil
	})
	if err != nil {
		return err
	}
	for _, line := range held {
		if placeholderLine(line) {
			if line, err = upgradedLine(st, line); err != nil {
				return err
			}
		}
		if err := c.PrintJSONLine(line); err != nil {
			return err
		}
	}
	return nil
}

func placeholderLine(line []byte) bool {
	if !bytes.Contains(line, []byte(`"title_source":"default"`)) && !bytes.Contains(line, []byte(`"title_source":""`)) {
		return false
	}
	return gjson.GetBytes(line, "user_message_count").Uint() > 0
}

// upgradedLine is line with the title its session's first prompt gives, if
// any; the other members stay as the store wrote them.
func upgradedLine(st store.Handle, line []byte) ([]byte, error) {
	r := gjson.GetManyBytes(line, "id", "title", "title_source", "user_message_count", "head")
	m := session.Meta{ID: r[0].Str, Title: r[1].Str, TitleSource: session.TitleSource(r[2].Str), UserMessageCount: r[3].Uint(), Head: r[4].Uint()}
	changed, err := command.UpgradeTitle(st, &m)
	if err != nil || !changed {
		return line, err
	}
	if line, err = sjson.SetBytes(line, "title", m.Title); err != nil {
		return nil, err
	}
	return sjson.SetBytes(line, "title_source", string(m.TitleSource))
}

// upgradeTitles gives each listed session on a placeholder title the title
// of its first prompt, as upgradedLine does.
func upgradeTitles(st store.Handle, rows []session.Info) error {
	for i := range rows {
		r := &rows[i]
		m := session.Meta{ID: r.ID, Title: r.Title, TitleSource: r.TitleSource, UserMessageCount: r.UserMessageCount, Head: r.Head}
		if _, err := command.UpgradeTitle(st, &m); err != nil {
			return err
		}
		r.Title, r.TitleSource = m.Title, m.TitleSource
	}
	return nil
}

// isEmpty reports a session without a message on any path: what wc-new
// printed, when nothing came of it (the next command of its pipeline
// failed).
func isEmpty(info *session.Info) bool { return info.MessageCount == 0 && info.Branches == 0 }

func readQuery(c *command.Ctx) (store.ListQuery, error) {
	q := store.ListQuery{Title: c.String("title"), Grep: c.String("grep"), Search: c.String("search"), Fold: c.Bool("ignore-case")}
	if c.IsSet("search") {
		if _, err := textindex.ParseQuery(q.Search); err != nil {
			return q, command.Usagef("--search: %v", err)
		}
		for _, f := range []string{"sort", "reverse", "grep", "empty"} {
			if c.IsSet(f) {
				return q, command.Usagef("--search cannot be combined with --%s: a search ranks its sessions itself", f)
			}
		}
	}
	var err error
	if q.Shard, err = c.Shard(); err != nil {
		return q, err
	}
	if c.IsSet("project") {
		p, err := filepath.Abs(c.String("project"))
		if err != nil {
			return q, command.Usagef("--project %q: %v", c.String("project"), err)
		}
		q.Project = p
	}
	for _, b := range []struct {
		flag string
		dst  *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if c.IsSet(b.flag) {
			t, err := command.ParseTime(c.String(b.flag), c.Now)
			if err != nil {
				return q, err
			}
			*b.dst = t
		}
	}
	return q, nil
}

// sortOrder compares two sessions in the order of key, largest or newest
// first; nil for "updated", the store's own order.
func sortOrder(key string) (func(a, b *session.Info) int, error) {
	switch key {
	case "updated":
		return nil, nil
	case "created":
		return func(a, b *session.Info) int { return cmpTime(b.CreatedAt, a.CreatedAt) }, nil
	case "title":
		return func(a, b *session.Info) int { return cmp.Compare(strings.ToLower(a.Title), strings.ToLower(b.Title)) }, nil
	case "messages":
		return func(a, b *session.Info) int { return cmp.Compare(b.MessageCount, a.MessageCount) }, nil
	case "tokens":
		return func(a, b *session.Info) int { return cmp.Compare(b.Tokens, a.Tokens) }, nil
	}
	return nil, command.Usagef("unknown --sort key %q", key).WithHint("keys: updated, created, title, messages, tokens")
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

func printTable(c *command.Ctx, rows []session.Info) {
	var cells [][]string
	for i := range rows {
		m := &rows[i]
		updated := m.UpdatedAt
		if t, err := time.Parse(time.RFC3339Nano, m.UpdatedAt); err == nil {
			updated = t.Local().Format("2006-01-02 15:04")
		}
		title := []rune(m.Title)
		if c.Width() == 0 && len(title) > 60 {
			title = append(title[:59], '…')
		}
		cells = append(cells, []string{m.ID[:8], updated, strconv.FormatUint(m.MessageCount, 10),
			strconv.FormatUint(m.Tokens, 10), string(title)})
	}
	c.Table([]string{"ID", "UPDATED", "MSGS", "TOKENS", "TITLE"}, cells, 4)
}
