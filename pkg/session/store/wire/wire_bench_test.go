package wire

import (
	"bufio"
	"bytes"
	"testing"
)

// BenchmarkWireCommit encodes and decodes an append's commit: the metadata
// and one new node, the request a command sends most.
func BenchmarkWireCommit(b *testing.B) {
	req := &Commit{Meta: bytes.Repeat([]byte("m"), 600), Nodes: []Item{{Seq: 42, Value: bytes.Repeat([]byte("n"), 400)}}, Defer: true}
	var buf bytes.Buffer
	w := &Conn{conn: nopConn{&buf}, r: bufio.NewReader(&buf)}
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Send(req); err != nil {
			b.Fatal(err)
		}
		if _, err := w.RecvRequest(); err != nil {
			b.Fatal(err)
		}
	}
}
