package command

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// ManPage renders spec as a man(7) page in section 1. The page carries no
// date or version, so that it changes only when the command does.
func (spec *Spec) ManPage() string {
	var b strings.Builder
	upper := strings.ToUpper(spec.Name)
	b.WriteString(`.TH "` + upper + `" "1" "" "wc" "wc manual"` + "\n")
	b.WriteString(".SH NAME\n" + roff(spec.Name) + ` \- ` + roff(spec.Summary) + "\n")
	b.WriteString(".SH SYNOPSIS\n.B " + roff(spec.Name) + "\n")
	b.WriteString(`[\fIOPTIONS\fR]`)
	if spec.ArgsUsage != "" {
		b.WriteString(" " + roff(spec.ArgsUsage))
	}
	b.WriteString("\n.SH DESCRIPTION\n")
	writeParagraphs(&b, spec.Description)

	b.WriteString(".SH OPTIONS\n")
	for _, f := range spec.App().Flags {
		writeFlag(&b, f)
	}
	b.WriteString(".TP\n.B \\-\\-help, \\-h\nShow help and exit.\n")
	b.WriteString(".TP\n.B \\-\\-version\nPrint the version and exit.\n")
	b.WriteString(".TP\n.B \\-\\-generate\\-bash\\-completion\nFor shell completion, as the last argument: after a partial flag, print the flags it may complete to, one a line, and do nothing else.\n")

	b.WriteString(".SH EXIT STATUS\n")
	for _, s := range append(append([]ExitStatus{}, ExitStatuses...), spec.Exits...) {
		b.WriteString(".TP\n.B " + strconv.Itoa(s.Code) + "\n" + roff(s.Text) + "\n")
	}
	b.WriteString(".SH SIGNALS\n")
	if spec.Signals != "" {
		writeParagraphs(&b, spec.Signals)
	} else {
		writeParagraphs(&b, defaultSignals)
	}
	b.WriteString(".SH ENVIRONMENT\n")
	for _, e := range append(append([]EnvVar{}, CommonEnv...), spec.Env...) {
		b.WriteString(".TP\n.B " + roff(e.Name) + "\n" + roff(e.Text) + "\n")
	}
	if len(spec.Differences) > 0 {
		b.WriteString(`.SH "DIFFERENCES FROM WHYCODES"` + "\n")
		for _, d := range spec.Differences {
			b.WriteString(".PP\nwhycodes: " + roff(d.Whycodes) + "\n.br\n" + roff(spec.Name) + ": " + roff(d.Wc) +
				"\n.br\nTest: " + roff(d.Test) + "\n")
		}
	}
	if len(spec.Examples) > 0 {
		b.WriteString(".SH EXAMPLES\n")
		for _, ex := range spec.Examples {
			b.WriteString(".PP\n" + roff(ex.Text) + "\n.PP\n.RS 4\n.nf\n" + roffLines(ex.Command) + "\n.fi\n.RE\n")
		}
	}
	b.WriteString(".SH SEE ALSO\n")
	var see []string
	for _, name := range Commands {
		if name != spec.Name {
			see = append(see, ".BR "+roff(name)+" (1)")
		}
	}
	b.WriteString(strings.Join(see, ",\n") + ",\n.BR jq (1)\n")
	return b.String()
}

func writeParagraphs(b *strings.Builder, text string) {
	for _, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if strings.HasPrefix(para, "  ") { // indented: keep the lines as they are
			lines := strings.Split(para, "\n")
			for i := range lines {
				lines[i] = strings.TrimPrefix(lines[i], "  ")
			}
			b.WriteString(".PP\n.RS 4\n.nf\n" + roffLines(strings.Join(lines, "\n")) + "\n.fi\n.RE\n")
			continue
		}
		b.WriteString(".PP\n" + roffLines(strings.Join(strings.Fields(para), " ")) + "\n")
	}
}

func writeFlag(b *strings.Builder, f cli.Flag) {
	doc, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return
	}
	var names []string
	for _, n := range f.Names() {
		dash := "--"
		if len(n) == 1 {
			dash = "-"
		}
		names = append(names, roff(dash+n))
	}
	placeholder, usage := unquoteUsage(doc.GetUsage())
	b.WriteString(".TP\n.B " + strings.Join(names, ", "))
	if doc.TakesValue() {
		if placeholder == "" {
			placeholder = "VALUE"
		}
		b.WriteString(` \fI` + roff(placeholder) + `\fR`)
	}
	b.WriteString("\n" + roff(usage))
	if def := flagDefault(doc); def != "" {
		b.WriteString(" (default: " + roff(def) + ")")
	}
	if env := doc.GetEnvVars(); len(env) > 0 {
		b.WriteString(" (env: " + roff(strings.Join(env, ", ")) + ")")
	}
	b.WriteString("\n")
}

// roff escapes text for a man page line.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	// roff input is ASCII; other characters are named by code point.
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, `\[u%04X]`, r)
		}
	}
	return b.String()
}

func roffLines(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = roff(lines[i])
	}
	return strings.Join(lines, "\n")
}

// flagDefault is the default a flag's help and man page show: none for a
// flag without a value, or whose default is empty or zero (its usage says
// what then happens).
func flagDefault(doc cli.DocGenerationFlag) string {
	if !doc.TakesValue() {
		return ""
	}
	def := doc.GetDefaultText()
	if def == "" {
		def = doc.GetValue()
	}
	if def == `""` || def == "0" || def == "[]" {
		return ""
	}
	return strings.Trim(def, `"`)
}

// helpLine is a flag's line in --help, with the default its man page shows.
func helpLine(f cli.Flag) string {
	doc, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return f.String()
	}
	placeholder, usage := unquoteUsage(doc.GetUsage())
	if doc.TakesValue() && placeholder == "" {
		placeholder = "value"
	}
	line := cli.FlagNamePrefixer(f.Names(), placeholder) + "\t" + usage
	if def := flagDefault(doc); def != "" {
		line += " (default: " + def + ")"
	}
	return cli.FlagEnvHinter(doc.GetEnvVars(), line)
}

// unquoteUsage takes the `NAME` placeholder out of a flag's usage, as
// urfave/cli does for help.
func unquoteUsage(usage string) (name, text string) {
	start := strings.IndexByte(usage, '`')
	if start < 0 {
		return "", usage
	}
	end := strings.IndexByte(usage[start+1:], '`')
	if end < 0 {
		return "", usage
	}
	name = usage[start+1 : start+1+end]
	return name, usage[:start] + name + usage[start+2+end:]
}
