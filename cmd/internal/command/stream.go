package command

import (
	"bytes"
	"io"
	"os"
	"sync"
)

// Output is where an action's results go. A writer's output is held until
// the store is closed, so that what it prints is on disk. A reader's
// (Spec.Streams) goes to stdout while it reads: what it prints is on disk
// already, and holding a large export would cost its size in memory.
type Output struct {
	held  bytes.Buffer
	spool *spool // nil: held
	chunk []byte // filling, handed to the spool when full
}

// Write implements io.Writer.
func (o *Output) Write(p []byte) (int, error) {
	if o.spool == nil {
		return o.held.Write(p)
	}
	n := len(p)
	for len(p) > 0 {
		if len(o.chunk) == cap(o.chunk) {
			if err := o.hand(); err != nil {
				return n - len(p), err
			}
		}
		k := copy(o.chunk[len(o.chunk):cap(o.chunk)], p)
		o.chunk = o.chunk[:len(o.chunk)+k]
		p = p[k:]
	}
	return n, o.spool.failed()
}

// Grow makes room for n more bytes of output held until the command ends.
func (o *Output) Grow(n int) {
	if o.spool == nil {
		o.held.Grow(n)
	}
}

// WriteString implements io.StringWriter.
func (o *Output) WriteString(s string) (int, error) {
	if o.spool == nil {
		return o.held.WriteString(s)
	}
	n := len(s)
	for len(s) > 0 {
		if len(o.chunk) == cap(o.chunk) {
			if err := o.hand(); err != nil {
				return n - len(s), err
			}
		}
		k := copy(o.chunk[len(o.chunk):cap(o.chunk)], s)
		o.chunk = o.chunk[:len(o.chunk)+k]
		s = s[k:]
	}
	return n, o.spool.failed()
}

// WriteByte implements io.ByteWriter.
func (o *Output) WriteByte(c byte) error {
	_, err := o.Write([]byte{c})
	return err
}

func (o *Output) hand() error {
	o.spool.push(o.chunk)
	o.chunk = o.spool.newChunk()
	return o.spool.failed()
}

func (o *Output) startStreaming(dst io.Writer) {
	o.spool = newSpool(dst)
	o.chunk = o.spool.newChunk()
}

// Flush passes what was written so far on to stdout now, for a streaming
// command that then waits (wc-store's line once it serves).
func (c *Ctx) Flush() error {
	if c.out.spool == nil || len(c.out.chunk) == 0 {
		return nil
	}
	return c.out.hand()
}

// finish writes out what is left and waits until stdout has taken it all.
func (o *Output) finish() error {
	if len(o.chunk) > 0 {
		o.spool.push(o.chunk)
	}
	o.chunk = nil
	return o.spool.close()
}

const (
	spoolChunk = 64 << 10
	// What a slow consumer may leave in memory; beyond it the output
	// waits in a temporary file until the consumer catches up, so that a
	// reader never holds the store's lock (and writers) for as long as
	// someone pages its output.
	spoolMemory = 1 << 20
)

// spool carries a reader's output to stdout on a goroutine of its own. The
// action never waits for stdout: what stdout has not taken yet waits in
// memory, then in an unlinked temporary file, and is written out after the
// store is closed if need be.
type spool struct {
	dst  io.Writer
	mu   sync.Mutex
	cond sync.Cond
	mem  [][]byte // in order, before anything in the file
	held int      // bytes in mem
	free [][]byte
	file *os.File
	// While spilled, every chunk goes to the file, until stdout has taken
	// all of it.
	spilled bool
	// Bytes written to the file and read back from it.
	fileEnd, fileRead int64
	closed            bool
	err               error // stdout's first write error; later output is dropped
	done              chan struct{}
}

func newSpool(dst io.Writer) *spool {
	s := &spool{dst: dst, done: make(chan struct{})}
	s.cond.L = &s.mu
	go s.drain()
	return s
}

func (s *spool) newChunk() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.free); n > 0 {
		c := s.free[n-1]
		s.free = s.free[:n-1]
		return c[:0]
	}
	return make([]byte, 0, spoolChunk)
}

func (s *spool) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return &Error{Code: ExitFailure, Msg: "writing output: " + errorLine(s.err)}
	}
	return nil
}

func (s *spool) push(c []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spilled && s.fileRead == s.fileEnd {
		// stdout has caught up with the file (and so with memory, which
		// went out before it): back to memory, and the file is emptied.
		s.spilled = false
		s.fileRead, s.fileEnd = 0, 0
		if err := s.file.Truncate(0); err != nil {
			s.err = err
		}
	}
	for s.err == nil && !s.spilled && s.held+len(c) > spoolMemory {
		if s.spill() {
			break
		}
		s.cond.Wait() // no temporary file: wait for stdout instead
	}
	switch {
	case s.err != nil:
	case s.spilled:
		if _, err := s.file.WriteAt(c, s.fileEnd); err != nil {
			s.err = err
		} else {
			s.fileEnd += int64(len(c))
		}
		s.free = append(s.free, c)
	default:
		s.mem = append(s.mem, c)
		s.held += len(c)
	}
	s.cond.Broadcast()
}

// spill creates the temporary file; it is unlinked at once, so nothing is
// left behind whatever happens to the process.
func (s *spool) spill() bool {
	if s.file != nil {
		s.spilled = true
		return true
	}
	f, err := os.CreateTemp("", "wc-spool-")
	if err != nil {
		return false
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return false
	}
	s.file, s.spilled = f, true
	return true
}

// drain writes to stdout what the action produced, in order: memory first,
// then the file.
func (s *spool) drain() {
	defer close(s.done)
	var buf []byte
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for len(s.mem) == 0 && s.fileRead == s.fileEnd && !s.closed && s.err == nil {
			s.cond.Wait()
		}
		var err error
		switch {
		case s.err != nil:
			return
		case len(s.mem) > 0:
			c := s.mem[0]
			s.mem = s.mem[1:]
			s.mu.Unlock()
			_, err = s.dst.Write(c)
			s.mu.Lock()
			s.held -= len(c)
			s.free = append(s.free, c)
		case s.fileRead < s.fileEnd:
			if buf == nil {
				buf = make([]byte, spoolChunk)
			}
			n := int(min(int64(len(buf)), s.fileEnd-s.fileRead))
			f, at := s.file, s.fileRead
			s.mu.Unlock()
			if _, err = f.ReadAt(buf[:n], at); err == nil {
				_, err = s.dst.Write(buf[:n])
			}
			s.mu.Lock()
			s.fileRead += int64(n)
		default: // closed, and everything written
			return
		}
		if err != nil && s.err == nil {
			s.err = err
		}
		s.cond.Broadcast()
	}
}

// close waits until everything pushed has been written, and returns
// stdout's error if there was one.
func (s *spool) close() error {
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	<-s.done
	if s.file != nil {
		s.file.Close()
	}
	return s.failed()
}
