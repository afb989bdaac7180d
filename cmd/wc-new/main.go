// Command wc-new creates a session, empty or imported from a transcript.
package main

import (
	"github.com/urfave/cli/v2"
	"github.com/wctoolkit/wc/cmd/internal/tool"
)

var spec = tool.Spec{
	Name:      "wc-new",
	Summary:   "create a conversation session in the wc store",
	ArgsUsage: "[FILE...]",
	Description: `Creates a session and prints its info as one line of JSON, which any other wc command reads on stdin.

Without --import the session is empty: it has the project, the system prompt and a default title "<project>-<xx>", which the first user message replaces with a short title of its own unless --title set one.

With --import, each FILE (or stdin when there is none, or "-") is a transcript to import as one new session. The native format is the share JSON of wc-export --format json and of whycodes: its messages become the active path, its branches become branches of the tree, and everything else (title, times, usage, cost) is kept; only the id is new. A bare JSON array of messages also imports.`,
	Flags: func() []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "project", Usage: "project `DIR` the session belongs to (default: the current directory)"},
			&cli.StringFlag{Name: "system", Usage: "system prompt `TEXT`, or @FILE to read it from FILE"},
			&cli.StringFlag{Name: "title", Usage: "the session's `TITLE`; a title given here is never replaced automatically"},
			&cli.StringFlag{Name: "import", Usage: "import each FILE (or stdin) in `FORMAT`: native"},
		}
	},
	Examples: []tool.Example{
		{Text: "Start a session for the current project and say something in it:",
			Command: `wc-new --system "You are terse." | wc-append --role user --text "fix the login bug"`},
		{Text: "Copy a session through its share JSON:",
			Command: `wc-export 3f2a --format json | wc-new --import native`},
	},
	Action: newSession,
}

func main() { tool.Main(&spec) }
