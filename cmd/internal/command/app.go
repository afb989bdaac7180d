package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/wctoolkit/wc/cmd/internal/open"
	"github.com/wctoolkit/wc/pkg/session/store"
)

// Spec defines one wc command: its flags, documentation and action. Man
// pages and help are generated from it.
type Spec struct {
	Name        string // wc-append
	Summary     string // one line, lowercase, for NAME
	ArgsUsage   string // [SESSION...]
	Description string // paragraphs separated by blank lines
	Flags       func() []cli.Flag
	Env         []EnvVar // variables beyond the common ones
	Examples    []Example
	Action      func(*Ctx) error
	// Streams marks a command that only reads the store: its output goes
	// to stdout as it is written instead of after the store is closed.
	Streams bool
	// Direct, when set, opens the store in this process when the resident
	// process cannot serve it (WC_DIRECT=1, a store no resident process
	// can open) and for batch work. Commands without it do not link the
	// store: they start a private wc-store for such a command instead.
	Direct func(open.DirectOptions) (store.Handle, error)
	// Signals, when set, says (for the man page) what SIGINT and SIGTERM
	// do to a command that acts on them: once its batch has the store, it
	// checks Ctx.Context between the items (see Interrupted), or it
	// handles signals itself. Other commands end at once on either while
	// they wait for the store or read, which changes nothing; from their
	// first write on they ignore both and run to the end, so that what
	// they committed is printed, never reported as failed. Neither costs a
	// thread: a handler's thread shows in a short command's start
	// (BenchmarkRunAppend).
	Signals string
	// Exits documents the command's own exit statuses, beyond the common
	// ones.
	Exits []ExitStatus
	// Differences lists where the command departs from whycodes on
	// purpose, for the man page's DIFFERENCES FROM WHYCODES.
	Differences []Difference
	// Complete says what the command's words are, for shell completion.
	Complete Completion
}

// ExitStatus documents one exit status.
type ExitStatus struct {
	Code int
	Text string
}

// Difference is one deliberate departure from whycodes: what whycodes
// does, what the command does instead and why, and the test that holds it.
type Difference struct {
	Whycodes, Wc, Test string
}

// versionFlag is long only: -v, which many tools read as --verbose, must
// not make a command do nothing and succeed.
var versionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version and exit"}

// defaultSignals is the man page's SIGNALS of the other commands.
const defaultSignals = "SIGINT (Ctrl-C), SIGTERM and SIGHUP (a closed terminal) end the command at once while it waits for the store or reads from it: it has changed nothing. From its first write on it ignores them and runs to the end, so that what it commits is printed, never reported as failed. SIGKILL stops it as a crash would: a change it had not printed may or may not be in the store, whole or not at all."

// stopSignals are the signals that end a command, or its batch.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// Example is one documented invocation.
type Example struct {
	Text    string // what it does
	Command string
}

// EnvVar documents an environment variable.
type EnvVar struct{ Name, Text string }

// Commands lists every wc binary, for SEE ALSO.
var Commands = []string{"wc-new", "wc-append", "wc-compact", "wc-branch", "wc-export", "wc-ls", "wc-rm", "wc-store"}

// Version is the module version of the running binary.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Ctx is what an action works with.
type Ctx struct {
	*cli.Context
	Spec *Spec
	Now  time.Time // the command's start, or when it read stdin

	stdin     io.Reader
	args      []string // as the command was run, its name first
	stdinTTY  bool
	stdinRead bool
	stdinData []byte
	out       Output
	closers   []func() error
	stdoutTTY bool
	// progressShown: a progress line is on stderr, to be cleared before
	// an error line.
	progressShown bool
	interrupt     context.CancelCauseFunc
	catching      bool // catchSignals was called
}

// Out is where results go. Main prints them only after the store is
// closed, unless the command streams (Spec.Streams).
func (c *Ctx) Out() *Output { return &c.out }

// StdoutIsTerminal reports whether results will be shown to a person.
func (c *Ctx) StdoutIsTerminal() bool { return c.stdoutTTY }

// App builds the urfave/cli application for spec. Usage errors become exit
// 2 with an empty stdout, and nothing exits inside Run.
func (spec *Spec) App() *cli.App {
	flags := append(commonFlags(), spec.Flags()...)
	return &cli.App{
		Name:                   spec.Name,
		Usage:                  spec.Summary,
		ArgsUsage:              spec.ArgsUsage,
		Description:            spec.Description,
		Version:                Version(),
		Flags:                  flags,
		HideHelpCommand:        true,
		EnableBashCompletion:   true,
		UseShortOptionHandling: false,
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return Usagef("%s", err.Error()).WithHint("see %s --help", spec.Name)
		},
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

// Main runs the command with the process's arguments and streams and exits.
func Main(spec *Spec) {
	os.Exit(Run(spec, os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// Run runs the command and returns its exit status. Results reach stdout
// only after the action returned, and so after the store was closed, except
// a streaming command's: those are written while it runs, and when it fails
// midway stdout holds what it wrote before the failure.
func Run(spec *Spec, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Files the store creates are the user's alone, whatever the umask.
	syscall.Umask(0o077)
	// Signals keep their default action, ending the process, until the
	// command writes (see writeGuard) or its batch has the store (see
	// catchSignals).
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)

	cli.FlagStringer = helpLine // urfave/cli's help takes it from a global
	cli.VersionFlag = versionFlag
	app := spec.App()
	app.Reader, app.Writer, app.ErrWriter = stdin, stdout, stderr
	var c *Ctx
	app.Action = func(cc *cli.Context) error {
		c = &Ctx{Context: cc, Spec: spec, Now: time.Now(), stdin: stdin, args: args,
			stdinTTY: isTerminal(stdin), stdoutTTY: isTerminal(stdout), interrupt: cancel}
		if spec.Streams {
			c.out.startStreaming(stdout)
		}
		var err error
		if c.IsSet("completion") {
			err = c.printCompletion(c.String("completion"))
		} else {
			err = spec.Action(c)
		}
		for i := len(c.closers) - 1; i >= 0; i-- {
			// A failed close may have lost what a partial batch did before
			// its error, so its lines are not printed: the close's error is.
			if cerr := c.closers[i](); cerr != nil && (err == nil || isPartial(err)) {
				err = cerr
			}
		}
		// A signal only stops batch loops, which check the context between
		// items; work that completed is printed, so that what was committed
		// is never reported as failed.
		return err
	}
	if len(args) > 1 && args[1] == completeCommand {
		return runComplete(spec, args[2:], stdout)
	}
	err := validArgs(args)
	if err == nil {
		err = app.RunContext(ctx, reorderArgs(args, app.Flags))
	}
	if c != nil && c.out.spool != nil {
		if werr := c.out.finish(); err == nil {
			err = werr
		}
	}
	var te *Error
	if errors.As(err, &te) && te.Partial && c != nil {
		stdout.Write(c.out.held.Bytes())
	}
	if err != nil {
		code, hints := exitStatus(err)
		if c != nil && c.progressShown {
			fmt.Fprint(stderr, clearLine)
		}
		fmt.Fprintf(stderr, "%s: %s\n", spec.Name, errorLine(err))
		for _, h := range hints {
			fmt.Fprintf(stderr, "%s: hint: %s\n", spec.Name, h)
		}
		return code
	}
	if c != nil {
		if _, err := stdout.Write(c.out.held.Bytes()); err != nil {
			fmt.Fprintf(stderr, "%s: writing output: %s\n", spec.Name, errorLine(err))
			return ExitFailure
		}
	}
	return ExitOK
}

func isPartial(err error) bool {
	var te *Error
	return errors.As(err, &te) && te.Partial
}

// catchSignals has SIGINT, SIGTERM and SIGHUP cancel the command's
// context, which a batch checks between its items, instead of ending the
// process; the handler is installed beside the command rather than before
// it: that starts a thread, a tenth of a short command's time.
func (c *Ctx) catchSignals() {
	if c.catching {
		return
	}
	c.catching = true
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, stopSignals...)
	go func() {
		sig := <-sigs
		c.interrupt(interruptedBy{sig})
	}()
}

// interruptedBy is the cause of a context a signal cancelled.
type interruptedBy struct{ sig os.Signal }

func (i interruptedBy) Error() string { return "interrupted by " + i.sig.String() }

// Interrupted is the error of a batch that a signal stopped after done of
// total items, or nil when none came: its status is 128 plus the signal's
// number (130 for SIGINT), as a shell reports a command the signal ended.
func (c *Ctx) Interrupted(done, total int) error {
	var by interruptedBy
	if !errors.As(context.Cause(c.Context.Context), &by) {
		return nil
	}
	code := 128 + int(by.sig.(syscall.Signal))
	return &Error{Code: code, Msg: fmt.Sprintf("interrupted after %d of %d sessions", done, total), Partial: true}
}

// protectWrites ignores the stop signals from the command's first write on,
// unless its batch catches them: what it commits must be printed.
func (c *Ctx) protectWrites() {
	if !c.catching {
		signal.Ignore(stopSignals...)
	}
}

// OnClose registers cleanup that runs when the action returns, before any
// output is printed.
func (c *Ctx) OnClose(f func() error) { c.closers = append(c.closers, f) }

// isTerminal asks the terminal driver: /dev/null, which cron gives as
// stdin, is a character device too, but it is data (none), not a person.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// reorderArgs moves flags in front of positional arguments, because
// urfave/cli v2 stops parsing flags at the first positional one and
// "wc-append 3f2a --text hi" must work. A flag that takes a value keeps it;
// a one-letter one may have it attached ("-n2"). --help anywhere but as a
// flag's value asks for help alone: with arguments, urfave/cli would take
// the first for a help topic.
func reorderArgs(args []string, flags []cli.Flag) []string {
	if len(args) == 0 {
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range flags {
		doc, ok := f.(cli.DocGenerationFlag)
		for _, n := range f.Names() {
			takesValue[n] = ok && doc.TakesValue()
		}
	}
	var opts, pos []string
	rest := args[1:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			pos = append(pos, rest[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name := strings.TrimLeft(a, "-")
		switch {
		case name == "help" || name == "h":
			return []string{args[0], "--help"}
		case a[1] != '-' && len(name) > 1 && !takesValue[name] && takesValue[name[:1]] && name[1] != '=':
			opts = append(opts, "-"+name[:1], name[1:]) // -n2
			continue
		}
		opts = append(opts, a)
		if strings.Contains(name, "=") {
			continue
		}
		if takesValue[name] && i+1 < len(rest) {
			i++
			opts = append(opts, rest[i])
		}
	}
	out := append([]string{args[0]}, opts...)
	if len(pos) > 0 {
		out = append(out, "--")
		out = append(out, pos...)
	}
	return out
}

// validArgs refuses arguments that are not UTF-8, as stdin is: stored,
// they would become U+FFFD and no longer be what the user gave.
func validArgs(args []string) error {
	for i, a := range args[min(1, len(args)):] {
		if !utf8.ValidString(a) {
			return DataErrf("argument %d is not valid UTF-8", i+1)
		}
	}
	return nil
}
