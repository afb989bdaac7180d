package record

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
)

// A node record whose message is stored in pieces keeps its header, names
// each piece by its sha256 in order, and joined with them is the record
// again; the other forms are never taken for it.
func TestNodeChunked(t *testing.T) {
	n := session.Child(nil, 1, session.Message{Role: session.RoleUser, Content: session.TextContent(strings.Repeat("abcdefgh", 1000))})
	n.Tokens, n.Users = 7, 1
	full := EncodeNode(&n)
	rec, pieces, err := EncodeNodeChunked(full, 3000)
	if err != nil {
		t.Fatal(err)
	}
	if len(pieces) != 3 || !IsChunked(rec) || IsChunked(full) || IsChunked(EncodeNodeRef(&n, 3)) {
		t.Fatalf("%d pieces; chunked %v, full %v", len(pieces), IsChunked(rec), IsChunked(full))
	}
	sums, ok := NodeChunks(rec)
	if !ok || len(sums) != len(pieces) {
		t.Fatalf("NodeChunks: %d sums, %v", len(sums), ok)
	}
	for i, p := range pieces {
		if sha256.Sum256(p) != sums[i] {
			t.Errorf("piece %d is not named by its sum", i)
		}
	}
	h, msg, err := DecodeNodeHeader(rec)
	if want, _, _ := DecodeNodeHeader(full); err != nil || msg != nil || h != want {
		t.Fatalf("header of the chunked record: %+v %q %v, want %+v", h, msg, err, want)
	}
	joined, err := AppendNodeFromChunks(nil, rec, pieces)
	if err != nil || !bytes.Equal(joined, full) {
		t.Fatalf("joined record differs (%v)", err)
	}
	if _, ok := NodeChunks(full); ok {
		t.Error("NodeChunks took a full record")
	}
	if _, err := DecodeNode(1, rec); err == nil {
		t.Error("DecodeNode read a chunked record as a message")
	}
}
