package command

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/sys/unix"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// jsonPrinter writes itself as PrintJSON would through encoding/json,
// without its reflection, whose first use shows in a command's start
// (BenchmarkRunAppend).
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
	return record.AppendInfoJSON(make([]byte, 0, 512), info)
}

// Table writes rows as aligned columns for a terminal, two spaces apart.
// When the terminal's width is known (Width), the cells of column flex are
// cut to make each line fit it, and a line is never longer: a table that
// wraps cannot be read.
func (c *Ctx) Table(header []string, rows [][]string, flex int) {
	all := append([][]string{header}, rows...)
	widths := make([]int, len(header))
	for _, r := range all {
		for i, cell := range r {
			widths[i] = max(widths[i], cellWidth(cell))
		}
	}
	if width := c.Width(); width > 0 {
		fixed := 2 * (len(widths) - 1)
		for i, w := range widths {
			if i != flex {
				fixed += w
			}
		}
		widths[flex] = max(min(widths[flex], width-fixed), len(header[flex]))
		for _, r := range rows {
			r[flex] = truncateCells(r[flex], widths[flex])
		}
	}
	for _, r := range all {
		var line strings.Builder
		for i, cell := range r {
			line.WriteString(cell)
			if i < len(r)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-cellWidth(cell)+2))
			}
		}
		text := line.String()
		if width := c.Width(); width > 0 {
			text = truncateCells(text, width)
		}
		c.out.WriteString(text + "\n")
	}
}

// Width is the terminal's width in columns, for tables: stdout's when it
// is a terminal, else $COLUMNS; 0 when neither says.
func (c *Ctx) Width() int {
	if f, ok := c.App.Writer.(*os.File); ok && c.stdoutTTY {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 0
}

// cellWidth is how many terminal columns s takes: two for a wide (East
// Asian, emoji) character, none for a combining mark, one for the rest.
func cellWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

func runeWidth(r rune) int {
	switch {
	case unicode.Is(unicode.Mn, r) || r == 0x200d:
		return 0
	case r >= 0x1100 && r <= 0x115f, r >= 0x2e80 && r <= 0xa4cf && r != 0x303f, r >= 0xac00 && r <= 0xd7a3,
		r >= 0xf900 && r <= 0xfaff, r >= 0xfe30 && r <= 0xfe4f, r >= 0xff00 && r <= 0xff60, r >= 0xffe0 && r <= 0xffe6,
		r >= 0x1f300 && r <= 0x1f64f, r >= 0x1f900 && r <= 0x1f9ff, r >= 0x20000 && r <= 0x3fffd:
		return 2
	}
	return 1
}

// truncateCells cuts s to at most n columns, ending it with "…" if cut.
func truncateCells(s string, n int) string {
	if cellWidth(s) <= n {
		return s
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		w := runeWidth(r)
		if used+w > n-1 {
			break
		}
		b.WriteRune(r)
		used += w
	}
	if n > 0 {
		b.WriteString("…")
	}
	return b.String()
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
