package tool

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: what a program writes to tty, a
// person would see, and the test reads from master.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close(); tty.Close() })
	return master, tty
}

// A batch that fails midway takes its progress line off the terminal
// before it prints its error, which would otherwise follow "working 1/3"
// on the same line.
func TestProgressClearedBeforeError(t *testing.T) {
	master, tty := openPTY(t)
	spec := &Spec{Name: "wc-test", Flags: func() []cli.Flag { return nil }, Action: func(c *Ctx) error {
		c.Progress("working", 3)(1)
		return errors.New("boom")
	}}
	if code := Run(spec, []string{"wc-test"}, strings.NewReader(""), io.Discard, tty); code != ExitFailure {
		t.Fatalf("exit %d", code)
	}
	tty.Close()
	out, _ := io.ReadAll(master) // EIO once the terminal's other end is closed
	want := "\rworking 1/3" + clearLine + "wc-test: boom\r\n"
	if string(out) != want {
		t.Errorf("the terminal shows %q, want %q", out, want)
	}
}
