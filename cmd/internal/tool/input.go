package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/client"
)

// MaxInput bounds what a command reads from stdin or a file.
const MaxInput = 1 << 30

// StdinIsTerminal reports whether stdin is a person's terminal, which is
// never read as data.
func (c *Ctx) StdinIsTerminal() bool { return c.stdinTTY }

// Stdin reads all of standard input once (empty when it is a terminal). It
// must be valid UTF-8.
func (c *Ctx) Stdin() ([]byte, error) {
	if c.stdinRead {
		return c.stdinData, nil
	}
	c.stdinRead = true
	if c.stdinTTY || c.stdin == nil {
		return nil, nil
	}
	data, err := readAllLimited(c.stdin, "stdin")
	c.stdinData = data
	// In a pipe this command started beside the one before it, whose
	// session may be newer than our start: what this one writes is dated
	// after its input came.
	c.Now = time.Now()
	return data, err
}

// ReadFile reads a file the user named ("-" is stdin) under the same rules.
func (c *Ctx) ReadFile(path string) ([]byte, error) {
	if path == "-" {
		return c.Stdin()
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, NotFoundf("file %s not found", path)
		}
		return nil, &Error{Code: ExitFailure, Msg: "cannot read " + path + ": " + pathErrText(err)}
	}
	defer f.Close()
	return readAllLimited(f, path)
}

func pathErrText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func readAllLimited(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
	if err != nil {
		return nil, &Error{Code: ExitFailure, Msg: "reading " + name + ": " + pathErrText(err)}
	}
	if len(data) > MaxInput {
		return nil, DataErrf("%s is larger than %d MiB", name, MaxInput>>20)
	}
	if !utf8.Valid(data) {
		off := invalidUTF8Offset(data)
		return nil, DataErrf("%s is not valid UTF-8 (byte %d)", name, off)
	}
	return data, nil
}

func invalidUTF8Offset(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// TextArg reads a flag value that may name a file: "@FILE" reads FILE,
// "@-" reads stdin, "@@…" is a literal leading "@".
func (c *Ctx) TextArg(flag string) (string, error) {
	v := c.String(flag)
	switch {
	case strings.HasPrefix(v, "@@"):
		return v[1:], nil
	case strings.HasPrefix(v, "@") && len(v) > 1:
		data, err := c.ReadFile(v[1:])
		return string(data), err
	}
	return v, nil
}

// Refs returns the session references of the command: its arguments, or,
// when there are none, every reference on stdin. On stdin a reference is a
// line holding an id or prefix, a JSON string, or a JSON object with an
// "id" (the output of any wc command), in any mix; arrays of those work too.
func (c *Ctx) Refs() ([]string, error) {
	rows, err := c.RefRows()
	return refsOf(rows), err
}

// A RefRow is a session reference and, when it came as a JSON object (a
// line a wc command printed), that object: it says which state of the
// session it saw.
type RefRow struct {
	Ref string
	Row gjson.Result // the object; its Type is gjson.Null for a plain reference
}

// RefRows is Refs, with the rows the references came in.
func (c *Ctx) RefRows() ([]RefRow, error) {
	if args := c.Args().Slice(); len(args) > 0 {
		rows := make([]RefRow, len(args))
		for i, a := range args {
			rows[i].Ref = a
		}
		return rows, nil
	}
	return c.StdinRefRows()
}

// StdinRefs reads the session references on stdin.
func (c *Ctx) StdinRefs() ([]string, error) {
	rows, err := c.StdinRefRows()
	return refsOf(rows), err
}

// StdinRefRows reads the session references on stdin, with their rows.
func (c *Ctx) StdinRefRows() ([]RefRow, error) {
	if c.stdinTTY {
		return nil, Usagef("no session given").WithHint("pass a session id, or pipe the output of another wc command")
	}
	data, err := c.Stdin()
	if err != nil {
		return nil, err
	}
	rows, err := parseRefRows(data)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, Usagef("no session given: stdin is empty").WithHint("pass a session id, or pipe the output of another wc command")
	}
	return rows, nil
}

func refsOf(rows []RefRow) []string {
	if rows == nil {
		return nil
	}
	refs := make([]string, len(rows))
	for i, r := range rows {
		refs[i] = r.Ref
	}
	return refs
}

// ParseRefs reads the stdin reference grammar.
func ParseRefs(data []byte) ([]string, error) {
	rows, err := parseRefRows(data)
	return refsOf(rows), err
}

func parseRefRows(data []byte) ([]RefRow, error) {
	if err := session.CheckNesting(data); err != nil {
		return nil, DataErrf("stdin: %v", err)
	}
	var refs []RefRow
	line := 1
	for pos := 0; pos < len(data); {
		c := data[pos]
		switch {
		case c == '\n':
			line++
			pos++
			continue
		case c == ' ' || c == '\t' || c == '\r':
			pos++
			continue
		case c == '{' || c == '[' || c == '"':
			dec := json.NewDecoder(bytes.NewReader(data[pos:]))
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, DataErrf("stdin line %d: invalid JSON", line)
			}
			end := pos + int(dec.InputOffset())
			found, err := refsFromJSON(gjson.ParseBytes(raw), line)
			if err != nil {
				return nil, err
			}
			refs = append(refs, found...)
			line += bytes.Count(data[pos:end], []byte{'\n'})
			pos = end
			continue
		}
		end := bytes.IndexByte(data[pos:], '\n')
		if end < 0 {
			end = len(data) - pos
		}
		word := strings.TrimSpace(string(data[pos : pos+end]))
		if strings.ContainsAny(word, " \t") {
			return nil, DataErrf("stdin line %d: %q is not a session reference", line, shorten(word))
		}
		refs = append(refs, RefRow{Ref: word})
		pos += end
	}
	return refs, nil
}

func refsFromJSON(v gjson.Result, line int) ([]RefRow, error) {
	switch {
	case v.Type == gjson.String:
		return []RefRow{{Ref: v.Str}}, nil
	case v.IsObject():
		id := v.Get("id")
		if id.Type != gjson.String {
			return nil, DataErrf(`stdin line %d: a JSON object without a string "id"`, line)
		}
		return []RefRow{{Ref: id.Str, Row: v}}, nil
	case v.IsArray():
		var out []RefRow
		var err error
		v.ForEach(func(_, el gjson.Result) bool {
			var found []RefRow
			found, err = refsFromJSON(el, line)
			out = append(out, found...)
			return err == nil
		})
		return out, err
	}
	return nil, DataErrf("stdin line %d: not a session reference", line)
}

func shorten(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Resolve turns references into session ids, all before anything is
// written, so that one bad reference changes nothing. Duplicates are kept:
// a batch does what it was told, in order.
func Resolve(st client.Handle, refs []string) ([]string, error) {
	ids := make([]string, len(refs))
	for i, r := range refs {
		id, err := st.Resolve(r)
		if errors.Is(err, client.ErrAmbiguous) {
			return nil, ambiguous(st, r, err)
		}
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

// maxCandidates bounds the sessions an ambiguous reference's hints list.
const maxCandidates = 10

// ambiguous is the error of a reference several sessions match, with the
// candidates as hints, as git lists them for a short object name.
func ambiguous(st client.Handle, ref string, err error) error {
	digits, _ := client.RefDigits(ref)
	var lines []string
	more := 0
	lerr := st.ListInfo(client.ListQuery{}, func(info *session.Info) error {
		if !strings.HasPrefix(strings.ReplaceAll(info.ID, "-", ""), digits) {
			return nil
		}
		if len(lines) == maxCandidates {
			more++
			return nil
		}
		lines = append(lines, "  "+info.ID+"  "+info.Title)
		return nil
	})
	te := Usagef("%s", err.Error())
	if lerr == nil && len(lines) > 0 {
		te.WithHint("the candidates are:")
		te.Hints = append(te.Hints, lines...)
		if more > 0 {
			te.WithHint("  and %d more", more)
		}
	}
	return te.WithHint("give more hex digits of the id")
}
