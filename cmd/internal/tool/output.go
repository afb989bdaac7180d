package tool

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
)

// jsonPrinter writes itself as PrintJSON would through encoding/json,
// without its reflection (whose first use costs a command about 0.1 ms).
type jsonPrinter interface {
	AppendPrintJSON(dst []byte) []byte
}

// PrintJSON writes v as one line of JSON, without HTML escaping.
func (c *Ctx) PrintJSON(v any) error {
	var line []byte
	switch v := v.(type) {
	case session.Info:
		line = appendInfo(&v)
	case *session.Info:
		line = appendInfo(v)
	case jsonPrinter:
		line = v.AppendPrintJSON(make([]byte, 0, 512))
	}
	if line != nil {
		_, err := c.out.Write(append(line, '\n'))
		return err
	}
	enc := json.NewEncoder(&c.out)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// PrintJSONLine writes line, one JSON value, and a newline.
func (c *Ctx) PrintJSONLine(line []byte) error {
	if _, err := c.out.Write(line); err != nil {
		return err
	}
	return c.out.WriteByte('\n')
}

// appendInfo is info's line, or nil for what encoding/json must answer: a
// nil pointer (null), a cost that is not a number (an error).
func appendInfo(info *session.Info) []byte {
	if info == nil || math.IsNaN(info.Cost.USD) || math.IsInf(info.Cost.USD, 0) {
		return nil
	}
	return session.AppendInfoJSON(make([]byte, 0, 512), info)
}

// Table writes rows as aligned columns for a terminal.
func (c *Ctx) Table(header []string, rows [][]string) {
	tw := tabwriter.NewWriter(&c.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// ParseTime reads --since/--until: an RFC 3339 time, a date (YYYY-MM-DD, in
// UTC), or an age such as 90m, 36h or 7d before now.
func ParseTime(s string, now time.Time) (time.Time, error) {
	const maxAgeDays = 10_000_000 // 27,000 years
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		// A Duration of days wraps past 106,751 of them; AddDate does not.
		if _, err := fmt.Sscanf(days, "%d", &n); err == nil && n >= 0 && n <= maxAgeDays && fmt.Sprint(n) == days {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, Usagef("%q is not a time: use RFC 3339, YYYY-MM-DD, or an age like 36h or 7d", s)
}

// Progress returns a function that shows "label done/total" on stderr, and
// only when stderr is a terminal: logs and pipes get nothing.
func (c *Ctx) Progress(label string, total int) func(done int) {
	if !isTerminal(c.App.ErrWriter) || total < 2 {
		return func(int) {}
	}
	return func(done int) {
		fmt.Fprintf(c.App.ErrWriter, "\r%s %d/%d", label, done, total)
		c.progressShown = done != total
		if done == total {
			fmt.Fprint(c.App.ErrWriter, clearLine)
		}
	}
}

// clearLine takes a progress line off the terminal.
const clearLine = "\r\033[K"
