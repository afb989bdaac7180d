package tool

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wctoolkit/wc/pkg/session/store"
)

// The resident store process keeps the store open between commands, so a
// command pays for a few socket round trips instead of Badger's read-write
// open and close. Any wc binary runs it when started with serveEnv set; it
// stops after residentIdle without clients.
const (
	serveEnv        = "WC_STORE_SERVE"        // the store directory
	serveStatusEnv  = "WC_STORE_SERVE_STATUS" // the descriptor it reports its start on
	serveWaitEnv    = "WC_STORE_SERVE_WAIT"   // how long it may wait for the store's lock
	directEnv       = "WC_DIRECT"
	residentEnv     = "WC_RESIDENT"
	residentIdleEnv = "WC_RESIDENT_IDLE"
	residentIdle    = 2 * time.Second
	// How long, beyond its lock timeout, a command waits for the resident
	// process it started to open the store (a crash recovery may replay a
	// long log) before it opens the store itself.
	residentStartGrace = 10 * time.Second
	// A soft limit on the resident process's Go heap: Badger's memtables
	// and block cache live there (12-16 MB), and what a command reads
	// through it is garbage as soon as it is sent.
	residentMemoryLimit = 40 << 20
)

// What a starting resident process reports on its status descriptor.
const (
	statusReady  = 'r' // listening
	statusBusy   = 'b' // another process holds the store (another resident one answers, or the lock wait timed out)
	statusFailed = 'e' // it cannot serve this store: open it directly
)

// serveIfAsked runs the resident store process when this process was
// started as one, and reports whether it was.
func serveIfAsked() bool {
	dir := os.Getenv(serveEnv)
	if dir == "" {
		return false
	}
	syscall.Umask(0o077)
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(residentMemoryLimit)
	}
	var status *os.File
	if fd, err := strconv.Atoi(os.Getenv(serveStatusEnv)); err == nil && fd > 2 {
		status = os.NewFile(uintptr(fd), "status")
	}
	report := func(b byte) {
		if status != nil {
			_, _ = status.Write([]byte{b})
			status.Close()
			status = nil
		}
	}
	wait, _ := time.ParseDuration(os.Getenv(serveWaitEnv))
	idle := residentIdle
	if d, err := time.ParseDuration(os.Getenv(residentIdleEnv)); err == nil && d > 0 {
		idle = d
	}
	exe, _ := os.Executable()
	exeInfo, _ := os.Stat(exe)
	// SIGTERM (a shutdown, a kill) closes the store as going idle does.
	stop := make(chan struct{})
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		<-sigs
		close(stop)
	}()
	cfg := store.ServeConfig{
		Stop:  stop,
		Idle:  idle,
		Wait:  wait,
		Ready: func() { report(statusReady) },
		Stale: func() bool { return replaced(exe, exeInfo) },
	}
	// Nobody reads this process's output. ErrStoreGone: Main exits at once.
	err := store.Serve(store.Options{Dir: dir, Sync: envTrue("WC_SYNC")}, cfg)
	if errors.Is(err, store.ErrBusy) {
		report(statusBusy)
	}
	report(statusFailed) // unless it reported already
	return true
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

// forcedDirect reports whether the user asked to open the store in the
// command itself: WC_DIRECT=1, or WC_RESIDENT=0.
func forcedDirect() bool { return envTrue(directEnv) || envFalse(residentEnv) }

// resident reports whether a command should go through the resident
// process: by default, but not when forced direct, and not for a reader of
// a store that does not exist yet (readers create nothing).
func resident(opts store.Options, mode store.Mode) bool {
	if forcedDirect() {
		return false
	}
	if mode == store.Read {
		if _, err := os.Stat(filepath.Join(opts.Dir, "db")); err != nil {
			return false
		}
	}
	return true
}

// dialResident connects to the resident process, starting it when there is
// none. It returns nil, nil when none can be had: the caller then opens the
// store itself, with what is left of its lock timeout.
func dialResident(opts store.Options, mode store.Mode, first firstAsk) (store.Handle, error) {
	dial := func() (*store.Client, error) {
		if first.listing != nil {
			return store.DialListing(opts, *first.listing)
		}
		return store.Dial(opts, mode, first.refs...)
	}
	c, err := dial()
	if !errors.Is(err, store.ErrNoServer) {
		return handleOrNil(c, err)
	}
	if !mayServe(opts.Dir) {
		return nil, nil
	}
	start := time.Now()
	switch startResident(opts) {
	case statusReady, statusBusy:
		// Ours, or another command's that won the race.
		opts.LockTimeout = max(0, opts.LockTimeout-time.Since(start))
		c, err := dial()
		if !errors.Is(err, store.ErrNoServer) {
			return handleOrNil(c, err)
		}
	}
	return nil, nil
}

func handleOrNil(c *store.Client, err error) (store.Handle, error) {
	if err != nil {
		return nil, err
	}
	return c, nil
}

// mayServe tells, before starting anything, whether a resident process
// could open the store for writing: not on a read-only file system, nor in
// a directory or lock file this user may not write (another user's store,
// a read-only copy). Such stores are opened directly.
func mayServe(dir string) bool {
	target := dir
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		target = filepath.Dir(dir) // to be created
	}
	if unix.Access(target, unix.W_OK) != nil {
		return false
	}
	err := unix.Access(filepath.Join(dir, "lock"), unix.W_OK)
	return err == nil || errors.Is(err, fs.ErrNotExist)
}

// startResident starts this binary as the resident process of the store,
// detached from the command's session and streams, and waits until it
// reports whether it serves.
func startResident(opts store.Options) byte {
	self, err := os.Executable()
	if err != nil {
		return statusFailed
	}
	r, w, err := os.Pipe()
	if err != nil {
		return statusFailed
	}
	defer r.Close()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), serveEnv+"="+opts.Dir, serveStatusEnv+"=3", serveWaitEnv+"="+opts.LockTimeout.String())
	cmd.ExtraFiles = []*os.File{w} // descriptor 3
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return statusFailed
	}
	_ = cmd.Process.Release()
	_ = r.SetReadDeadline(time.Now().Add(opts.LockTimeout + residentStartGrace))
	var b [1]byte
	if n, _ := r.Read(b[:]); n == 1 {
		return b[0]
	}
	return statusFailed // it died, or hangs: open the store directly
}

func envTrue(name string) bool {
	v := os.Getenv(name)
	return v == "1" || v == "true"
}

func envFalse(name string) bool {
	v := os.Getenv(name)
	return v == "0" || v == "false"
}
