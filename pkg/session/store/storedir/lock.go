package storedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wctoolkit/wc/pkg/session/store"
)

// ErrLockTimeout is returned by FlockUntil when the wait timed out.
var ErrLockTimeout = errors.New("store: timed out waiting for the lock")

// FlockUntil takes how (LOCK_SH or LOCK_EX) on f, waiting until deadline.
// flock(2) has no timeout, so the blocking call runs in a goroutine; on
// timeout f is closed, and because flock locks belong to the open file
// description, the kernel drops the lock as soon as the abandoned call
// returns with it. On ErrLockTimeout f must not be used again.
func FlockUntil(f *os.File, how int, deadline time.Time) error {
	err := Flock(f, how|syscall.LOCK_NB)
	if err == nil || !errors.Is(err, syscall.EWOULDBLOCK) {
		return err
	}
	wait := time.Until(deadline)
	if wait <= 0 {
		_ = f.Close()
		return ErrLockTimeout
	}
	done := make(chan error, 1)
	go func() {
		for {
			err := Flock(f, how)
			if !errors.Is(err, syscall.EINTR) {
				done <- err
				return
			}
		}
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		// Control (in Flock) holds a reference to the fd, so the
		// real close(2) happens when the pending flock returns; the fd
		// number cannot be reused under it meanwhile.
		_ = f.Close()
		return ErrLockTimeout
	}
}

// Flock runs flock(2) once on f's descriptor while holding a reference to it.
func Flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = syscall.Flock(int(fd), how) }); err != nil {
		return err
	}
	return ferr
}

// Unlock releases a lock FlockUntil took and closes f; closing alone would
// do, but an explicit LOCK_UN makes the release independent of any
// duplicated descriptor.
func Unlock(f *os.File) {
	_ = Flock(f, syscall.LOCK_UN)
	_ = f.Close()
}

// BusyError is the error of a store whose lock could not be had in time;
// it names the process that holds it, when this user may see it.
func BusyError(dir string) error {
	pid := lockHolder(filepath.Join(dir, "lock"))
	if pid == 0 {
		return &store.KindError{Msg: fmt.Sprintf("store %s is busy (timed out waiting for its lock)", dir), Kind: store.ErrBusy}
	}
	name, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return &store.KindError{Msg: fmt.Sprintf("store %s is busy (timed out waiting for its lock, which process %d, %s, holds)", dir, pid, strings.TrimSpace(string(name))),
		Kind: store.ErrBusy, Hints: []string{fmt.Sprintf("raise --lock-timeout or WC_LOCK_TIMEOUT to wait longer; if process %d is stopped, continue it (kill -CONT %d)", pid, pid)}}
}

// lockHolder is the process holding a flock on path, from /proc/locks
// (0 when none is found).
func lockHolder(path string) int {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	data, _ := os.ReadFile("/proc/locks")
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		// 1: FLOCK ADVISORY WRITE 31244 fe:00:9978331 0 EOF
		if len(f) >= 6 && f[1] == "FLOCK" && f[5] == want {
			pid, _ := strconv.Atoi(f[4])
			return pid
		}
	}
	return 0
}
