package remote

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/storedir"
	"github.com/wctoolkit/wc/pkg/session/store/wire"
)

// SocketPath is where the resident process of the store in dir listens.
func SocketPath(dir string) string { return filepath.Join(dir, "wcd.sock") }

// Dial connects to the resident process of the store in dir and takes its
// lock for ask.Mode, waiting up to ask.LockTimeout. It returns ErrBusy
// when that wait timed out, and ErrNoServer when there is no resident
// process to use.
func Dial(dir string, ask Ask) (*Client, error) {
	conn, err := DialSocket(filepath.Clean(dir))
	return dialed(conn, err, dir, ask)
}

// DialAt is Dial for the resident process listening at sock, of the
// store name names (a store with no directory: etcd).
func DialAt(sock, name string, ask Ask) (*Client, error) {
	conn, err := dialBlocking(sock)
	return dialed(conn, err, name, ask)
}

func dialed(conn io.ReadWriteCloser, err error, dir string, ask Ask) (*Client, error) {
	if errors.Is(err, store.ErrUnsafe) {
		return nil, err // another user's process listens there: never replaced silently
	}
	if err != nil {
		return nil, ErrNoServer
	}
	c, err := connect(conn, ask, dir)
	if err == errStale {
		return nil, ErrNoServer
	}
	return c, err
}

// maxSocketPath is the longest socket path a connect or bind takes (108
// bytes with its NUL on Linux), with room to spare.
const maxSocketPath = 100

// DialSocket connects to the socket of the store in dir; a path too long
// for a socket is reached through the directory's descriptor.
func DialSocket(dir string) (io.ReadWriteCloser, error) {
	sock := SocketPath(dir)
	if len(sock) <= maxSocketPath {
		return dialBlocking(sock)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return dialBlocking(SocketPath(fmt.Sprintf("/proc/self/fd/%d", fd)))
}

// Shutdown asks the resident process of dir to stop when its clients are
// done and waits up to timeout until it has closed the store (with 0, it
// only asks). Without a server it does nothing and reports false.
func Shutdown(dir string, timeout time.Duration) (bool, error) {
	dir = filepath.Clean(dir)
	conn, err := DialSocket(dir)
	return shutdown(conn, err, dir, filepath.Join(dir, "lock"), timeout)
}

// ShutdownAt is Shutdown for the resident process listening at sock, of
// the store name names, which holds the lock file lock while it serves.
func ShutdownAt(sock, lock, name string, timeout time.Duration) (bool, error) {
	conn, err := dialBlocking(sock)
	return shutdown(conn, err, name, lock, timeout)
}

func shutdown(conn io.ReadWriteCloser, err error, dir, lock string, timeout time.Duration) (bool, error) {
	if errors.Is(err, store.ErrUnsafe) {
		return false, err
	}
	if err != nil {
		return false, nil
	}
	wc := wire.NewConn(conn)
	err = wc.Send(&wire.Hello{Proto: wire.ProtocolVersion, Op: "shutdown", Build: wire.BuildID()})
	if timeout <= 0 {
		// The request is read from the socket whether or not we wait.
		conn.Close()
		return true, nil
	}
	if bc, ok := conn.(*blockingConn); ok && err == nil {
		_ = bc.setDeadline(timeout)
		var welcome wire.Welcome
		if err := wc.Recv(&welcome); errors.Is(err, errNoAnswer) {
			conn.Close()
			return true, noAnswerError(dir, bc.pid, timeout)
		}
	}
	conn.Close()
	// The server has stopped listening; it releases its lock once closed.
	f, err := os.OpenFile(lock, os.O_RDWR, 0)
	if err != nil {
		return true, nil
	}
	err = storedir.FlockUntil(f, syscall.LOCK_EX, time.Now().Add(timeout))
	if errors.Is(err, storedir.ErrLockTimeout) {
		return true, storedir.BusyError(dir)
	}
	if err != nil {
		f.Close()
		return true, fmt.Errorf("store: lock failed: %w", err)
	}
	storedir.Unlock(f)
	return true, nil
}

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
