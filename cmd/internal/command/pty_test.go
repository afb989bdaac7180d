package command_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/cmd/internal/tooltest"
)

// A batch that fails midway takes its progress line off the terminal
// before it prints its error, which would otherwise follow "working 1/3"
// on the same line.
func TestProgressClearedBeforeError(t *testing.T) {
	master, tty := tooltest.OpenPTY(t, 80, 24)
	spec := &command.Spec{Name: "wc-test", Flags: func() []cli.Flag { return nil }, Action: func(c *command.Ctx) error {
		c.Progress("working", 3)(1)
		return errors.New("boom")
	}}
	if code := command.Run(spec, []string{"wc-test"}, strings.NewReader(""), io.Discard, tty); code != command.ExitFailure {
		t.Fatalf("exit %d", code)
	}
	tty.Close()
	out, _ := io.ReadAll(master) // EIO once the terminal's other end is closed
	if want := "\rworking 1/3\r\x1b[Kwc-test: boom\r\n"; string(out) != want {
		t.Errorf("the terminal shows %q, want %q", out, want)
	}
}
