package open

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
	"github.com/wctoolkit/wc/pkg/session/store/storedir"
)

// A store on etcd (--store etcd://HOST:PORT[,…]/PREFIX[?PARAMS]) is
// always reached through a wc-store: the commands link no etcd client.
// Its resident process cannot keep its socket in a store directory, so
// it keeps it in the user's runtime directory, named by a hash of the
// URL, with the lock file that makes it the URL's only resident process
// for this user on this machine.

// sharedScheme begins the URL of a store on etcd; wc-store checks the rest.
const sharedScheme = "etcd://"

// IsSharedURL tells a --store naming a store on etcd from a directory.
func IsSharedURL(s string) bool { return strings.HasPrefix(s, sharedScheme) }

// runtimeDirEnv is where the user's runtime files go (XDG Base Directory).
const runtimeDirEnv = "XDG_RUNTIME_DIR"

// RuntimeDir is the directory of the sockets of stores without a
// directory: $XDG_RUNTIME_DIR/wc, else /tmp/wc-UID. It is created
// owner-only and checked as a store directory is (it and the directories
// above it are the user's or root's, writable by nobody else), so that
// no other user can put a socket where a command would talk to it.
func RuntimeDir() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("wc-%d", os.Geteuid()))
	if base := os.Getenv(runtimeDirEnv); filepath.IsAbs(base) {
		dir = filepath.Join(base, "wc")
	}
	if _, err := storedir.CheckStore(dir, storedir.Trust{}); err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("store: cannot make the runtime directory %s: %v", dir, pathErr(err))
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("store: cannot use the runtime directory %s: %v", dir, pathErr(err))
	}
	if !fi.IsDir() {
		return "", &store.KindError{Msg: "store: " + dir + " is not a directory (wc keeps the sockets of etcd stores there)", Kind: store.ErrUnsafe,
			Hints: []string{"remove it, or set " + runtimeDirEnv + " to a directory of your own"}}
	}
	if _, err := storedir.CheckStore(dir, storedir.Trust{}); err != nil {
		return "", err
	}
	return dir, nil
}

func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// SharedSocket is where the resident process of the store at url
// listens, and its lock file.
func SharedSocket(url string) (sock, lock string, err error) {
	dir, err := RuntimeDir()
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256([]byte(StoreName(url)))
	name := "etcd-" + hex.EncodeToString(sum[:8])
	sock = filepath.Join(dir, name+".sock")
	if len(sock) > maxSocketPath {
		return "", "", &store.KindError{Msg: fmt.Sprintf("store: the socket path %s is %d bytes, longer than a Unix socket's %d", sock, len(sock), maxSocketPath), Kind: store.ErrUnsafe,
			Hints: []string{"set " + runtimeDirEnv + " to a shorter directory (wc keeps the sockets of etcd stores in $" + runtimeDirEnv + "/wc)"}}
	}
	return sock, filepath.Join(dir, name+".lock"), nil
}

// maxSocketPath is the longest path a Unix socket may have on Linux:
// sun_path holds 108 bytes with the terminating NUL.
const maxSocketPath = 107

// StoreName is the store url as messages name it: without what could be
// a password before its hosts (which wc-store refuses, naming no
// secret).
func StoreName(url string) string {
	rest := strings.TrimPrefix(url, sharedScheme)
	hosts := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		hosts = rest[:i]
	}
	if at := strings.LastIndex(hosts, "@"); at >= 0 {
		return sharedScheme + rest[at+1:]
	}
	return url
}

// DialShared connects to the resident process of the store at url,
// starting it when there is none; nil, nil when none can be had (the
// caller then starts a private one, which says why).
func DialShared(url string, ask remote.Ask) (store.Handle, error) {
	sock, _, err := SharedSocket(url)
	if err != nil {
		return nil, err
	}
	c, err := remote.DialAt(sock, StoreName(url), ask)
	if !errors.Is(err, remote.ErrNoServer) {
		return handleOrNil(c, err)
	}
	start := time.Now()
	switch startResident(url, ask.LockTimeout) {
	case StatusReady, StatusBusy:
		ask.LockTimeout = max(0, ask.LockTimeout-time.Since(start))
		c, err := remote.DialAt(sock, StoreName(url), ask)
		if !errors.Is(err, remote.ErrNoServer) {
			return handleOrNil(c, err)
		}
	}
	return nil, nil
}

// ShutdownShared asks the resident process of the store at url to stop,
// as remote.Shutdown does for a directory.
func ShutdownShared(url string, timeout time.Duration) (bool, error) {
	sock, lock, err := SharedSocket(url)
	if err != nil {
		return false, err
	}
	return remote.ShutdownAt(sock, lock, StoreName(url), timeout)
}
