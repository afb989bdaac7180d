package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/signal"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/kvstore"
)

func TestReorderArgs(t *testing.T) {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "text", Aliases: []string{"t"}},
		&cli.BoolFlag{Name: "error"},
		&cli.DurationFlag{Name: "lock-timeout"},
		&cli.BoolFlag{Name: "e"},
	}
	cases := []struct{ in, want string }{
		{"wc 3f2a --text hi", "wc --text hi -- 3f2a"},
		{"wc --text hi 3f2a", "wc --text hi -- 3f2a"},
		{"wc 3f2a --error 9b1c", "wc --error -- 3f2a 9b1c"},
		{"wc 3f2a --text=hi", "wc --text=hi -- 3f2a"},
		{"wc 3f2a -t --lock-timeout 1s", "wc -t --lock-timeout -- 3f2a 1s"}, // -t takes "--lock-timeout" as its value
		{"wc - --text hi", "wc --text hi -- -"},
		{"wc 3f2a -- --text", "wc -- 3f2a --text"},
		{"wc --text", "wc --text"},
		{"wc", "wc"},
		{"wc 3f2a -thi", "wc -t hi -- 3f2a"},
		{"wc 3f2a -t=hi", "wc -t=hi -- 3f2a"},
		{"wc 3f2a -e", "wc -e -- 3f2a"},
		{"wc 3f2a --help", "wc --help"},
		{"wc 3f2a -h 9b1c", "wc --help"},
		{"wc --text --help 3f2a", "wc --text --help -- 3f2a"}, // the text "--help"
		{"wc 3f2a -- --help", "wc -- 3f2a --help"},
	}
	for _, c := range cases {
		got := strings.Join(reorderArgs(strings.Fields(c.in), flags), " ")
		if got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseRefs(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  string
	}{
		{"3f2a\n9b1c\n", []string{"3f2a", "9b1c"}, ""},
		{"  3f2a  \r\n\n", []string{"3f2a"}, ""},
		{`"3f2a" "9b1c"`, []string{"3f2a", "9b1c"}, ""},
		{`{"id":"3f2a","title":"x"}` + "\n" + `{"id":"9b1c"}`, []string{"3f2a", "9b1c"}, ""},
		{"{\"id\":\n\"3f2a\"}\n9b1c", []string{"3f2a", "9b1c"}, ""},
		{`[{"id":"a1b2"},"c3d4"]`, []string{"a1b2", "c3d4"}, ""},
		{"", nil, ""},
		{"3f2a\nnot an id\n", nil, `stdin line 2: "not an id" is not a session reference`},
		{"3f2a\n{\"title\":1}", nil, `stdin line 2: a JSON object without a string "id"`},
		{"\n\n{\"id\":", nil, "stdin line 3: invalid JSON"},
		{"[1]", nil, "stdin line 1: not a session reference"},
		{"3f2a\n" + strings.Repeat("[", 600), nil, "stdin: JSON nested deeper than 512 levels"},
	}
	for _, c := range cases {
		got, err := ParseRefs([]byte(c.in))
		if c.err != "" {
			var te *Error
			if !errors.As(err, &te) || te.Code != ExitDataErr || err.Error() != c.err {
				t.Errorf("%q: error %v, want %q (exit 65)", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func FuzzParseRefs(f *testing.F) {
	for _, s := range []string{"3f2a\n", `{"id":"x"}`, `["a","b"]`, "\"x\"\n{\"id\":\"y\"}\nz", "{\"id\":", "[[[[", "\"\\u00e9\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		refs, err := ParseRefs(data)
		if err != nil {
			var te *Error
			// A line too long for a reference is a usage error.
			if !errors.As(err, &te) || te.Code != ExitDataErr && te.Code != ExitUsage || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q is not a one-line data or usage error", err)
			}
			return
		}
		for _, r := range refs {
			if strings.ContainsAny(r, "\n") && !strings.HasPrefix(strings.TrimSpace(string(data)), "") {
				t.Fatalf("reference %q holds a newline", r)
			}
		}
	})
}

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)
	cases := map[string]time.Time{
		"2026-08-01T10:00:00Z":      time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC),
		"2026-08-01T10:00:00+02:00": time.Date(2026, 8, 1, 8, 0, 0, 0, time.UTC),
		"2026-08-01":                time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC),
		"36h":                       now.Add(-36 * time.Hour),
		"7d":                        now.Add(-7 * 24 * time.Hour),
		"90m":                       now.Add(-90 * time.Minute),
	}
	for in, want := range cases {
		got, err := ParseTime(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: got %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "-3d", "3x", "", "1.5d"} {
		if _, err := ParseTime(bad, now); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestExitStatus(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{Usagef("x"), ExitUsage},
		{DataErrf("x"), ExitDataErr},
		{&session.InvalidError{Msg: "x"}, ExitDataErr},
		{fmt.Errorf("wrapped: %w", kvstore.ErrBusy), ExitBusy},
		{fmt.Errorf("wrapped: %w", kvstore.ErrNotFound), ExitNotFound},
		{fmt.Errorf("wrapped: %w", kvstore.ErrAmbiguous), ExitUsage},
		{&kvstore.RefError{Ref: "zz"}, ExitUsage},
		{errors.New("disk on fire"), ExitFailure},
	}
	for _, c := range cases {
		if got, _ := exitStatus(c.err); got != c.want {
			t.Errorf("%v: exit %d, want %d", c.err, got, c.want)
		}
	}
	if got := errorLine(errors.New("invalid session reference ..\nsecond")); got != "invalid session reference .. second" {
		t.Errorf("errorLine: %q", got)
	}
}

func TestManPageSections(t *testing.T) {
	spec := &Spec{Name: "wc-test", Summary: "test a page", ArgsUsage: "[SESSION...]",
		Description: "One paragraph.\n\n  indented -line\n  kept", Flags: func() []cli.Flag {
			return []cli.Flag{&cli.StringFlag{Name: "format", Value: "json", Usage: "output `FORMAT`"}}
		},
		Examples: []Example{{Text: "Do it:", Command: "wc-test --format json"}}}
	page := spec.ManPage()
	for _, want := range []string{
		`.TH "WC-TEST" "1"`, ".SH NAME\nwc\\-test \\- test a page", ".SH SYNOPSIS", ".SH OPTIONS",
		".B \\-\\-format \\fIFORMAT\\fR\noutput FORMAT (default: json)",
		".B \\-\\-store \\fIDIR\\fR", "(env: WC_LOCK_TIMEOUT)", ".SH EXIT STATUS\n.TP\n.B 0\n",
		".B 74\n", ".B 75\n", ".SH SIGNALS\n.PP\nSIGINT (Ctrl\\-C), SIGTERM and SIGHUP (a closed terminal) end the command at once while it waits", ".SH ENVIRONMENT", ".B WC_STORE", ".SH EXAMPLES", "wc\\-test \\-\\-format json",
		".nf\nindented \\-line\nkept\n.fi", ".SH SEE ALSO", ".BR wc\\-append (1)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// --help shows the defaults the man page shows: none for a zero value,
// whose usage says what happens then.
func TestHelpDefaultsMatchTheManPage(t *testing.T) {
	spec := &Spec{Name: "wc-test", Summary: "test help", Action: func(*Ctx) error { return nil },
		Flags: func() []cli.Flag {
			return []cli.Flag{
				&cli.StringFlag{Name: "format", Value: "json", Usage: "output `FORMAT`"},
				&cli.Uint64Flag{Name: "at", Usage: "the node `SEQ` (default: the head)"},
				&cli.BoolFlag{Name: "text", Usage: "print text"},
			}
		}}
	var out, errOut bytes.Buffer
	if code := Run(spec, []string{"wc-test", "--help"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	help := out.String()
	for _, want := range []string{"output FORMAT (default: json)", "the node SEQ (default: the head)\n", "print text\n", "[$WC_STORE]"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	if strings.Contains(help, "(default: 0)") || strings.Contains(help, "(default: false)") {
		t.Errorf("help shows a zero default:\n%s", help)
	}
}

// PrintJSON writes info by hand, and everything else, or what encoding/json
// must answer, through encoding/json.
func TestPrintJSON(t *testing.T) {
	info := session.Info{ID: "3f2a", Title: "a <b> & c", Branches: 2}
	embedded := struct {
		session.Info
		Removed int `json:"removed"`
	}{Info: info, Removed: 3}
	nan := info
	nan.Cost.USD = math.NaN()
	for _, tc := range []struct {
		v    any
		want string // when set, what encoding/json writes too
	}{
		{info, `{"id":"3f2a","title":"a <b> & c","title_source":"","project_path":"","created_at":"","updated_at":"","message_count":0,"user_message_count":0,"tokens":0,"usage":{"input_tokens":0,"output_tokens":0},"cost":{"usd":0,"unpriced_steps":0},"edit_stats":{"added":0,"removed":0,"approximate":false},"head":0,"branches":2}` + "\n"},
		{&info, ""},
		{embedded, ""},
		{(*session.Info)(nil), "null\n"},
		{nan, ""},
	} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		werr := enc.Encode(tc.v)
		if tc.want != "" && tc.want != want.String() {
			t.Fatalf("the test expects %q where encoding/json writes %q", tc.want, want.String())
		}
		c := &Ctx{}
		err := c.PrintJSON(tc.v)
		if (err == nil) != (werr == nil) || err == nil && c.out.held.String() != want.String() {
			t.Errorf("PrintJSON(%T) wrote %q, %v; encoding/json %q, %v", tc.v, c.out.held.String(), err, want.String(), werr)
		}
	}
}

// NewID makes version 4, variant 1 UUIDs, every one different.
func TestNewID(t *testing.T) {
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if !uuid.MatchString(id) {
			t.Fatalf("%q is not a random UUID", id)
		}
		if seen[id] {
			t.Fatalf("%q twice", id)
		}
		seen[id] = true
	}
}

// A command ignores the signals that would end it from its first write
// on, so that what it commits is printed; a dry run, which writes
// nothing, leaves them (issue 19, item 4).
func TestWritesIgnoreSignals(t *testing.T) {
	defer signal.Reset(stopSignals...)
	c := &Ctx{Spec: &Spec{Name: "wc-test"}}
	w := writeGuard{Handle: store.Empty{}, c: c}
	ignored := func() bool {
		for _, sig := range stopSignals {
			if !signal.Ignored(sig) {
				return false
			}
		}
		return true
	}
	if ignored() {
		t.Fatal("signals ignored before any write")
	}
	if _, err := w.Collect(&session.Meta{ID: "abcd0000-0000-4000-8000-000000000001"}, true); ignored() {
		t.Fatalf("a dry run made the command ignore signals (%v)", err)
	}
	_ = w.PutBlob("abcd0000-0000-4000-8000-000000000001", [32]byte{}, []byte("x"))
	if !ignored() {
		t.Fatal("the first write left the signals' default action")
	}
}
