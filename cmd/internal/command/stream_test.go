package command

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wctoolkit/wc/pkg/session/store"
)

// gatedWriter takes nothing until opened, like a pager nobody scrolls.
type gatedWriter struct {
	open chan struct{}
	mu   sync.Mutex
	buf  bytes.Buffer
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	<-w.open
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// streamed writes size bytes of numbered lines in uneven pieces and
// returns them.
func streamed(o *Output, size int) (string, error) {
	var want strings.Builder
	for i := 0; want.Len() < size; i++ {
		line := fmt.Sprintf("line %d %s\n", i, strings.Repeat("x", i%300))
		want.WriteString(line)
		var err error
		switch i % 3 {
		case 0:
			_, err = o.WriteString(line)
		case 1:
			_, err = o.Write([]byte(line))
		default:
			for j := 0; j < len(line) && err == nil; j++ {
				err = o.WriteByte(line[j])
			}
		}
		if err != nil {
			return want.String(), err
		}
	}
	return want.String(), nil
}

// A consumer that takes nothing must not hold up the command (and so the
// store's lock): the output beyond the memory allowance waits in a file
// and arrives whole and in order once the consumer reads.
func TestStreamSpillsForSlowConsumer(t *testing.T) {
	w := &gatedWriter{open: make(chan struct{})}
	var o Output
	o.startStreaming(w)
	want, err := streamed(&o, 12<<20) // would block forever without the spool
	if err != nil {
		t.Fatal(err)
	}
	o.spool.mu.Lock()
	spilled, held := o.spool.file != nil, o.spool.held
	o.spool.mu.Unlock()
	if !spilled || held > spoolMemory {
		t.Errorf("spilled %v, %d bytes held in memory; want a file and at most %d", spilled, held, spoolMemory)
	}
	close(w.open)
	if err := o.finish(); err != nil {
		t.Fatal(err)
	}
	if got := w.buf.String(); got != want {
		t.Fatalf("got %d bytes, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
}

// pausableWriter takes nothing while paused.
type pausableWriter struct {
	mu     sync.Mutex
	cond   sync.Cond
	paused bool
	buf    bytes.Buffer
}

func (w *pausableWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.paused {
		w.cond.Wait()
	}
	return w.buf.Write(p)
}

func (w *pausableWriter) pause(p bool) {
	w.mu.Lock()
	w.paused = p
	w.cond.Broadcast()
	w.mu.Unlock()
}

// A consumer that falls behind sends the output to the file, and once it
// has caught up, the output goes to memory again; all of it arrives in
// order.
func TestStreamSpillsAndReturns(t *testing.T) {
	w := &pausableWriter{}
	w.cond.L = &w.mu
	var o Output
	o.startStreaming(w)
	state := func() (spilled bool, fileEnd int64, caughtUp bool) {
		o.spool.mu.Lock()
		defer o.spool.mu.Unlock()
		return o.spool.spilled, o.spool.fileEnd, o.spool.fileRead == o.spool.fileEnd && len(o.spool.mem) == 0
	}
	w.pause(true)
	first, err := streamed(&o, 3<<20)
	if spilled, _, _ := state(); err != nil || !spilled {
		t.Fatalf("a stalled consumer: spilled %v, %v", spilled, err)
	}
	w.pause(false)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, _, caughtUp := state(); caughtUp {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the consumer never caught up")
		}
	}
	second, err := streamed(&o, 3<<20)
	if err != nil {
		t.Fatal(err)
	}
	// Without the way back, the file would hold both parts past the
	// memory allowance.
	if _, fileEnd, _ := state(); fileEnd >= 4<<20 {
		t.Errorf("the file holds %d bytes after the consumer caught up", fileEnd)
	}
	if err := o.finish(); err != nil {
		t.Fatal(err)
	}
	if got, want := w.buf.String(), first+second; got != want {
		t.Fatalf("got %d bytes, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

type failingWriter struct{ left int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.left < len(p) {
		return 0, errors.New("no space left on device")
	}
	w.left -= len(p)
	return len(p), nil
}

// When stdout fails, the action learns it from its next writes, and the
// command fails with the write error.
func TestStreamReportsWriteError(t *testing.T) {
	var o Output
	o.startStreaming(&failingWriter{left: 1 << 20})
	_, err := streamed(&o, 12<<20)
	ferr := o.finish()
	for _, e := range []error{err, ferr} {
		var te *Error
		if !errors.As(e, &te) || te.Code != ExitFailure || te.Msg != "writing output: no space left on device" {
			t.Errorf("error %v, want exit 1 writing output: no space left on device", e)
		}
	}
}

// A streaming command that fails midway exits non-zero with its error
// line, and stdout holds what it wrote before the failure.
func TestRunStreamingFailure(t *testing.T) {
	spec := &Spec{Name: "wc-test", Summary: "test", Flags: func() []cli.Flag { return nil }, Streams: true,
		Action: func(c *Ctx) error {
			c.Out().WriteString("# title\n\nfirst part\n")
			return errors.New("store: session 3f2a is damaged: node 7 is malformed")
		}}
	var stdout, stderr bytes.Buffer
	code := Run(spec, []string{"wc-test"}, strings.NewReader(""), &stdout, &stderr)
	if code != ExitFailure || stdout.String() != "# title\n\nfirst part\n" ||
		stderr.String() != "wc-test: store: session 3f2a is damaged: node 7 is malformed\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	spec.Streams = false
	stdout.Reset()
	stderr.Reset()
	if code := Run(spec, []string{"wc-test"}, strings.NewReader(""), &stdout, &stderr); code != ExitFailure || stdout.Len() != 0 {
		t.Errorf("held output: exit %d, stdout %q", code, stdout.String())
	}
}

// A partial batch prints the lines of the items it did, then its error;
// unless the store then fails to close, which may have lost them: then only
// the close's error is printed. Partial keeps the error's status.
func TestRunPartial(t *testing.T) {
	run := func(closeErr error, actionErr error) (int, string, string) {
		spec := &Spec{Name: "wc-test", Summary: "test", Flags: func() []cli.Flag { return nil },
			Action: func(c *Ctx) error {
				c.OnClose(func() error { return closeErr })
				c.Out().WriteString("{\"id\":\"a\"}\n")
				return actionErr
			}}
		var stdout, stderr bytes.Buffer
		code := Run(spec, []string{"wc-test"}, strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	refused := Partial(DataErrf("session b: its total cost would exceed what wc can store"))
	if code, out, errOut := run(nil, refused); code != ExitDataErr || out != "{\"id\":\"a\"}\n" ||
		errOut != "wc-test: session b: its total cost would exceed what wc can store\n" {
		t.Errorf("partial: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := run(errors.New("store: sync: input/output error"), refused); code != ExitFailure || out != "" ||
		errOut != "wc-test: store: sync: input/output error\n" {
		t.Errorf("partial, then a failed close: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Any error keeps its status and hints when marked partial.
	busy := Partial(fmt.Errorf("store: %w", store.ErrBusy))
	if code, hints := exitStatus(busy); code != ExitBusy || len(hints) != 1 || !isPartial(busy) {
		t.Errorf("partial busy: exit %d, hints %q", code, hints)
	}
	if code, out, _ := run(nil, busy); code != ExitBusy || out != "{\"id\":\"a\"}\n" {
		t.Errorf("partial busy: exit %d, stdout %q", code, out)
	}
	// An error that is not partial prints no lines, and keeps its status
	// over a failed close.
	if code, out, errOut := run(errors.New("close"), DataErrf("bad")); code != ExitDataErr || out != "" || errOut != "wc-test: bad\n" {
		t.Errorf("not partial: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
