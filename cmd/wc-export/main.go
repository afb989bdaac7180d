// Command wc-export writes sessions out as JSON, markdown or text.
package main

import (
	"github.com/urfave/cli/v2"
	"github.com/wctoolkit/wc/cmd/internal/tool"
)

var spec = tool.Spec{
	Name:      "wc-export",
	Summary:   "write sessions out as JSON, markdown or text",
	ArgsUsage: "[SESSION...]",
	Description: `Writes each SESSION (the arguments, or the references on stdin) in one format:

  json      the whole session as whycodes share JSON, one line per session:
            the active path as messages, every other path as a full copy
            under branches; wc-new --import native reads it back
  jsonl     one line per message of the active path (with --tree, per
            node of the whole tree): {"id","seq","parent","message"}
  markdown  a readable document; code fences always outlast their content
  text      "Role: text" lines, whycodes' conversation text
  info      the session's info, as the other commands print it
  summary   whycodes' exit summary (--model, --duration, --binary)

With --blob SHA256, wc-export prints the tool output that wc-compact --spill moved out of the transcript, exactly as it was.

Exports read the store under a shared lock, so any number run side by side; nothing is printed until the store is closed.`,
	Flags: func() []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "json", Usage: "output `FORMAT`: json, jsonl, markdown, text, info or summary"},
			&cli.BoolFlag{Name: "tree", Usage: "with jsonl: every node of the tree, not only the active path"},
			&cli.StringFlag{Name: "blob", Usage: "print the tool output spilled as wc-blob:`SHA256`, byte for byte, instead of a format"},
			&cli.StringFlag{Name: "model", Value: "unknown", Usage: "with summary: the `MODEL` label"},
			&cli.StringFlag{Name: "duration", Value: "0s", Usage: "with summary: how long the session ran, as a Go `DURATION` or seconds"},
			&cli.StringFlag{Name: "binary", Value: "whycodes", Usage: "with summary: the `NAME` in the resume hint"},
		}
	},
	Examples: []tool.Example{
		{Text: "Read a session as markdown:", Command: `wc-export 3f2a --format markdown | less`},
		{Text: "The user's prompts of a session:", Command: `wc-export 3f2a --format jsonl | jq -r 'select(.message.role=="user") | .message.content'`},
		{Text: "Back up every session as share JSON:", Command: `wc-ls | wc-export > backup.ndjson`},
	},
	Action: export,
}

func main() { tool.Main(&spec) }
