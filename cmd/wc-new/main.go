// Command wc-new creates a session, empty or imported from a transcript.
package main

import (
	"github.com/urfave/cli/v2"

	"github.com/wctoolkit/wc/cmd/internal/command"
)

var spec = command.Spec{
	Name:      "wc-new",
	Summary:   "create a conversation session in the wc store",
	ArgsUsage: "[FILE...]",
	Description: `Creates a session and prints its info as one line of JSON, which any other wc command reads on stdin.

Without --import, FILE or data on stdin the session is empty: it has the project, the system prompt and a default title "<project>-<xx>", which the first user message replaces with a short title of its own unless --title set one. Data on stdin (anything but blank space; a terminal is never read) is imported as with --import auto: "cat rollout.jsonl | wc-new" imports the rollout.

Each FILE (or stdin with --import and no FILE, or "-") is a transcript to import, one or more sessions each; --import names its format, and FILE arguments alone mean --import auto, which tells the formats apart by their content. A FILE that is a directory stands for every file below it, in path order: each file wc recognises is imported, and each other one gets a line {"file":PATH,"skipped_file":WHY} after the sessions (a file of a directory that cannot be imported does not fail the run); on a terminal a progress line counts the files. The formats:

  native     the share JSON of wc-export --format json and of whycodes
             (a session, or several: one a line, or an array of
             them), a bare JSON array of messages, or the lines of
             wc-export --format jsonl
  claude     a Claude Code session (~/.claude/projects/*/*.jsonl), a
             Claude Code on the web session ({"loglines":[…]}), or
             the output of claude -p --output-format stream-json
  codex      a Codex rollout (~/.codex/sessions/**/rollout-*.jsonl),
             or the events of codex exec --json
  opencode   the JSON of "opencode export"
  gemini     a Gemini CLI chat recording (~/.gemini/tmp/*/chats/
             session-*.json or .jsonl), or the output of gemini
             --output-format stream-json
  cursor     the output of cursor-agent --output-format stream-json
             (claude reads Claude Code's stream-json the same way)
  goose      goose's sessions.db (~/.local/share/goose/sessions)
  llm        llm's logs.db (llm logs path), its responses tables and
             its threads from 0.32 on

  openai     a Chat Completions request body or messages array
  anthropic  a Messages API request body or messages array

An SQLite database is read by its tables: opencode's opencode.db (opencode 1.2 on), goose's sessions.db, llm's logs.db and whycodes' database (--import whycodes or native names it) import every session, conversation or thread they hold, or those --select names, each as a session. wc-sqlite(1), beside wc-new, on PATH or at WC_SQLITE_PROGRAM, reads them, so that wc-new links no SQLite library. opencode's storage tree of before 1.2 (~/.local/share/opencode/storage, a directory) imports too, a session per session file.

Imports keep the structure: tool calls and results stay paired blocks, thinking with its signatures and images are kept, source timestamps are kept, and provider usage is summed (Codex's repeated token_count snapshots counted once). A Claude Code file's uuid/parentUuid tree becomes the session's tree, so its rewinds become branches; split assistant records are merged, a record a resumed session wrote again is read once, a prompt typed during a turn that only the queue records of older versions hold comes in where the model was given it, compaction summaries are marked as such, and sidechains are skipped unless --sidechains (a file of nothing but sidechain records, a subagent's own transcript, is imported whole). Records that have no place in a session are counted in the output under "skipped", never dropped silently. A file with no user or assistant message is an error (status 65).

A native share keeps everything (title, times, usage, cost, branches, and the members only wc reads: wc_content, wc_tree; see wc-export(1)); only the id is new. A share whose title_source is not default, heuristic, generated or manual, whose times are not RFC 3339 as whycodes reads them, or whose wc_tree does not match its paths is refused with status 65. The lines of wc-export --format jsonl make a session per id they carry; with --tree they make its tree again, with its head and branches as their "head" and "branches" members say (lines with neither make the newest leaf the head and the other leaves unnamed branches; on the lines of a path both are ignored). Two heads, a branch name wc-branch could not give (a number, control characters, space around it) or members of another shape are refused with status 65. Lines of one path in its order make that path, also when a filter left some out. Lines that are neither (a tree a filter thinned, lines out of order) are refused with status 65: read as a path they would interleave its branches. A stream that mixes such lines with other messages is one path. A foreign import is titled from the source when it has a title (a Claude Code custom or ai title, agent name or summary, an opencode title), which is then manual, as a title hint is to whycodes' from_imported; else from the first prompt the user typed, in whichever path of it came first (what an agent or the system wrote as the user, such as task notifications, command output and compaction prompts, never titles a session, and a prompt an agent wrapped in text of its own, such as Codex's IDE context or Claude Code's accepted plan, is titled by what it wraps). As in whycodes only that first prompt can title: an image-only first prompt leaves the default title. A share still on a placeholder title (a legacy "New session - …" or "project-ab", title_source "default") takes the title of its first user turn the same way, as whycodes does when it resumes one. A share without edit_stats has them counted from its active path's tool results, as whycodes rebuilds them on load. --title and --project override.

Each import records its source: its format, the source's own session id and the file's absolute path, which every command's output and wc-ls rows carry as "source_format", "source_id" and "source_path". A source imported before (the same format and source id; for a source without an id, the same file) is not imported again: its line is the stored session's, with "existing":true. With --update the stored session gains what the source gained since (the messages past the part both share, with their usage; a source rewound or compacted since keeps the old path as a branch, while a reply the agent was still writing when the file was read is completed in place of its partial copy, which no branch keeps), and the line says how many messages were "added"; a cron job that runs "wc-new --update ~/.claude/projects" keeps a store in step with Claude Code. --again imports a new copy all the same.

With --restore, each FILE (or stdin) is a backup (wc-export --format backup) and its sessions come back whole: their ids, nodes and seqs, branches, checkpoints, usage, cost, times and spilled tool output, so that every export of a restored session is byte for byte what it was when backed up. A session whose id is in the store already is refused (status 1) and nothing is restored; --new-ids restores every session under a new id instead, and its line's "restored_from" is the id in the backup. Every file is read and checked before the store is opened, then read again as its sessions are committed one by one, so a backup is never held whole in memory (stdin is, up to 1 GiB). A backup that does not end with its end line, or whose bytes do not match the sha256 that line holds, was cut short or changed: it is refused (65) and nothing is restored. (Backups of wc before the end line, "backup":1, are read without it.)`,
	Flags: func() []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "project", Usage: "project `DIR` the session belongs to (default: the current directory)"},
			&cli.StringFlag{Name: "system", Usage: "system prompt `TEXT`, or @FILE to read it from FILE"},
			&cli.StringFlag{Name: "title", Usage: "the session's `TITLE`; a title given here is never replaced automatically"},
			&cli.StringFlag{Name: "import", Usage: "import each FILE (or stdin) in `FORMAT`: auto (detect), native, claude, codex, opencode, gemini, cursor, goose, llm, openai or anthropic"},
			&cli.BoolFlag{Name: "sidechains", Usage: "with a Claude Code file: import its sidechains (subagent runs) as sessions of their own"},
			&cli.StringSliceFlag{Name: "select", Usage: "with an SQLite database: import only the session, conversation or thread of `ID` (repeatable)"},
			&cli.BoolFlag{Name: "update", Usage: "for a source imported before: add to its session what the source gained since"},
			&cli.BoolFlag{Name: "again", Usage: "import a source imported before as a new session all the same"},
			&cli.BoolFlag{Name: "restore", Usage: "restore the sessions of each FILE (or stdin), a backup written by wc-export --format backup, with their ids"},
			&cli.BoolFlag{Name: "new-ids", Usage: "with --restore: give every restored session a new id, so that a backup restores beside the sessions it was taken from"},
		}
	},
	Env: []command.EnvVar{
		{Name: "WC_SQLITE_PROGRAM", Text: "The wc-sqlite program that reads SQLite databases; by default the wc-sqlite beside wc-new, else the one on PATH."},
	},
	Examples: []command.Example{
		{Text: "Start a session for the current project and say something in it:",
			Command: `wc-new --system "You are terse." | wc-append --role user --text "fix the login bug"`},
		{Text: "Import every Claude Code session of a project:", Command: `wc-new ~/.claude/projects/-home-me-src-app/*.jsonl | jq -r '[.id[:8], .message_count, .title] | @tsv'`},
		{Text: "Copy a session through its share JSON:",
			Command: `wc-export 3f2a --format json | wc-new --import native --again`},
		{Text: "Keep a store in step with every Claude Code session, from cron:",
			Command: `wc-new --update ~/.claude/projects | jq -c 'select(.added > 0) | {id, title, added}'`},
		{Text: "Copy every session, as shares (wc-ls | wc-export > shares.ndjson), into another store under new ids:",
			Command: `wc-new --store ~/copies shares.ndjson | jq -r .title`},
		{Text: "Back up every session losslessly, and restore them, ids and spilled output included, into another store:",
			Command: "wc-ls | wc-export --format backup > wc.backup\nwc-new --store ~/restored --restore wc.backup | jq -r .title"},
	},
	Differences: []command.Difference{
		{Whycodes: "a session loaded from its database starts its cost and its stream-rule ledger at zero and infers title_source from the title.",
			Wc:   "keeps all three: a share carries them, the store holds them, and an import keeps what the share says. Keeping more loses nothing.",
			Test: "TestDepartureResumeRestartsCostAndStreamRules (pkg/session/share_test.go)"},
	},
	Complete: command.Completion{Args: command.ArgsFiles, Values: map[string][]string{"import": {"auto", "native", "claude", "codex", "opencode", "gemini", "cursor", "goose", "llm", "openai", "anthropic"}}},
	Action:   newSession,
}

func main() { command.Main(&spec) }
