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
            node of the whole tree): {"id","seq","parent","message"};
            with --tree the head's line also has "head":true, and the
            line of a node that branches end at has their names,
            "branches":[names] ("" for an unnamed one)
  markdown  a readable document; code fences always outlast their content,
            what wc writes itself (the title, an unknown block's type)
            is escaped, and so is a "<" outside code in the messages'
            text, which a renderer would take for HTML
  text      "Role: text" lines, whycodes' conversation text; of several
            sessions, each after a line "==> ID TITLE <=="
  info      the session's info, as the other commands print it
  summary   whycodes' exit summary (--model, --duration, --binary)
  html      one self-contained page to read in a browser: no script,
            no request, tool calls (summed up as Read(src/auth.go)),
            results and thinking collapsible; several sessions make
            one page, each session once
  request   a request body for --provider anthropic or openai, ready
            for curl: the system prompt placed the provider's way,
            tool calls paired with their results in the copy (a call
            without a result gets an error result, a result without a
            call is dropped); the stored transcript is not touched
  backup    everything the session holds, for wc-new --restore: its
            metadata as stored, every node as a --tree line, and the
            spilled tool output its messages point at (see BACKUP)

With --blob SHA256, wc-export prints the tool output that wc-compact --spill moved out of the transcript, exactly as it was. Of the formats only backup carries those bodies: share JSON and JSONL keep the wc-blob: pointers alone.

BACKUP. wc-ls | wc-export --format backup > FILE backs up every session, and wc-new --restore FILE puts them back, each with its id, its nodes and their seqs, its branches, checkpoint, usage, cost and times, and its blobs, so that every export of a restored session is byte for byte what it was. A backup is one JSON object a line, each with the session's "id": first the session's line {"id","backup":1,"meta"} (meta is the session's stored metadata), then one line per node as --format jsonl --tree writes them, then {"id","blob":SHA256,"data":BASE64} for each blob its messages point at. Share JSON (--format json) is what whycodes reads; a backup is for wc alone.

Exports read the store under a shared lock, so any number run side by side. Unlike the commands that write, wc-export prints as it reads: what it reads is on disk already. Output that stdout does not take at once (a pager nobody scrolls) waits in memory, then in an unlinked temporary file under TMPDIR, so that a slow reader never holds the lock, and other commands, back.

If an export fails midway (a damaged store, a full disk behind stdout), it exits with its error as always, and stdout holds what was written before the failure: whole documents for the sessions before, and a truncated one for the session that failed.`,
	Flags: func() []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "json", Usage: "output `FORMAT`: json, jsonl, markdown, text, info, summary, html, request or backup"},
			&cli.BoolFlag{Name: "tree", Usage: "with jsonl: every node of the tree, not only the active path"},
			&cli.StringFlag{Name: "blob", Usage: "print the tool output spilled as wc-blob:`SHA256`, byte for byte, instead of a format"},
			&cli.StringFlag{Name: "model", Usage: "with summary: the `MODEL` label (default: unknown); with request: the model to ask"},
			&cli.StringFlag{Name: "provider", Usage: "with request: the `API` to write the body for: anthropic or openai"},
			&cli.StringFlag{Name: "tools", Usage: "with request: a JSON array of tool definitions in `FILE` ({name, description, parameters} or the provider's own form)"},
			&cli.Uint64Flag{Name: "max-tokens", Usage: "with request: the reply's token limit `N` (anthropic: default 8192)"},
			&cli.Float64Flag{Name: "temperature", Usage: "with request: the sampling temperature `T`"},
			&cli.StringFlag{Name: "duration", Value: "0s", Usage: "with summary: how long the session ran, as a Go `DURATION` or seconds"},
			&cli.StringFlag{Name: "binary", Value: "whycodes", Usage: "with summary: the `NAME` in the resume hint"},
		}
	},
	Env: []tool.EnvVar{{Name: "TMPDIR", Text: "Where output that stdout has not taken waits, in a file deleted as soon as it is made (default /tmp)."}},
	Examples: []tool.Example{
		{Text: "Read a session as markdown:", Command: `wc-export 3f2a --format markdown | less`},
		{Text: "The user's prompts of a session:", Command: `wc-export 3f2a --format jsonl | jq -r 'select(.message.role=="user") | .message.content'`},
		{Text: "Back up every session, and restore them in another store:", Command: "wc-ls | wc-export --format backup > wc.backup\nwc-new --store ~/restored --restore wc.backup"},
		{Text: "Ask a model to continue a session:", Command: "wc-export 3f2a --format request --provider anthropic --model claude-sonnet-4-5 \\\n  | curl -s https://api.anthropic.com/v1/messages -H \"x-api-key: $ANTHROPIC_API_KEY\" \\\n      -H 'anthropic-version: 2023-06-01' -H 'content-type: application/json' -d @- \\\n  | wc-append 3f2a"},
	},
	Complete: tool.Completion{Values: map[string][]string{
		"format":   {"json", "jsonl", "markdown", "text", "info", "summary", "html", "request", "backup"},
		"provider": {"anthropic", "openai"},
	}},
	Action:  export,
	Streams: true,
}

func main() { tool.Main(&spec) }
