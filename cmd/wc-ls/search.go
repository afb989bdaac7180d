package main

import (
	"strconv"
	"time"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/pkg/session/store"
)

// search prints the sessions --search finds, best first: the store's lines
// (the listing row with seq, snippet and score), or a table of them.
func search(c *command.Ctx, q store.ListQuery, table bool) error {
	q.Limit = c.Int("limit")
	if table && !c.IsSet("limit") {
		q.Limit = tableRows
	}
	st, err := c.OpenListing(q, true)
	if err != nil {
		return err
	}
	if !table {
		return listJSON(c, st, q)
	}
	var cells [][]string
	err = st.ListJSON(q, func(line []byte) error {
		r := gjson.GetManyBytes(line, "id", "updated_at", "seq", "score", "snippet")
		updated := r[1].Str
		if t, err := time.Parse(time.RFC3339Nano, updated); err == nil {
			updated = t.Local().Format("2006-01-02 15:04")
		}
		snippet := []rune(r[4].Str)
		if c.Width() == 0 && len(snippet) > 80 {
			snippet = append(snippet[:79], '…')
		}
		cells = append(cells, []string{r[0].Str[:8], updated, strconv.FormatUint(r[2].Uint(), 10),
			strconv.FormatFloat(r[3].Float(), 'f', 2, 64), string(snippet)})
		return nil
	})
	if err != nil {
		return err
	}
	c.Table([]string{"ID", "UPDATED", "SEQ", "SCORE", "SNIPPET"}, cells, 4)
	return nil
}
