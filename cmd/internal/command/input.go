package command

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
)

// The limits on input, the same in every command: every input is read
// through one of them, refused at it (status 65, or 2 for a reference)
// with its size as given, and never held whole beyond it.
const (
	// MaxInput bounds one stream: the messages, sessions or references
	// on stdin, or an imported file.
	MaxInput = 1 << 30
	// MaxText bounds one text or value that becomes one message or one
	// member of the metadata: raw text on stdin, --file, --summary,
	// --report, --native, --tools, a --system @FILE. A message's JSON has
	// the same limit (session.MaxMessageBytes).
	MaxText = session.MaxMessageBytes
	// maxRef bounds a session reference alone on its line of stdin: an
	// id is 36 bytes.
	maxRef = 256
)

// StdinIsTerminal reports whether stdin is a person's terminal, which is
// never read as data.
func (c *Ctx) StdinIsTerminal() bool { return c.stdinTTY }

// Stdin reads all of standard input once (empty when it is a terminal), a
// stream of at most MaxInput bytes. It must be valid UTF-8.
func (c *Ctx) Stdin() ([]byte, error) { return c.readStdin(MaxInput, "an input") }

// StdinText reads standard input as one text of at most MaxText bytes:
// what becomes one message (what says of what).
func (c *Ctx) StdinText(what string) ([]byte, error) { return c.readStdin(MaxText, what) }

func (c *Ctx) readStdin(limit int64, what string) ([]byte, error) {
	if c.stdinRead {
		if int64(len(c.stdinData)) > limit {
			return nil, overLimit("stdin", int64(len(c.stdinData)), limit, what)
		}
		return c.stdinData, nil
	}
	c.stdinRead = true
	if c.stdinTTY || c.stdin == nil {
		return nil, nil
	}
	data, err := readLimited(c.stdin, "stdin", limit, what)
	c.stdinData = data
	// In a pipe this command started beside the one before it, whose
	// session may be newer than our start: what this one writes is dated
	// after its input came.
	c.Now = time.Now()
	return data, err
}

// ReadFile reads a file the user named ("-" is stdin) as a stream of at
// most MaxInput bytes, under the same rules.
func (c *Ctx) ReadFile(path string) ([]byte, error) { return c.readFile(path, MaxInput, "an input") }

// ReadText reads a file the user named ("-" is stdin) as one text of at
// most MaxText bytes (what says of what: "a summary").
func (c *Ctx) ReadText(path, what string) ([]byte, error) { return c.readFile(path, MaxText, what) }

func (c *Ctx) readFile(path string, limit int64, what string) ([]byte, error) {
	if path == "-" {
		return c.readStdin(limit, what)
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, NotFoundf("file %s not found", path)
		}
		return nil, &Error{Code: ExitFailure, Msg: "cannot read " + path + ": " + pathErrText(err)}
	}
	defer f.Close()
	return readLimited(f, path, limit, what)
}

func pathErrText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// readLimited reads r whole, refusing more than limit bytes with the size
// of what it was given: a file's from its size, a stream's by reading on,
// into a small buffer, up to MaxInput. A file is read into one buffer of
// its size; a stream into chunks, joined once it ended within the limit,
// so that a refused stream costs at most the limit in memory and an
// accepted one twice its size. (One buffer of the limit, written as it
// is read, would do once; but the collector, started by such an
// allocation, touches every page of it.)
func readLimited(r io.Reader, name string, limit int64, what string) ([]byte, error) {
	readErr := func(err error) error {
		return &Error{Code: ExitFailure, Msg: "reading " + name + ": " + pathErrText(err)}
	}
	size := int64(-1)
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if pos, err := f.Seek(0, io.SeekCurrent); err == nil {
				if size = fi.Size() - pos; size > limit {
					return nil, overLimit(name, size, limit, what)
				}
			}
		}
	}
	var data []byte
	if size >= 0 {
		// One byte more tells a file that grew meanwhile.
		buf := make([]byte, size+1)
		n, err := io.ReadFull(r, buf)
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return nil, readErr(err)
		}
		if data = buf[:n]; int64(n) > limit {
			return nil, overLimit(name, int64(n), limit, what)
		}
	} else {
		var chunks [][]byte
		total := int64(0)
		for chunk := int64(64 << 10); ; chunk = min(2*chunk, 4<<20) {
			buf := make([]byte, min(chunk, limit+1-total))
			n, err := io.ReadFull(r, buf)
			chunks = append(chunks, buf[:n])
			total += int64(n)
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			if err != nil {
				return nil, readErr(err)
			}
			if total > limit {
				rest, err := countRest(r)
				if err != nil {
					return nil, readErr(err)
				}
				if total += rest; rest > MaxInput {
					total = -1 // more than that
				}
				return nil, overLimit(name, total, limit, what)
			}
		}
		if len(chunks) == 1 {
			data = chunks[0]
		} else {
			data = make([]byte, 0, total)
			for _, c := range chunks {
				data = append(data, c...)
			}
		}
	}
	if !utf8.Valid(data) {
		off := invalidUTF8Offset(data)
		return nil, DataErrf("%s is not valid UTF-8 (byte %d)", name, off)
	}
	return data, nil
}

// countRest reads what is left of r, keeping nothing, up to MaxInput (one
// byte more means more than that).
func countRest(r io.Reader) (int64, error) {
	n, err := io.CopyBuffer(io.Discard, io.LimitReader(r, MaxInput+1), make([]byte, 64<<10))
	return n, err
}

// overLimit is the error of an input of size bytes over limit; a size
// of -1 is more than limit and MaxInput besides.
func overLimit(name string, size, limit int64, what string) error {
	given := fmt.Sprintf("%d MiB", size>>20)
	if size < 0 {
		given = fmt.Sprintf("more than %d MiB", (limit+MaxInput)>>20)
	}
	return DataErrf("%s: %s of %s is over the %d MiB limit", name, what, given, limit>>20)
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
		data, err := c.ReadText(v[1:], "a --"+flag+" file")
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

// StdinRefs reads the session references on stdin, as a stream: a line
// holding a reference is refused past maxRef bytes, a JSON value past
// MaxInput, so that no input is held beyond what it may be.
func (c *Ctx) StdinRefs() ([]string, error) {
	rows, err := c.StdinRefRows()
	return refsOf(rows), err
}

// StdinRefRows reads the session references on stdin, with their rows.
func (c *Ctx) StdinRefRows() ([]RefRow, error) {
	if c.stdinTTY {
		return nil, Usagef("no session given").WithHint("pass a session id, or pipe the output of another wc command")
	}
	var rows []RefRow
	var err error
	if c.stdinRead {
		rows, err = parseRefRows(c.stdinData)
	} else if c.stdin != nil {
		c.stdinRead = true
		rows, err = readRefRows(c.stdin)
		c.Now = time.Now()
	}
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

// ParseRefs reads the stdin reference grammar from data.
func ParseRefs(data []byte) ([]string, error) {
	rows, err := parseRefRows(data)
	return refsOf(rows), err
}

func parseRefRows(data []byte) ([]RefRow, error) { return readRefRows(bytes.NewReader(data)) }

// readRefRows reads the stdin reference grammar from r.
func readRefRows(r io.Reader) ([]RefRow, error) {
	br := &refReader{br: bufio.NewReaderSize(&countingReader{r: r, left: MaxInput + 1}, 64<<10)}
	var refs []RefRow
	var value bytes.Buffer
	for line := 1; ; {
		start := br.off
		c, err := br.next()
		switch {
		case err == io.EOF:
			return refs, nil
		case err != nil:
			return nil, readError(err)
		case c == '\n':
			line++
			continue
		case c == ' ' || c == '\t' || c == '\r':
			continue
		}
		br.back()
		var text []byte
		if c == '{' || c == '[' || c == '"' {
			value.Reset()
			lines, err := readJSONValue(br, &value, line)
			if err != nil {
				return nil, err
			}
			text = value.Bytes()
			if !utf8.Valid(text) {
				return nil, DataErrf("stdin is not valid UTF-8 (byte %d)", start+int64(invalidUTF8Offset(text)))
			}
			found, err := refsFromJSON(gjson.ParseBytes(text), line)
			if err != nil {
				return nil, err
			}
			refs = append(refs, found...)
			line += lines
			continue
		}
		if text, err = readWord(br, line); err != nil {
			return nil, err
		}
		if !utf8.Valid(text) {
			return nil, DataErrf("stdin is not valid UTF-8 (byte %d)", start+int64(invalidUTF8Offset(text)))
		}
		word := strings.TrimSpace(string(text))
		if strings.ContainsAny(word, " \t") {
			return nil, DataErrf("stdin line %d: %q is not a session reference", line, shorten(word))
		}
		refs = append(refs, RefRow{Ref: word})
	}
}

// refReader reads stdin a byte at a time and counts them, for errors that
// name the byte.
type refReader struct {
	br  *bufio.Reader
	off int64
}

func (r *refReader) next() (byte, error) {
	c, err := r.br.ReadByte()
	if err == nil {
		r.off++
	}
	return c, err
}

func (r *refReader) back() {
	if r.br.UnreadByte() == nil {
		r.off--
	}
}

// readWord reads the rest of a line that holds one reference, and no more
// of it than a reference may be.
func readWord(br *refReader, line int) ([]byte, error) {
	var b []byte
	for {
		c, err := br.next()
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, readError(err)
		}
		if c == '\n' {
			br.back() // the caller counts the line
			return b, nil
		}
		if b = append(b, c); len(b) > maxRef {
			return nil, Usagef("stdin line %d: a session reference of more than %d bytes", line, maxRef).
				WithHint("a session reference is a full id or at least 4 of its leading hex digits")
		}
	}
}

// readJSONValue reads one JSON value (an object, array or string) into
// buf, finding its end as session.JSONScanner does, and refusing it nested
// past session.MaxJSONDepth; it returns the newlines it held.
func readJSONValue(br *refReader, buf *bytes.Buffer, line int) (int, error) {
	var sc session.JSONScanner
	lines := 0
	invalid := func() error { return DataErrf("stdin line %d: invalid JSON", line) }
	for {
		c, err := br.next()
		if err == io.EOF {
			return 0, invalid()
		}
		if err != nil {
			return 0, readError(err)
		}
		buf.WriteByte(c)
		if c == '\n' {
			lines++
		}
		done, err := sc.Step(c)
		if err != nil {
			return 0, DataErrf("stdin: %v", err)
		}
		if done {
			if !json.Valid(buf.Bytes()) {
				return 0, invalid()
			}
			return lines, nil
		}
	}
}

// countingReader refuses to read past left bytes.
type countingReader struct {
	r    io.Reader
	left int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errOverInput
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

var errOverInput = DataErrf("stdin: an input of more than %d MiB is over the %d MiB limit", MaxInput>>20, MaxInput>>20)

func readError(err error) error {
	if errors.Is(err, errOverInput) {
		return errOverInput
	}
	return &Error{Code: ExitFailure, Msg: "reading stdin: " + pathErrText(err)}
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
func Resolve(st store.Handle, refs []string) ([]string, error) {
	ids := make([]string, len(refs))
	for i, r := range refs {
		id, err := st.Resolve(r)
		if errors.Is(err, store.ErrAmbiguous) {
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
func ambiguous(st store.Handle, ref string, err error) error {
	digits, _ := store.RefDigits(ref)
	var lines []string
	more := 0
	lerr := st.ListInfo(store.ListQuery{}, func(info *session.Info) error {
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
