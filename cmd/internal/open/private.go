package open

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
)

// OtherOwnerEnv is --other-owner's variable; a private store process reads
// it too.
const OtherOwnerEnv = "WC_OTHER_OWNER"

// FailedError is a store that this install cannot open (no wc-store, one
// of another build): the command fails with its general status, and
// prints the hints.
type FailedError struct {
	Msg   string
	Hints []string
}

func (e *FailedError) Error() string { return e.Msg }

// storeProgramEnv names the wc-store to run, for installs that keep it
// apart from the other commands.
const storeProgramEnv = "WC_STORE_PROGRAM"

// storeProgram finds wc-store, the program that opens the store: where
// WC_STORE_PROGRAM says, else beside this command, else on PATH.
func storeProgram() (string, error) {
	if p := os.Getenv(storeProgramEnv); p != "" {
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "wc-store")
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	if p, err := exec.LookPath("wc-store"); err == nil {
		return p, nil
	}
	return "", &FailedError{Msg: "cannot find wc-store, which opens the store",
		Hints: []string{"install it beside this command or on PATH (go install ./cmd/...), or set " + storeProgramEnv}}
}

// privateStore is a command's own store process: wc-store, serving only
// this command on a socket pair, opens the store for it and closes it when
// the command ends. That is how a command that does not link the store
// opens it directly.
type privateStore struct {
	*remote.Client
	proc *exec.Cmd
}

// OpenPrivate starts a private store process and takes the store's lock
// through it, for ask.Mode, within ask.LockTimeout.
func OpenPrivate(dir string, ask remote.Ask, sync, otherOwner bool) (store.Handle, error) {
	program, err := storeProgram()
	if err != nil {
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("store: cannot start wc-store: %w", err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "store-socket")
	cmd := exec.Command(program)
	cmd.Env = append(os.Environ(), PrivateEnv+"="+dir, "WC_SYNC="+strconv.FormatBool(sync), OtherOwnerEnv+"="+strconv.FormatBool(otherOwner))
	cmd.ExtraFiles = []*os.File{theirs} // descriptor 3
	cmd.Stderr = os.Stderr              // Badger's warnings, as when the command opened the store itself
	err = cmd.Start()
	theirs.Close()
	conn := remote.NewSocket(fds[0])
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("store: cannot start %s: %v", program, err)
	}
	c, err := remote.Attach(conn, ask)
	if err != nil {
		werr := cmd.Wait()
		switch {
		case errors.Is(err, remote.ErrOtherProtocol):
			return nil, &FailedError{Msg: "store: " + program + " comes from another wc build than this command",
				Hints: []string{"install the wc commands together (go install ./cmd/...), or set " + storeProgramEnv}}
		case errors.Is(err, remote.ErrNoServer):
			return nil, fmt.Errorf("store: %s exited before it answered (%v)", program, werr)
		}
		return nil, err
	}
	return &privateStore{Client: c, proc: cmd}, nil
}

// Close ends the command's use of the store and waits until the store
// process has closed it, so that the store is free when the command exits.
func (p *privateStore) Close() error {
	if p.proc == nil {
		return nil
	}
	err := p.Client.Close()
	if werr := p.proc.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("store: the store process failed: %v", werr)
	}
	p.proc = nil
	return err
}
