package serve

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/cmd/internal/open"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/kvstore"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
)

// Open opens the store in this process: command.Spec.Direct.
func Open(o open.DirectOptions) (store.Handle, error) {
	st, err := kvstore.Open(kvstore.Options{Dir: o.Dir, LockTimeout: o.LockTimeout, Sync: o.Sync, Bulk: o.Bulk, OtherOwner: o.OtherOwner}, o.Mode)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// residentMemoryLimit is a soft limit on the resident process's Go heap:
// Badger's memtables and block cache live there (12-16 MB), and what a
// command reads through it is garbage as soon as it is sent.
const residentMemoryLimit = 40 << 20

// ServeIfAsked runs the store process this process was started as, if it
// was started as one by a command, and reports whether it was. A store on
// etcd is served through shared (nil in a program that cannot).
func ServeIfAsked(shared *Shared) bool {
	if target := os.Getenv(open.PrivateEnv); target != "" {
		servePrivate(target, shared)
		return true
	}
	dir := os.Getenv(open.ServeEnv)
	if dir == "" {
		return false
	}
	syscall.Umask(0o077)
	var status *os.File
	if fd, err := strconv.Atoi(os.Getenv(open.ServeStatusEnv)); err == nil && fd > 2 {
		status = os.NewFile(uintptr(fd), "status")
	}
	report := func(b byte) {
		if status != nil {
			_, _ = status.Write([]byte{b})
			status.Close()
			status = nil
		}
	}
	wait, _ := time.ParseDuration(os.Getenv(open.ServeWaitEnv))
	// Nobody reads this process's output. ErrStoreGone: exit at once.
	serve := Serve
	if open.IsSharedURL(dir) {
		if shared == nil {
			report(open.StatusFailed)
			return true
		}
		serve = shared.Serve
	}
	err := serve(dir, open.EnvTrue("WC_SYNC"), wait, IdleFromEnv(), func() { report(open.StatusReady) })
	if errors.Is(err, kvstore.ErrBusy) {
		report(open.StatusBusy)
	}
	report(open.StatusFailed) // unless it reported already
	return true
}

// IdleFromEnv is how long the resident process waits for a command:
// WC_RESIDENT_IDLE, else open.ResidentIdle.
func IdleFromEnv() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(open.ResidentIdleEnv)); err == nil && d > 0 {
		return d
	}
	return open.ResidentIdle
}

// Serve runs the resident store process of dir until it has been idle
// that long (forever with 0), a SIGTERM, SIGINT or SIGHUP, or a shutdown
// request. sync syncs every write; wait bounds its wait for the store's
// lock; ready is called once commands can connect.
func Serve(dir string, sync bool, wait, idle time.Duration, ready func()) error {
	cfg, done := ResidentConfig(wait, idle, ready)
	defer done()
	cfg.Reach = throughDescriptor
	return kvstore.Serve(kvstore.Options{Dir: dir, Sync: sync}, cfg)
}

// ResidentConfig is the configuration of a resident store process in this
// process, as Serve's arguments say, with its owner-only socket; call
// done once it has stopped serving.
func ResidentConfig(wait, idle time.Duration, ready func()) (cfg kvstore.ServeConfig, done func()) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(residentMemoryLimit)
	}
	if idle <= 0 {
		idle = 1 << 62
	}
	exe, _ := os.Executable()
	exeInfo, _ := os.Stat(exe)
	// A signal closes the store as going idle does.
	stop := make(chan struct{})
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		<-sigs
		close(stop)
	}()
	cfg = kvstore.ServeConfig{
		Stop:   stop,
		Idle:   idle,
		Wait:   wait,
		Ready:  ready,
		Stale:  func() bool { return replaced(exe, exeInfo) },
		Listen: listenOwnerOnly,
	}
	return cfg, func() { signal.Stop(sigs) }
}

// Shared serves stores on etcd, for wc-store: the only program that
// links the etcd client.
type Shared struct {
	// Serve runs the resident process of the store at url, as Serve does
	// for a directory.
	Serve func(url string, sync bool, wait, idle time.Duration, ready func()) error
	// Open opens the store at url for a private store process.
	Open func(url string, mode kvstore.Mode, lockTimeout time.Duration) (*kvstore.Store, error)
}

// replaced reports whether the file at path is no longer the program this
// process was started from: go install and go build write a new one in its
// place, whose commands must not be served by the old code.
func replaced(path string, was os.FileInfo) bool {
	if was == nil {
		return false
	}
	now, err := os.Stat(path)
	if err != nil {
		return false // removed (go run's binaries are): nothing newer to make way for
	}
	return !os.SameFile(now, was) || !now.ModTime().Equal(was.ModTime()) || now.Size() != was.Size()
}

// privateFD is the descriptor a command passes its end of the socket pair
// on (the first of exec.Cmd.ExtraFiles).
const privateFD = 3

// servePrivate serves the one command that started this process, on
// descriptor 3, and exits with 1 when the store could not be opened or
// closed (the command has been told why).
func servePrivate(target string, shared *Shared) {
	syscall.Umask(0o077)
	// Ctrl-C, and the SIGTERM of timeout(1) or a supervisor, reach the
	// command's whole process group; the command decides what they mean
	// (it finishes what it committed), and this process ends with its
	// connection.
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM)
	opened := make(chan struct{})
	go exitWhenOrphaned(privateFD, opened)
	opts := kvstore.Options{Dir: target, Sync: open.EnvTrue("WC_SYNC"), OtherOwner: open.EnvTrue(open.OtherOwnerEnv)}
	openStore := func(mode kvstore.Mode, lockTimeout time.Duration) (*kvstore.Store, error) {
		if !open.IsSharedURL(target) {
			opts.LockTimeout = lockTimeout
			return kvstore.Open(opts, mode)
		}
		if shared == nil {
			return nil, errors.New("store: this program cannot open a store on etcd: wc-store does")
		}
		return shared.Open(target, mode, lockTimeout)
	}
	err := kvstore.ServePrivateWith(remote.NewSocket(privateFD), openStore, func() { close(opened) })
	if err != nil {
		os.Exit(command.ExitFailure)
	}
}

// exitWhenOrphaned ends the process when its command goes away before the
// store is open: it may wait for the store's lock for as long as the
// command's --lock-timeout, and then open (or create) the store for
// nobody. Exiting is safe at any moment, as a kill -9 is. Once the store
// is open, the end of the connection closes it.
func exitWhenOrphaned(fd int, opened <-chan struct{}) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
	for {
		select {
		case <-opened:
			return
		default:
		}
		n, err := unix.Poll(fds, 100)
		if err == nil && n > 0 && fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0 {
			select {
			case <-opened:
				return
			default:
				os.Exit(command.ExitFailure)
			}
		}
	}
}

// throughDescriptor reaches the store directory d through its descriptor
// (/proc/self/fd/N) rather than its path, so that nothing is ever written
// into whatever takes the path later; it also keeps the socket's path
// short. Without /proc, the path: the server's watch must do.
func throughDescriptor(d *os.File, info os.FileInfo) string {
	root := fmt.Sprintf("/proc/self/fd/%d", d.Fd())
	if fi, err := os.Stat(root); err != nil || !os.SameFile(fi, info) {
		return d.Name()
	}
	return root
}

// listenOwnerOnly listens on a Unix socket at path that only this user
// may connect to (the store process checks each peer's uid too).
func listenOwnerOnly(path string) (net.Listener, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // removed by the server, and only while its own
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}
