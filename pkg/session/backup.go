package session

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// A backup (wc-export --format backup) holds everything a session holds,
// one JSON object a line, each with the session's "id":
//
//	{"id":ID,"backup":1,"meta":META}           first: the stored metadata
//	{"id":ID,"seq":N,"parent":P,"message":M}  every node, in seq order
//	{"id":ID,"blob":SHA256,"data":BASE64}      every blob its nodes point at
//
// The node lines are the lines of wc-export --format jsonl --tree (their
// "head" and "branches" members are informative: the metadata says).
// Restoring one (ReadBackup) gives the session back with its id, its seqs,
// its metadata and its blobs, so that every export of it is what it was.

// BackupVersion is the "backup" member of a backup's first line.
const BackupVersion = 1

// maxBackupLine bounds a line of a backup: a blob of up to 64 MB in base64.
const maxBackupLine = 96 << 20

// AppendBackupHeader appends a backup's first line for m.
func AppendBackupHeader(dst []byte, m *Meta) []byte {
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
	Meta  Meta
	Nodes []Node // in seq order, with their running totals; Same hints where a message repeats an earlier node's
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
type BackupReader struct {
	r    *bufio.Reader
	line int
	next []byte // a line read ahead: the next session's first
	err  error
}

// NewBackupReader reads a backup from r.
func NewBackupReader(r io.Reader) *BackupReader {
	return &BackupReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next session, or io.EOF after the last.
func (b *BackupReader) Next() (*Restored, error) {
	first, err := b.readLine()
	if err != nil {
		return nil, err
	}
	v := gjson.ParseBytes(first)
	id := v.Get("id").Str
	switch version := v.Get("backup"); {
	case !version.Exists() || !v.Get("meta").IsObject():
		return nil, b.errorf("a session's backup must begin with its metadata line ({\"id\",\"backup\",\"meta\"})")
	case version.Raw != strconv.Itoa(BackupVersion):
		return nil, b.errorf("backup version %s is not one this wc reads (%d)", version.Raw, BackupVersion)
	}
	m, err := DecodeMeta([]byte(v.Get("meta").Raw))
	if err != nil || v.Get("id").Type != gjson.String || m.ID != id {
		return nil, b.errorf("the metadata of session %q is malformed", id)
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
		if line.Get("id").Str != id || line.Get("backup").Exists() {
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
		return nil, &InvalidError{Msg: fmt.Sprintf("session %s: %v", id, err)}
	}
	return s, nil
}

func (b *BackupReader) errorf(format string, args ...any) error {
	return &InvalidError{Msg: fmt.Sprintf("line %d: ", b.line) + fmt.Sprintf(format, args...)}
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
		if err := CheckNesting(line); err != nil {
			return nil, b.errorf("%v", err)
		}
		if !gjson.ValidBytes(line) || !gjson.ParseBytes(line).IsObject() {
			return nil, b.errorf("not a JSON object")
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
func (b *BackupReader) node(line gjson.Result, s *Restored, nodes map[uint64]int) (Node, error) {
	seq, okSeq := WholeNumber(line.Get("seq"))
	parent, okParent := WholeNumber(line.Get("parent"))
	switch {
	case !okSeq || !okParent || seq == 0:
		return Node{}, b.errorf(`a node needs a "seq" above 0 and a "parent"`)
	case seq >= s.Meta.NextSeq:
		return Node{}, b.errorf("node %d is not below the session's next_seq %d", seq, s.Meta.NextSeq)
	case len(s.Nodes) > 0 && seq <= s.Nodes[len(s.Nodes)-1].Seq:
		return Node{}, b.errorf("node %d comes after node %d: the nodes must be in seq order", seq, s.Nodes[len(s.Nodes)-1].Seq)
	}
	var p *Node
	if parent != 0 {
		i, ok := nodes[parent]
		if !ok {
			return Node{}, b.errorf("node %d's parent %d is not a node before it", seq, parent)
		}
		p = &s.Nodes[i]
	}
	msg, err := DecodeMessage([]byte(line.Get("message").Raw))
	if err != nil {
		return Node{}, b.errorf("node %d: %v", seq, err)
	}
	if err := CheckSizes([]Message{msg}, false); err != nil {
		return Node{}, b.errorf("node %d: %v", seq, err)
	}
	return Child(p, seq, msg), nil
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
	var head *Node
	if m.Head != 0 {
		head = &s.Nodes[nodes[m.Head]]
	}
	system := m.SystemPrompt
	m.Tokens, m.SystemTokens = 0, 0
	m.SetSystemPrompt(system)
	m.SetHead(head)
	return nil
}
