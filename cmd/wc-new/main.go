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

Each FILE (or stdin with --import and no FILE, or "-") is a transcript to import, one or more sessions each; --import names its format, and FILE arguments alone mean --import auto, which tells the formats apart by their content:

  native     the share JSON of wc-export --format json and of whycodes
             (a session, or several: one a line, or an array of
             them), a bare JSON array of messages, or the lines of
             wc-export --format jsonl
  claude     a Claude Code session (~/.claude/projects/*/*.jsonl)
  codex      a Codex rollout (~/.codex/sessions/**/rollout-*.jsonl)
  opencode   the JSON of "opencode export"
  openai     a Chat Completions request body or messages array
  anthropic  a Messages API request body or messages array

Imports keep the structure: tool calls and results stay paired blocks, thinking with its signatures and images are kept, source timestamps are kept, and provider usage is summed (Codex's repeated token_count snapshots counted once). A Claude Code file's uuid/parentUuid tree becomes the session's tree, so its rewinds become branches; split assistant records are merged, compaction summaries are marked as such, and sidechains are skipped unless --sidechains (a file of nothing but sidechain records, a subagent's own transcript, is imported whole). Records that have no place in a session are counted in the output under "skipped", never dropped silently. A file with no user or assistant message is an error (status 65).

A native share keeps everything (title, times, usage, cost, branches); only the id is new. The lines of wc-export --format jsonl make a session per id they carry; with --tree they make its tree again, with its head and branches as their "head" and "branches" members say (lines with neither make the newest leaf the head and the other leaves unnamed branches; on the lines of a path both are ignored). Two heads, a branch name wc-branch could not give (a number, control characters, space around it) or members of another shape are refused with status 65. Lines of one path in its order make that path, also when a filter left some out. Lines that are neither (a tree a filter thinned, lines out of order) are refused with status 65: read as a path they would interleave its branches. A stream that mixes such lines with other messages is one path. A foreign import is titled from the source when it has a title, else from its first user message; --title and --project override.

With --restore, each FILE (or stdin) is a backup (wc-export --format backup) and its sessions come back whole: their ids, nodes and seqs, branches, checkpoints, usage, cost, times and spilled tool output, so that every export of a restored session is byte for byte what it was when backed up. A session whose id is in the store already is refused (status 1) and nothing is restored; --new-ids restores every session under a new id instead, and its line's "restored_from" is the id in the backup. Every file is read and checked before the store is opened, then read again as its sessions are committed one by one, so a backup is never held whole in memory (stdin is, up to 1 GiB).`,
	Flags: func() []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "project", Usage: "project `DIR` the session belongs to (default: the current directory)"},
			&cli.StringFlag{Name: "system", Usage: "system prompt `TEXT`, or @FILE to read it from FILE"},
			&cli.StringFlag{Name: "title", Usage: "the session's `TITLE`; a title given here is never replaced automatically"},
			&cli.StringFlag{Name: "import", Usage: "import each FILE (or stdin) in `FORMAT`: auto (detect), native, claude, codex, opencode, openai or anthropic"},
			&cli.BoolFlag{Name: "sidechains", Usage: "with a Claude Code file: import its sidechains (subagent runs) as sessions of their own"},
			&cli.BoolFlag{Name: "restore", Usage: "restore the sessions of each FILE (or stdin), a backup written by wc-export --format backup, with their ids"},
			&cli.BoolFlag{Name: "new-ids", Usage: "with --restore: give every restored session a new id, so that a backup restores beside the sessions it was taken from"},
		}
	},
	Examples: []tool.Example{
		{Text: "Start a session for the current project and say something in it:",
			Command: `wc-new --system "You are terse." | wc-append --role user --text "fix the login bug"`},
		{Text: "Import every Claude Code session of a project:", Command: `wc-new ~/.claude/projects/-home-me-src-app/*.jsonl | jq -r '[.id[:8], .message_count, .title] | @tsv'`},
		{Text: "Copy a session through its share JSON:",
			Command: `wc-export 3f2a --format json | wc-new --import native`},
		{Text: "Restore a backup of every session (wc-ls | wc-export > backup.ndjson) into another store:",
			Command: `wc-new --store ~/restored backup.ndjson | jq -r .title`},
		{Text: "Back up every session losslessly, and restore them, ids and spilled output included, into another store:",
			Command: "wc-ls | wc-export --format backup > wc.backup\nwc-new --store ~/restored --restore wc.backup | jq -r .title"},
	},
	Complete: tool.Completion{Args: tool.ArgsFiles, Values: map[string][]string{"import": {"auto", "native", "claude", "codex", "opencode", "openai", "anthropic"}}},
	Action:   newSession,
}

func main() { tool.Main(&spec) }
