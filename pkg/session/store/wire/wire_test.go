package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"maps"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wctoolkit/wc/pkg/session/store"
)

// fill sets every field reachable from v to a value that is not zero and
// differs from field to field, so that a field the codec forgets cannot
// survive a round trip.
func fill(t *testing.T, v reflect.Value, n *int) {
	*n++
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(time.Unix(int64(*n)*86400, int64(*n))))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), n)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(t, v.Field(i), n)
		}
	case reflect.String:
		v.SetString(string(rune('a'+*n%26)) + "é")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(-int64(*n) * 1000003)
	case reflect.Uint64:
		v.SetUint(uint64(*n) << 40)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(t, s.Index(i), n)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(t, v.Index(i), n)
		}
	case reflect.Uint8:
		v.SetUint(uint64(*n % 251))
	default:
		t.Fatalf("fill: no value for a %s", v.Type())
	}
}

// TestWireRoundTrip: every field of every message survives encoding, so a
// field added to a message without its line in the codec fails here. The
// requests are those of the decoder's table, which
// TestRequestTypesAllDecoded holds complete.
func TestWireRoundTrip(t *testing.T) {
	ms := []Message{&Response{}, &Hello{}, &Welcome{}}
	for tag := range requestTypes {
		if tag != 0 {
			ms = append(ms, requestTypes[tag]())
		}
	}
	for _, m := range ms {
		n := 0
		fill(t, reflect.ValueOf(m).Elem(), &n)
		switch v := m.(type) {
		case *Hello:
			v.Proto = ProtocolVersion
		case *Welcome:
			v.Proto = ProtocolVersion
		}
		a, b := net.Pipe()
		go func() { _ = NewConn(a).Send(m) }()
		var got Message
		var err error
		if _, ok := m.(Request); ok {
			got, err = NewConn(b).RecvRequest()
		} else {
			got = reflect.New(reflect.TypeOf(m).Elem()).Interface().(Message)
			err = NewConn(b).Recv(got)
		}
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("%T changed on the wire:\n sent %+v\n got  %+v", m, m, got)
		}
		a.Close()
		b.Close()
	}
}

// TestRequestTypesAllDecoded: every type of the package with an operation
// tag (an op method) is in the decoder's table, under its own tag, so that
// the server reads it and TestWireRoundTrip covers it.
func TestRequestTypesAllDecoded(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, f := range pkgs["wire"].Files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "op" {
				continue
			}
			recv := fn.Recv.List[0].Type
			if star, ok := recv.(*ast.StarExpr); ok {
				recv = star.X
			}
			declared[recv.(*ast.Ident).Name] = true
		}
	}
	decoded := map[string]bool{}
	for tag, make := range requestTypes {
		if tag == 0 {
			if make != nil {
				t.Errorf("tag 0 decodes as %T", make())
			}
			continue
		}
		if make == nil {
			t.Errorf("tag %d decodes as nothing", tag)
			continue
		}
		req := make()
		if req.op() != op(tag) {
			t.Errorf("%T is sent with tag %d, decoded from tag %d", req, req.op(), tag)
		}
		decoded[reflect.TypeOf(req).Elem().Name()] = true
	}
	if len(declared) == 0 {
		t.Fatal("no request types found")
	}
	if !reflect.DeepEqual(declared, decoded) {
		t.Errorf("request types %v, decoded %v", slices.Sorted(maps.Keys(declared)), slices.Sorted(maps.Keys(decoded)))
	}
}

// A frame that is cut short, too long for its content, or not ours is
// refused rather than misread.
func TestWireRefusesBadFrames(t *testing.T) {
	var full bytes.Buffer
	w := &Conn{conn: nopConn{&full}}
	if err := w.Send(&Commit{Meta: []byte("{}"), Nodes: []Item{{1, []byte("v")}}}); err != nil {
		t.Fatal(err)
	}
	frame := full.Bytes()
	cases := map[string][]byte{
		"cut":            frame[:len(frame)-1],
		"trailing bytes": append(append([]byte{0, 0, 0, byte(frame[3] + 1)}, frame[4:]...), 0),
		"huge":           {0xff, 0xff, 0xff, 0xff},
		"no operation":   {0, 0, 0, 0},
		"operation 0":    {0, 0, 0, 1, 0},
		"unknown op":     {0, 0, 0, 1, 0xff},
		"gob":            []byte("x\x7f\x03\x01\x01\x07wireReq\x01\xff\x80\x00\x01"),
	}
	for name, data := range cases {
		req, err := (&Conn{r: newReader(data)}).RecvRequest()
		if err == nil {
			t.Errorf("%s: read as %+v", name, req)
		}
	}
	var hello Hello
	if err := (&Conn{r: newReader(frame)}).Recv(&hello); !errors.Is(err, errBadFrame) {
		t.Errorf("a request read as a hello: %v %+v", err, hello)
	}
}

type nopConn struct{ w io.Writer }

func (c nopConn) Write(b []byte) (int, error)    { return c.w.Write(b) }
func (nopConn) Read([]byte) (int, error)         { return 0, io.EOF }
func (nopConn) Close() error                     { return nil }
func (nopConn) LocalAddr() net.Addr              { return nil }
func (nopConn) RemoteAddr() net.Addr             { return nil }
func (nopConn) SetDeadline(time.Time) error      { return nil }
func (nopConn) SetReadDeadline(time.Time) error  { return nil }
func (nopConn) SetWriteDeadline(time.Time) error { return nil }

func newReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// A commit that found its session changed keeps its kind across the
// socket, and still counts as busy (exit 75) once the command gives up;
// one that is busy for another reason does not read as changed.
func TestChangedCrosses(t *testing.T) {
	sent := fmt.Errorf("store: %w", &store.ChangedError{Msg: "session 0102 changed since it was read"})
	got := ToWire(sent).Err()
	if !errors.Is(got, store.ErrChanged) || !errors.Is(got, store.ErrBusy) || got.Error() != sent.Error() {
		t.Errorf("changed error crossed as %#v (%v)", got, got)
	}
	busy := ToWire(&store.KindError{Msg: "store x is busy", Kind: store.ErrBusy}).Err()
	if errors.Is(busy, store.ErrChanged) || !errors.Is(busy, store.ErrBusy) {
		t.Errorf("busy error crossed as %#v", busy)
	}
}
