package storedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/wctoolkit/wc/pkg/session/store"
)

// A store holds a user's transcripts and is the meeting point of their
// commands and the store process, so, as ssh and gpg do with their files,
// wc uses a store only when no one else can have put anything in it: the
// store directory and every entry in it belong to the user the command
// runs as (or, when asked, to one other user whose store is only read),
// none is writable by group or others, none is a symbolic link, and no
// directory above it lets others replace it.

// Trust says whose store a command may use.
type Trust struct {
	// OtherOwner lets the command read a store another user owns (as
	// root reads a user's store): it then only reads, writes nothing
	// there and talks to no store process.
	OtherOwner bool
}

// storeEntryKinds are the entries of a store directory and their types.
var storeEntryKinds = map[string]fs.FileMode{
	"lock": 0, "db": fs.ModeDir, "db.new": fs.ModeDir, "db.old": fs.ModeDir, "wcd.sock": fs.ModeSocket,
}

// CheckStore checks the store directory dir, its entries and the
// directories above it, and returns the uid that owns it (that of the
// command when dir does not exist yet). It reads only inodes.
func CheckStore(dir string, trust Trust) (owner int, err error) {
	me := os.Geteuid()
	owner = me
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return me, checkAncestors(dir, me, me)
	case err != nil:
		return me, nil // the open reports it
	case !fi.IsDir():
		return me, nil // the open says it is not a store
	}
	owner = ownerOf(fi)
	if owner != me && !trust.OtherOwner {
		return owner, notYoursError(dir, fi, me)
	}
	// Where the path leads, and, for a path through a link, where the
	// link is: whoever may replace the link chooses the store.
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return me, nil
	}
	for _, p := range []string{dir, real} {
		if err := checkAncestors(p, me, owner); err != nil {
			return me, err
		}
	}
	if err := checkMode(dir, fi); err != nil {
		return owner, err
	}
	for name, kind := range storeEntryKinds {
		path := filepath.Join(dir, name)
		fi, err := os.Lstat(path)
		if err != nil {
			continue // absent, or the open reports it
		}
		if fi.Mode()&fs.ModeSymlink == 0 && name == "db" {
			kind = fi.Mode().Type() // a file there is not a store: the open says so
		}
		if err := CheckEntry(path, fi, owner, kind); err != nil {
			return owner, err
		}
	}
	return owner, nil
}

// CheckEntry refuses an entry of a store that is a symbolic link or not
// of its kind, belongs to another user than owner, or that group or
// others may write.
func CheckEntry(path string, fi fs.FileInfo, owner int, kind fs.FileMode) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return unsafeError(path, "is a symbolic link", "a store holds no links: remove it (the commands recreate what they need)")
	case fi.Mode().Type() != kind:
		return unsafeError(path, "is a "+typeName(fi.Mode().Type())+" where wc keeps a "+typeName(kind), "remove it")
	case ownerOf(fi) != owner:
		return unsafeError(path, "belongs to "+UserName(ownerOf(fi))+", not to "+UserName(owner)+", who owns the store",
			"remove it, or give it to the store's owner (chown)")
	}
	return checkMode(path, fi)
}

// checkMode refuses what group or others may write.
func checkMode(path string, fi fs.FileInfo) error {
	if fi.Mode().Perm()&0o022 != 0 {
		return unsafeError(path, fmt.Sprintf("is writable by %s (mode %s)", writers(fi.Mode()), fi.Mode()),
			fmt.Sprintf("chmod go-w %s, once nobody else has put anything in it", path))
	}
	return nil
}

// checkAncestors refuses a store below a directory that someone else may
// rename entries of: one writable by group or others without the sticky
// bit (which /tmp has), or owned by another user than root, me and the
// store's owner.
func checkAncestors(path string, me, owner int) error {
	for dir := filepath.Dir(filepath.Clean(path)); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err == nil {
			o := ownerOf(fi)
			switch {
			case o != 0 && o != me && o != owner && fi.Mode()&fs.ModeSticky == 0:
				return unsafeError(dir, "belongs to "+UserName(o)+", who could replace the store in it", "keep the store in a directory of your own")
			case fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0:
				return unsafeError(dir, fmt.Sprintf("is writable by %s (mode %s), who could replace the store in it", writers(fi.Mode()), fi.Mode()),
					"keep the store in a directory only you can write")
			}
		}
		if dir == filepath.Dir(dir) {
			return nil
		}
	}
}

func writers(m fs.FileMode) string {
	switch {
	case m&0o020 != 0 && m&0o002 != 0:
		return "group and others"
	case m&0o020 != 0:
		return "its group"
	}
	return "others"
}

func typeName(t fs.FileMode) string {
	switch t {
	case 0:
		return "file"
	case fs.ModeDir:
		return "directory"
	case fs.ModeSocket:
		return "socket"
	case fs.ModeSymlink:
		return "symbolic link"
	case fs.ModeNamedPipe:
		return "named pipe"
	}
	return "special file"
}

func notYoursError(dir string, fi fs.FileInfo, me int) error {
	return &store.KindError{Msg: fmt.Sprintf("store %s belongs to %s, not to %s (mode %s)", dir, UserName(ownerOf(fi)), UserName(me), fi.Mode()),
		Kind: store.ErrUnsafe, Hints: []string{"use a store of your own (--store, WC_STORE); to read this one without writing to it, add --other-owner"}}
}

func unsafeError(path, what, hint string) error {
	return &store.KindError{Msg: "store: " + path + " " + what, Kind: store.ErrUnsafe, Hints: []string{hint}}
}

func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// UserName is a uid as "name (uid N)", or "uid N" without a name. It
// reads /etc/passwd itself: os/user would link the C library into every
// command, for an error message.
func UserName(uid int) string {
	data, _ := os.ReadFile("/etc/passwd")
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) > 2 && f[2] == strconv.Itoa(uid) {
			return fmt.Sprintf("%s (uid %d)", f[0], uid)
		}
	}
	return fmt.Sprintf("uid %d", uid)
}
