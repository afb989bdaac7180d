package remote

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/storedir"
)

// blockingConn is a command's end of the socket, read and written with
// plain blocking system calls: the command has nothing else to do while it
// waits, and going through the runtime's poller costs a wakeup per round
// trip.
type blockingConn struct {
	fd  int
	pid int // the peer's process, when known
}

// dialBlocking connects to the socket at path, and to nothing but a
// process of this user's: the socket of a store another user could write
// in would hand them the command's messages (see CheckStore, which
// refuses such stores before anything is dialled).
func dialBlocking(path string) (*blockingConn, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: path})
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	if int(cred.Uid) != os.Geteuid() {
		unix.Close(fd)
		return nil, &store.KindError{Msg: fmt.Sprintf("store: the process listening on %s (pid %d) runs as %s, not as you", path, cred.Pid, storedir.UserName(int(cred.Uid))),
			Kind: store.ErrUnsafe, Hints: []string{"a store process of another user's is never talked to: remove the socket, or use a store of your own"}}
	}
	return &blockingConn{fd: fd, pid: int(cred.Pid)}, nil
}

// errNoAnswer is a read that waited past its deadline.
var errNoAnswer = errors.New("store: no answer from the store process")

// setDeadline bounds each read from now on (0: no bound).
func (c *blockingConn) setDeadline(d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	if d > 0 && tv.Sec == 0 && tv.Usec == 0 {
		tv.Usec = 1
	}
	return unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
}

func (c *blockingConn) Read(b []byte) (int, error) {
	for {
		n, err := unix.Read(c.fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, errNoAnswer
		case err != nil:
			return 0, err
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c *blockingConn) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		// MSG_NOSIGNAL: a peer that is gone is an error, not a SIGPIPE.
		n, err := unix.SendmsgN(c.fd, b[done:], nil, nil, unix.MSG_NOSIGNAL)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

func (c *blockingConn) Close() error { return unix.Close(c.fd) }

// NewSocket is a connection over fd, a connected stream socket (one end of
// a socket pair), which it owns from now on.
func NewSocket(fd int) io.ReadWriteCloser { return &blockingConn{fd: fd} }
