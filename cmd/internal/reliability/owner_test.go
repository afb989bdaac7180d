package reliability

import (
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The ownership suite (issue 19, items 1, 2 and 5): a store another user
// could have put anything in is refused before any of it is used, a
// planted socket or link is never followed, and root reading a user's
// store (when asked to) leaves nothing there. As root (CI) it creates two
// unprivileged users, a victim and an attacker, and runs the commands as
// them; a listener run as the attacker records every byte anyone sends it.

// listenEnv makes the test binary a listener on the socket it names,
// which accepts every connection, never answers, and appends the count of
// bytes each sent to the file of listenLogEnv.
const (
	listenEnv    = "WC_TEST_LISTEN"
	listenLogEnv = "WC_TEST_LISTEN_LOG"
)

// listenIfAsked runs the listener, if this process was started as one.
func listenIfAsked() bool {
	path := os.Getenv(listenEnv)
	if path == "" {
		return false
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = os.Chmod(path, 0o777) // anyone may connect: the trap is set
	for {
		conn, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		go func() {
			n, _ := io.Copy(io.Discard, conn)
			f, err := os.OpenFile(os.Getenv(listenLogEnv), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
			if err == nil {
				fmt.Fprintf(f, "%d\n", n)
				f.Close()
			}
		}()
	}
}

// testUser is a user the suite created.
type testUser struct {
	name     string
	uid, gid int
	home     string
}

// makeUser creates an unprivileged user, removed when the test ends.
func makeUser(t *testing.T, prefix, base string) testUser {
	t.Helper()
	name := fmt.Sprintf("%s%d", prefix, os.Getpid())
	home := filepath.Join(base, name)
	if out, err := exec.Command("useradd", "--no-create-home", "--home-dir", home, "--shell", "/bin/false", "--user-group", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v: %s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, uid, gid); err != nil {
		t.Fatal(err)
	}
	return testUser{name: name, uid: uid, gid: gid, home: home}
}

// asUser is r with its commands run as u, with u's HOME.
func (r *runner) asUser(u testUser) *runner {
	c := r.withEnv("HOME="+u.home, "TMPDIR="+u.home)
	c.cred = &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}
	return c
}

// treeOf lists every entry under dir with its owner, mode, size and
// modification time: what a refused command must leave as it was.
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		out = append(out, fmt.Sprintf("%s uid=%d %v %d %d", path, st.Uid, fi.Mode(), fi.Size(), fi.ModTime().UnixNano()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the ownership suite runs commands as two users it creates, which needs root; CI runs it as root")
	}
	base, err := os.MkdirTemp("", "wc-owner-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	victim := makeUser(t, "wcvictim", base)
	attacker := makeUser(t, "wcattack", base)
	// The users can reach base, the commands and the test binary (the
	// listener), nothing more of root's.
	r := newRunner(t, filepath.Join(victim.home, "store"))
	for _, p := range []string{base, r.bin} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	listener := filepath.Join(base, "listener")
	if data, err := os.ReadFile(self); err != nil || os.WriteFile(listener, data, 0o755) != nil {
		t.Fatalf("copy the test binary: %v", err)
	}
	received := filepath.Join(attacker.home, "received")

	// listen starts the attacker's listener on a socket at path (in a
	// directory the attacker may write) and waits for it.
	listen := func(t *testing.T, path string) {
		t.Helper()
		cmd := exec.Command(listener)
		cmd.Env = append(os.Environ(), listenEnv+"="+path, listenLogEnv+"="+received)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(attacker.uid), Gid: uint32(attacker.gid)}}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSocket != 0 && fi.Mode().Perm() == 0o777 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the listener does not listen")
			}
		}
	}
	sent := func() int {
		data, _ := os.ReadFile(received)
		n := 0
		for _, f := range strings.Fields(string(data)) {
			v, _ := strconv.Atoi(f)
			n += v
		}
		return n
	}

	me := r.asUser(victim)
	id := idOf(me.direct().must(nil, "wc-new", "--title", "private"))
	me.direct().must(nil, "wc-append", id, "--text", "the victim's secret")
	wantLs := me.direct().must(nil, "wc-ls")

	refused := func(t *testing.T, rr *runner, want *regexp.Regexp, args ...string) {
		t.Helper()
		for _, mode := range []*runner{rr.direct(), rr.resident()} {
			res := mode.run(nil, args[0], args[1:]...)
			if res.Code != 1 || res.Stdout != "" || !want.MatchString(res.Stderr) || goTrace(res.Stderr) {
				t.Errorf("%s: %v", strings.Join(args, " "), res)
			}
		}
	}
	commands := [][]string{{"wc-ls"}, {"wc-export", id}, {"wc-append", id, "--text", "the victim's secret"}, {"wc-new", "--title", "x"}}

	t.Run("store made by another user", func(t *testing.T) {
		shared := filepath.Join(base, "shared")
		if err := os.Mkdir(shared, 0o777); err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(shared, 0o777)
		if err := os.Chown(shared, attacker.uid, attacker.gid); err != nil {
			t.Fatal(err)
		}
		listen(t, filepath.Join(shared, "wcd.sock"))
		before := treeOf(t, shared)
		want := regexp.MustCompile(`\Awc-\w+: store \S+/shared belongs to ` + attacker.name + ` \(uid \d+\), not to ` + victim.name + ` \(uid \d+\) \(mode drwxrwxrwx\)\nwc-\w+: hint: use a store of your own \(--store, WC_STORE\); to read this one without writing to it, add --other-owner\n\z`)
		for _, args := range commands {
			refused(t, me.withStore(shared), want, args...)
		}
		if after := treeOf(t, shared); !slices.Equal(before, after) {
			t.Errorf("the refused commands changed the store:\n%q\n%q", before, after)
		}
	})

	t.Run("store others may write", func(t *testing.T) {
		loose := filepath.Join(victim.home, "loose")
		if err := os.Mkdir(loose, 0o700); err != nil {
			t.Fatal(err)
		}
		_ = os.Chown(loose, victim.uid, victim.gid)
		_ = os.Chmod(loose, os.ModeSticky|0o777)
		want := regexp.MustCompile(`\Awc-\w+: store: \S+/loose is writable by group and others \(mode dtrwxrwxrwx\)\nwc-\w+: hint: chmod go-w \S+/loose, once nobody else has put anything in it\n\z`)
		for _, args := range commands {
			refused(t, me.withStore(loose), want, args...)
		}
	})

	// What the attacker plants in the victim's store: root puts it there
	// for them (a store the attacker could write is refused above).
	t.Run("planted socket", func(t *testing.T) {
		trap := filepath.Join(attacker.home, "trap.sock")
		listen(t, trap)
		sock := filepath.Join(me.store, "wcd.sock")
		for _, plant := range []struct {
			name string
			do   func() error
			want string
		}{
			{"the attacker's socket", func() error { return os.Rename(trap, sock) },
				`\Awc-\w+: store: \S+/wcd.sock belongs to ` + attacker.name + ` \(uid \d+\), not to ` + victim.name + ` \(uid \d+\), who owns the store\n`},
			{"a link to it", func() error {
				if err := os.Symlink(trap, sock); err != nil {
					return err
				}
				return os.Lchown(sock, victim.uid, victim.gid)
			}, `\Awc-\w+: store: \S+/wcd.sock is a symbolic link\n`},
			{"the attacker's socket, given to the victim", func() error {
				if err := os.Rename(trap, sock); err != nil {
					return err
				}
				if err := os.Chmod(sock, 0o600); err != nil {
					return err
				}
				return os.Chown(sock, victim.uid, victim.gid)
			}, `\Awc-\w+: store: the process listening on \S+/wcd.sock \(pid \d+\) runs as ` + attacker.name + ` \(uid \d+\), not as you\n`},
		} {
			t.Run(plant.name, func(t *testing.T) {
				if err := plant.do(); err != nil {
					t.Fatal(err)
				}
				want := regexp.MustCompile(plant.want)
				for _, args := range commands[:3] {
					res := me.resident().run(nil, args[0], args[1:]...)
					if res.Code != 1 || res.Stdout != "" || !want.MatchString(res.Stderr) {
						t.Errorf("%s beside %s: %v", strings.Join(args, " "), plant.name, res)
					}
				}
				if fi, err := os.Lstat(sock); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
					_ = os.Rename(sock, trap) // back to the attacker, for the next plant
				} else {
					_ = os.Remove(sock)
				}
			})
		}
		if n := sent(); n != 0 {
			t.Errorf("the attacker's listener received %d bytes", n)
		}
	})

	// Root reads the victim's store: refused unless asked, and when asked
	// it only reads, through links it never follows.
	root := r.withEnv("HOME=" + base)
	t.Run("root reads a user's store", func(t *testing.T) {
		before := treeOf(t, me.store)
		want := regexp.MustCompile(`\Awc-\w+: store \S+ belongs to ` + victim.name + ` \(uid \d+\), not to root \(uid 0\) \(mode drwx------\)\n`)
		for _, args := range commands {
			refused(t, root, want, args...)
		}
		for _, mode := range []*runner{root.direct(), root.resident()} {
			got := mode.withEnv("WC_OTHER_OWNER=1").run(nil, "wc-ls")
			if got.Code != 0 || got.Stdout != wantLs {
				t.Errorf("root's wc-ls --other-owner: %v", got)
			}
			if res := mode.run(nil, "wc-export", id, "--other-owner", "--format", "text"); res.Code != 0 || !strings.Contains(res.Stdout, "the victim's secret") {
				t.Errorf("root's wc-export --other-owner: %v", res)
			}
			if res := mode.run(nil, "wc-append", id, "--other-owner", "--text", "root's"); res.Code != 2 {
				t.Errorf("root's wc-append --other-owner: %v", res)
			}
		}
		if pids := residentPIDs(me.store); len(pids) > 0 {
			t.Errorf("root left resident processes %v in the victim's store", pids)
		}
		if after := treeOf(t, me.store); !slices.Equal(before, after) {
			t.Errorf("root's reads changed the victim's store:\n%q\n%q", before, after)
		}
		// The victim's commands work as before.
		me.direct().must(nil, "wc-append", id, "--text", "still mine")
		me.resident().must(nil, "wc-append", id, "--text", "and again")
		me.must(nil, "wc-store", "--stop") // its close would remove a planted db/LOCK
	})

	t.Run("planted links for the lock", func(t *testing.T) {
		target := filepath.Join(base, "root-file")
		if err := os.WriteFile(target, []byte("root's\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		dangling := filepath.Join(base, "created-by-root")
		lock := filepath.Join(me.store, "lock")
		pidFile := filepath.Join(me.store, "db", "LOCK")
		for _, link := range []struct{ at, to string }{{lock, target}, {lock, dangling}, {pidFile, target}} {
			t.Run(filepath.Base(link.at)+" to "+filepath.Base(link.to), func(t *testing.T) {
				saved := filepath.Join(base, "saved")
				hadFile := os.Rename(link.at, saved) == nil
				if err := os.Symlink(link.to, link.at); err != nil {
					t.Fatal(err)
				}
				_ = os.Lchown(link.at, victim.uid, victim.gid)
				want := regexp.MustCompile(`\Awc-\w+: store: \S+ is a symbolic link\n`)
				for _, rr := range []*runner{root.withEnv("WC_OTHER_OWNER=1"), me} {
					for _, args := range [][]string{{"wc-ls"}, {"wc-export", id}} {
						if res := rr.direct().run(nil, args[0], args[1:]...); res.Code != 1 || !want.MatchString(res.Stderr) {
							t.Errorf("%s beside a link: %v", strings.Join(args, " "), res)
						}
					}
				}
				if res := me.direct().run(nil, "wc-append", id, "--text", "x"); res.Code != 1 || !want.MatchString(res.Stderr) {
					t.Errorf("the victim's append beside a link: %v", res)
				}
				if data, err := os.ReadFile(target); err != nil || string(data) != "root's\n" {
					t.Errorf("the link's target was written: %q %v", data, err)
				}
				if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o644 {
					t.Errorf("the link's target changed mode: %v %v", fi, err)
				}
				if _, err := os.Lstat(dangling); err == nil {
					t.Error("a dangling link made a command create its target")
				}
				_ = os.Remove(link.at)
				if hadFile {
					_ = os.Rename(saved, link.at)
				}
			})
		}
	})

	t.Run("root reads a store a killed writer left", func(t *testing.T) {
		// What the resident process holds only in its log is left to
		// recover when it is killed.
		me.resident().withEnv(longIdle).must(nil, "wc-append", id, "--text", "in the log")
		killResidents(t, me.store)
		if !walLeft(me.store) {
			t.Fatal("the killed resident process left no log to recover")
		}
		before := treeOf(t, me.store)
		res := root.direct().withEnv("WC_OTHER_OWNER=1").run(nil, "wc-ls")
		if res.Code != 1 || !strings.Contains(res.Stderr, "needs a writer to recover it") {
			t.Errorf("root's wc-ls --other-owner of a store to recover: %v", res)
		}
		if after := treeOf(t, me.store); !slices.Equal(before, after) {
			t.Errorf("root's read changed the store to recover:\n%q\n%q", before, after)
		}
		me.direct().must(nil, "wc-ls") // its owner recovers it
	})

	// Item 12: what a killed writer left in a store its owner cannot write
	// (read-only media, a copy) asks for a writer, in one line.
	t.Run("a read-only store a killed writer left", func(t *testing.T) {
		me.resident().withEnv(longIdle).must(nil, "wc-append", id, "--text", "in the log")
		killResidents(t, me.store)
		if !walLeft(me.store) {
			t.Fatal("the killed resident process left no log to recover")
		}
		for _, p := range []string{me.store, filepath.Join(me.store, "db")} {
			if err := os.Chmod(p, 0o500); err != nil {
				t.Fatal(err)
			}
		}
		defer func() {
			_ = os.Chmod(me.store, 0o700)
			_ = os.Chmod(filepath.Join(me.store, "db"), 0o700)
		}()
		want := regexp.MustCompile(`\Awc-\w+: store \S+ needs a writer to recover it: a wc command that writes, run by its owner where the store can be written \(a writer was killed while it wrote\)
\z`)
		for _, rr := range []*runner{me.direct(), me.resident()} {
			if res := rr.run(nil, "wc-ls"); res.Code != 1 || res.Stdout != "" || !want.MatchString(res.Stderr) {
				t.Errorf("a reader of a read-only store to recover: %v", res)
			}
		}
	})
}
