package tool

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/wctoolkit/wc/pkg/session/store"
)

// The resident store process keeps the store open between commands, so a
// command pays for a socket round trip instead of Badger's read-write open
// and close. Any wc binary runs it when started with serveEnv set; it stops
// after residentIdle without clients.
const (
	serveEnv     = "WC_STORE_SERVE"
	directEnv    = "WC_DIRECT"
	residentEnv  = "WC_RESIDENT"
	residentIdle = 2 * time.Second
	// How long a command waits for a resident process it started before it
	// opens the store itself.
	residentStart = 500 * time.Millisecond
	// Unix socket paths are limited to 108 bytes on Linux.
	maxSocketPath = 104
)

// serveIfAsked runs the resident store process when this process was
// started as one, and reports whether it was.
func serveIfAsked() bool {
	dir := os.Getenv(serveEnv)
	if dir == "" {
		return false
	}
	syscall.Umask(0o077)
	opts := store.Options{Dir: dir, Sync: envTrue("WC_SYNC")}
	// Nobody reads this process's output; a store another process holds
	// (ErrBusy) simply means no resident process is needed from us.
	_ = store.Serve(opts, residentIdle)
	return true
}

// resident reports whether a command should go through the resident
// process: when WC_RESIDENT=1 (for now it is opt-in, until the crash suite
// covers a resident process killed mid-commit), not when WC_DIRECT=1, and
// not for a reader of a store that does not exist yet (readers create
// nothing).
func resident(opts store.Options, mode store.Mode) bool {
	if !envTrue(residentEnv) || envTrue(directEnv) {
		return false
	}
	if len(store.SocketPath(opts.Dir)) > maxSocketPath {
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
// store itself, behind whatever holds its lock.
func dialResident(opts store.Options, mode store.Mode) (store.Handle, error) {
	c, err := store.Dial(opts, mode)
	if err == nil || errors.Is(err, store.ErrBusy) {
		return handleOrNil(c, err)
	}
	if err := startResident(opts); err != nil {
		return nil, nil
	}
	deadline := time.Now().Add(residentStart)
	for wait := time.Millisecond; time.Now().Before(deadline); wait = min(2*wait, 20*time.Millisecond) {
		time.Sleep(wait)
		c, err := store.Dial(opts, mode)
		if err == nil || errors.Is(err, store.ErrBusy) {
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

// startResident starts this binary as the resident process of the store,
// detached from the command's session and streams.
func startResident(opts store.Options) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), serveEnv+"="+opts.Dir)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}

func envTrue(name string) bool {
	v := os.Getenv(name)
	return v == "1" || v == "true"
}
