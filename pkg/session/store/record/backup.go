package record

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/wctoolkit/wc/pkg/session"
)

// A backup (wc-export --format backup) holds everything a session holds,
// one JSON object a line, each with the session's "id":
//
//	{"id":ID,"backup":2,"meta":META}           first: the stored metadata
//	{"id":ID,"seq":N,"parent":P,"message":M}  every node, in seq order
//	{"id":ID,"blob":SHA256,"data":BASE64}      every blob its nodes point at
//
// and, after the last session, one line that closes the backup:
//
//	{"backup_end":{"sessions":N,"sha256":SHA256}}
//
// with the sha256 of every byte before it (since the previous end line,
// when backups are concatenated). Without it a backup cut short between
// two sessions, or in a session's blob lines, would read as a whole one
// of fewer sessions or blobs.
//
// The node lines are the lines of wc-export --format jsonl --tree (their
// "head" and "branches" members are informative: the metadata says).
// Restoring one (BackupReader) gives the session back with its id, its
// seqs, its metadata and its blobs, so that every export of it is what it
// was.

// BackupVersion is the "backup" member of a backup's first line. Version 1
// backups (wc before the end line) have none, and are read without it.
const BackupVersion = 2

// maxBackupSeq bounds a restored session's next seq: beyond 2^53 JSON
// readers lose its digits, and near 2^64 the next append would overflow.
const maxBackupSeq = 1 << 53

// maxBackupLine bounds a line of a backup: a blob of up to 64 MB in base64.
const maxBackupLine = 96 << 20

// BackupWriter writes a backup to w: each session's lines, then End.
type BackupWriter struct {
	w        io.Writer
	sum      hash.Hash
	sessions int
	line     []byte
}

// NewBackupWriter writes a backup to w.
func NewBackupWriter(w io.Writer) *BackupWriter {
	return &BackupWriter{w: w, sum: sha256.New()}
}

// Write writes lines of the session that Header began: its node lines.
func (b *BackupWriter) Write(p []byte) (int, error) {
	b.sum.Write(p)
	return b.w.Write(p)
}

// Header begins the lines of session m.
func (b *BackupWriter) Header(m *session.Meta) error {
	b.sessions++
	b.line = AppendBackupHeader(b.line[:0], m)
	_, err := b.Write(b.line)
	return err
}

// Blob writes the line of the blob data of session id.
func (b *BackupWriter) Blob(id string, data []byte) error {
	b.line = AppendBackupBlob(b.line[:0], id, data)
	_, err := b.Write(b.line)
	return err
}

// End writes the line that closes the backup.
func (b *BackupWriter) End() error {
	_, err := b.w.Write(appendBackupEnd(nil, b.sessions, b.sum.Sum(nil)))
	return err
}

func appendBackupEnd(dst []byte, sessions int, sum []byte) []byte {
	dst = append(dst, `{"backup_end":{"sessions":`...)
	dst = strconv.AppendInt(dst, int64(sessions), 10)
	dst = append(dst, `,"sha256":"`...)
	dst = hex.AppendEncode(dst, sum)
	return append(dst, "\"}}\n"...)
}

// AppendBackupHeader appends a backup's first line for m.
func AppendBackupHeader(dst []byte, m *session.Meta) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, m.ID...)
	dst = append(dst, `","backup":`...)
	dst = strconv.AppendInt(dst, BackupVersion, 10)
	dst = append(dst, `,"meta":`...)
	dst = append(dst, EncodeMeta(m)...)
	return append(dst, "}\n"...)
}

// AppendBackupBlob appends a backup's line for the blob data of session id.
func AppendBackupBlob(dst []byte, id string, data []byte) []byte {
	sum := sha256.Sum256(data)
	dst = append(dst, `{"id":"`...)
	dst = append(dst, id...)
	dst = append(dst, `","blob":"`...)
	dst = hex.AppendEncode(dst, sum[:])
	dst = append(dst, `","data":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, data)
	return append(dst, "\"}\n"...)
}

// Restored is one session read from a backup.
type Restored struct {
	Meta  session.Meta
	Nodes []session.Node // in seq order, with their running totals; Same hints where a message repeats an earlier node's
	Blobs []Blob
}

// Blob is spilled tool output and its sha256.
type Blob struct {
	Sum  [32]byte
	Data []byte
}

// IsBackup reports whether data starts as a backup does.
func IsBackup(data []byte) bool {
	line, _, _ := bytes.Cut(bytes.TrimLeft(data, " \t\r\n"), []byte{'\n'})
	v := gjson.ParseBytes(line)
	return v.IsObject() && v.Get("backup").Exists() && v.Get("meta").IsObject()
}

// BackupReader reads the sessions of a backup one at a time, checking each
// whole: every line well formed and of its session, the nodes a tree in
// seq order below the session's next seq, the head, branches and
// checkpoint on nodes it holds, each blob matching its sha256. Errors are
// *InvalidError naming the line.
//
// A version 2 backup must end with its end line, whose session count and
// sha256 must be those of the lines before it.
type BackupReader struct {
	r    *bufio.Reader
	line int
	next []byte // a line read ahead: the next session's first
	err  error
	// Since the last end line: the sha256 of every byte read, the sum
	// before the end line just read, the sessions, and whether one is of
	// a version that needs the end line.
	sum      hash.Hash
	sumAtEnd []byte
	sessions int
	needEnd  bool
}

// NewBackupReader reads a backup from r.
func NewBackupReader(r io.Reader) *BackupReader {
	return &BackupReader{r: bufio.NewReaderSize(r, 64<<10), sum: sha256.New()}
}

// Next returns the next session, or io.EOF after the last.
func (b *BackupReader) Next() (*Restored, error) {
	first, err := b.readLine()
	for err == nil && b.sumAtEnd != nil {
		if err = b.end(first); err == nil {
			first, err = b.readLine()
		}
	}
	if errors.Is(err, io.EOF) && b.needEnd {
		return nil, &session.InvalidError{Msg: "the backup ends before its end line: it was cut short"}
	}
	if err != nil {
		return nil, err
	}
	v := gjson.ParseBytes(first)
	id := v.Get("id").Str
	switch version := v.Get("backup"); {
	case !version.Exists() || !v.Get("meta").IsObject():
		return nil, b.errorf("a session's backup must begin with its metadata line ({\"id\",\"backup\",\"meta\"})")
	case version.Raw == strconv.Itoa(BackupVersion):
		b.needEnd = true
	case version.Raw != "1":
		return nil, b.errorf("backup version %s is not one this wc reads (%d)", version.Raw, BackupVersion)
	}
	b.sessions++
	m, err := DecodeMeta([]byte(v.Get("meta").Raw))
	if err != nil || v.Get("id").Type != gjson.String || m.ID != id {
		return nil, b.errorf("the metadata of session %q is malformed", id)
	}
	if m.NextSeq > maxBackupSeq {
		return nil, b.errorf("session %s: its next_seq %d is past 2^53", id, m.NextSeq)
	}
	s := &Restored{Meta: m}
	nodes := map[uint64]int{} // seq -> index in s.Nodes
	repeats := map[[32]byte]uint64{}
	blobs := map[[32]byte]bool{}
	for {
		raw, err := b.readLine()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		line := gjson.ParseBytes(raw)
		if b.sumAtEnd != nil || line.Get("id").Str != id || line.Get("backup").Exists() {
			b.next = raw // the next session's
			b.line--
			break
		}
		switch {
		case line.Get("blob").Exists():
			blob, err := b.blob(line)
			if err != nil {
				return nil, err
			}
			if !blobs[blob.Sum] {
				blobs[blob.Sum] = true
				s.Blobs = append(s.Blobs, blob)
			}
		case line.Get("message").Exists():
			n, err := b.node(line, s, nodes)
			if err != nil {
				return nil, err
			}
			h := sha256.Sum256(n.Msg.AppendJSON(nil))
			if same, ok := repeats[h]; ok {
				n.Same = same
			} else {
				repeats[h] = n.Seq
			}
			nodes[n.Seq] = len(s.Nodes)
			s.Nodes = append(s.Nodes, n)
		default:
			return nil, b.errorf("session %s: a line that is neither a node nor a blob", id)
		}
	}
	if err := s.finish(nodes); err != nil {
		return nil, &session.InvalidError{Msg: fmt.Sprintf("session %s: %v", id, err)}
	}
	return s, nil
}

// end checks the end line just read against what came before it.
func (b *BackupReader) end(line []byte) error {
	v := gjson.GetBytes(line, "backup_end")
	sessions, ok := session.WholeNumber(v.Get("sessions"))
	want, err := hex.DecodeString(v.Get("sha256").Str)
	switch {
	case !ok || err != nil || len(want) != sha256.Size:
		return b.errorf(`a backup's end line is {"backup_end":{"sessions":N,"sha256":SHA256}}`)
	case sessions != uint64(b.sessions):
		return b.errorf("the end line counts %d sessions, the backup holds %d", sessions, b.sessions)
	case !bytes.Equal(want, b.sumAtEnd):
		return b.errorf("the backup's sha256 does not match its end line: it was changed or cut")
	}
	b.sum.Reset()
	b.sumAtEnd, b.sessions, b.needEnd = nil, 0, false
	return nil
}

func (b *BackupReader) errorf(format string, args ...any) error {
	return &session.InvalidError{Msg: fmt.Sprintf("line %d: ", b.line) + fmt.Sprintf(format, args...)}
}

// readLine returns the next line that is not blank, checked to be UTF-8
// and JSON nested within the limit.
func (b *BackupReader) readLine() ([]byte, error) {
	if b.next != nil {
		line := b.next
		b.next = nil
		b.line++
		return line, nil
	}
	if b.err != nil {
		return nil, b.err
	}
	for {
		var line []byte
		for {
			chunk, err := b.r.ReadSlice('\n')
			line = append(line, chunk...)
			if len(line) > maxBackupLine {
				return nil, b.errorf("the line is over %d MiB", maxBackupLine>>20)
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil {
				b.err = err
			}
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			b.sum.Write(line)
			if b.err != nil {
				return nil, b.err
			}
			b.line++
			continue
		}
		b.line++
		if !utf8.Valid(line) {
			return nil, b.errorf("not valid UTF-8")
		}
		if err := session.CheckNesting(line); err != nil {
			return nil, b.errorf("%v", err)
		}
		if !gjson.ValidBytes(line) || !gjson.ParseBytes(line).IsObject() {
			return nil, b.errorf("not a JSON object")
		}
		if gjson.GetBytes(line, "backup_end").Exists() {
			b.sumAtEnd = b.sum.Sum(nil) // the end line is not its own sum's
		} else {
			b.sum.Write(line)
		}
		return line, nil
	}
}

func (b *BackupReader) blob(line gjson.Result) (Blob, error) {
	var blob Blob
	sum, err := hex.DecodeString(line.Get("blob").Str)
	if err != nil || len(sum) != len(blob.Sum) {
		return blob, b.errorf(`"blob" must be a sha256 in hex`)
	}
	copy(blob.Sum[:], sum)
	data := line.Get("data")
	if data.Type != gjson.String {
		return blob, b.errorf(`a blob needs its "data" in base64`)
	}
	if blob.Data, err = base64.StdEncoding.DecodeString(data.Str); err != nil {
		return blob, b.errorf(`a blob's "data" is not base64`)
	}
	if sha256.Sum256(blob.Data) != blob.Sum {
		return blob, b.errorf("blob %x does not match its sha256", blob.Sum[:6])
	}
	return blob, nil
}

// node reads a node's line; its parent must be a node read before it.
func (b *BackupReader) node(line gjson.Result, s *Restored, nodes map[uint64]int) (session.Node, error) {
	seq, okSeq := session.WholeNumber(line.Get("seq"))
	parent, okParent := session.WholeNumber(line.Get("parent"))
	switch {
	case !okSeq || !okParent || seq == 0:
		return session.Node{}, b.errorf(`a node needs a "seq" above 0 and a "parent"`)
	case seq >= s.Meta.NextSeq:
		return session.Node{}, b.errorf("node %d is not below the session's next_seq %d", seq, s.Meta.NextSeq)
	case len(s.Nodes) > 0 && seq <= s.Nodes[len(s.Nodes)-1].Seq:
		return session.Node{}, b.errorf("node %d comes after node %d: the nodes must be in seq order", seq, s.Nodes[len(s.Nodes)-1].Seq)
	}
	var p *session.Node
	if parent != 0 {
		i, ok := nodes[parent]
		if !ok {
			return session.Node{}, b.errorf("node %d's parent %d is not a node before it", seq, parent)
		}
		p = &s.Nodes[i]
	}
	msg, err := session.DecodeMessage([]byte(line.Get("message").Raw))
	if err != nil {
		return session.Node{}, b.errorf("node %d: %v", seq, err)
	}
	if err := session.CheckSizes([]session.Message{msg}, false); err != nil {
		return session.Node{}, b.errorf("node %d: %v", seq, err)
	}
	return session.Child(p, seq, msg), nil
}

// finish checks that the metadata names nodes the backup holds, and counts
// the active path again from them.
func (s *Restored) finish(nodes map[uint64]int) error {
	m := &s.Meta
	known := func(seq uint64) bool {
		_, ok := nodes[seq]
		return seq == 0 || ok
	}
	if !known(m.Head) {
		return fmt.Errorf("its head %d is not a node of the backup", m.Head)
	}
	for _, br := range m.Branches {
		if !known(br.Seq) {
			return fmt.Errorf("branch %q ends at node %d, which is not in the backup", br.Name, br.Seq)
		}
	}
	if m.Checkpoint != nil && !known(m.Checkpoint.Seq) {
		return fmt.Errorf("its checkpoint is at node %d, which is not in the backup", m.Checkpoint.Seq)
	}
	var head *session.Node
	if m.Head != 0 {
		head = &s.Nodes[nodes[m.Head]]
	}
	system := m.SystemPrompt
	m.Tokens, m.SystemTokens = 0, 0
	m.SetSystemPrompt(system)
	m.SetHead(head)
	return nil
}
