package open

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
)

// The resident store process keeps the store open between commands, so a
// command pays for a few socket round trips instead of Badger's read-write
// open and close. It is wc-store, started by the first command that needs
// it; it stops after ResidentIdle without clients.
const (
	ServeEnv        = "WC_STORE_SERVE"        // the store directory: serve it as the resident process
	ServeStatusEnv  = "WC_STORE_SERVE_STATUS" // the descriptor it reports its start on
	ServeWaitEnv    = "WC_STORE_SERVE_WAIT"   // how long it may wait for the store's lock
	PrivateEnv      = "WC_STORE_PRIVATE"      // the store directory: serve one command on descriptor 3
	directEnv       = "WC_DIRECT"
	residentEnv     = "WC_RESIDENT"
	ResidentIdleEnv = "WC_RESIDENT_IDLE"
	ResidentIdle    = 10 * time.Minute
	// How long, beyond its lock timeout, a command waits for the resident
	// process it started to open the store (a crash recovery may replay a
	// long log) before it opens the store itself.
	residentStartGrace = 10 * time.Second
)

// What a starting resident process reports on its status descriptor.
const (
	StatusReady  = 'r' // listening
	StatusBusy   = 'b' // another process holds the store (another resident one answers, or the lock wait timed out)
	StatusFailed = 'e' // it cannot serve this store: open it directly
)

// ForcedDirect reports whether the user asked to open the store in the
// command itself: WC_DIRECT=1, or WC_RESIDENT=0.
func ForcedDirect() bool { return EnvTrue(directEnv) || envFalse(residentEnv) }

// Resident reports whether a command should go through the resident
// process: by default, but not when forced direct, and not for a reader of
// a store that does not exist yet (readers create nothing).
func Resident(dir string, mode store.Mode) bool {
	if ForcedDirect() {
		return false
	}
	if mode == store.Read {
		if _, err := os.Stat(filepath.Join(dir, "db")); err != nil {
			return false
		}
	}
	return true
}

// DialResident connects to the resident process, starting it when there is
// none. It returns nil, nil when none can be had: the caller then opens the
// store directly, with what is left of its lock timeout.
func DialResident(dir string, ask remote.Ask) (store.Handle, error) {
	c, err := remote.Dial(dir, ask)
	if !errors.Is(err, remote.ErrNoServer) {
		return handleOrNil(c, err)
	}
	if !mayServe(dir) {
		return nil, nil
	}
	start := time.Now()
	switch startResident(dir, ask.LockTimeout) {
	case StatusReady, StatusBusy:
		// Ours, or another command's that won the race.
		ask.LockTimeout = max(0, ask.LockTimeout-time.Since(start))
		c, err := remote.Dial(dir, ask)
		if !errors.Is(err, remote.ErrNoServer) {
			return handleOrNil(c, err)
		}
	}
	return nil, nil
}

func handleOrNil(c *remote.Client, err error) (store.Handle, error) {
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

// startResident starts wc-store as the resident process of the store,
// detached from the command's session and streams, and waits until it
// reports whether it serves.
func startResident(dir string, timeout time.Duration) byte {
	program, err := storeProgram()
	if err != nil {
		return StatusFailed
	}
	r, w, err := os.Pipe()
	if err != nil {
		return StatusFailed
	}
	defer r.Close()
	cmd := exec.Command(program)
	cmd.Env = append(os.Environ(), ServeEnv+"="+dir, ServeStatusEnv+"=3", ServeWaitEnv+"="+timeout.String())
	cmd.ExtraFiles = []*os.File{w} // descriptor 3
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return StatusFailed
	}
	_ = cmd.Process.Release()
	_ = r.SetReadDeadline(time.Now().Add(timeout + residentStartGrace))
	var b [1]byte
	if n, _ := r.Read(b[:]); n == 1 {
		return b[0]
	}
	return StatusFailed // it died, or hangs: open the store directly
}

// EnvTrue reports whether the variable name is set to 1 or true.
func EnvTrue(name string) bool {
	v := os.Getenv(name)
	return v == "1" || v == "true"
}

func envFalse(name string) bool {
	v := os.Getenv(name)
	return v == "0" || v == "false"
}
