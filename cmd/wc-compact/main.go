// Command wc-compact shrinks sessions: caps old tool output, spills it to
// the store, or replaces old turns with a summary, keeping what it replaced.
package main

import (
	"github.com/urfave/cli/v2"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/cmd/internal/serve"
)

var spec = command.Spec{
	Name:      "wc-compact",
	Summary:   "compact sessions under a token budget, losslessly",
	ArgsUsage: "[SESSION...]",
	Description: `Shrinks the active path of each SESSION (the arguments, the references on stdin, or --all) and prints one JSON line per session: tokens and messages before and after, whether anything changed, and the branch that keeps the old path.

Nothing is lost: a compaction writes new nodes and moves the head, and the path it replaced stays in the tree as a branch named pre-compact-N, so "wc-branch SESSION switch pre-compact-N" undoes it. The tail the new path keeps unchanged is stored once: each of its new nodes refers to the old one. --discard keeps no branch (wc-branch gc then frees the old nodes, and writes a kept message into the new node first). Running the same compaction again changes nothing and says so ("changed":false).

The steps, applied in this order when their flags are given:

  --truncate      cap every tool body at 32,768 characters
  --prune         cap all but the newest 4 tool messages at 2,048
  --shake         cap all but the newest 4 tool messages at 512
  --spill         move the bodies of all but the newest 4 tool messages
                  into the store; each keeps its first 400 characters
                  and a line "full output saved: wc-blob:SHA256", which
                  wc-export --blob SHA256 prints back byte for byte
  --max-tokens N  whycodes' compact(): truncate and prune, then, while
                  the path is over 3/4 of N, replace its oldest
                  messages with a summary (a local one, or --summary)
  --full-replace  keep only the last user turn and what followed, with
                  a summary of the rest after it
  --native FILE   replace everything before the last user turn with one
                  assistant message holding the provider's compaction
                  block in FILE verbatim

The summary is a user message of its own that opens the path, as whycodes puts it; "kind":"summary" marks it (whycodes ignores the member), and a request body from wc-export --format request joins it to the user message that follows. --max-tokens cuts inside a long turn too, where an agent's one prompt is followed by many tool calls, but only where no tool result would lose its call: it keeps the turn's user message right after the summary, and drops that message as well only when nothing else brings the path under 3/4 of N. When nothing does, it drops all it can, keeping the last 4 messages, and the line says "still_over":true; --strict then makes the exit status 4. --summary on a compacted path that needs no cut replaces the summary the path opens with (whycodes' prepend_compact_summary inserts or replaces).

To have a model write the summary, print what will be replaced, summarise it, and give the summary back with the same flags:

  wc-compact ID --max-tokens 8000 --print-transcript \
    | llm "summarise this conversation" \
    | wc-compact ID --max-tokens 8000 --summary -

Model summaries are cleaned the way whycodes does (<analysis> dropped, <summary> unwrapped). --print-transcript --full prints the whole transcript, which whycodes summarises for --full-replace; --print-transcript --prefix prints only the messages before the last user turn, what --full-replace and --native replace (whycodes' prefix_transcript_for_summary). Both are cut at 48,000 bytes, as whycodes does, unless --max-chars says otherwise.

--native refuses, with status 1 and nothing changed, a path whycodes' native_compaction_prefix refuses: one where nothing precedes the last user turn, or the message before it is a tool result, a user message, or an assistant message with a tool call.

A batch (--all, or more than one session) opens the store once, in this process (a resident store process is asked to make way), shows progress on a terminal, and reads and compacts the next sessions on the other cores while it commits one (at most one per core, up to four, and one more; beyond the two it commits next, only while their token estimates total 4M tokens): its memory is bounded by the largest sessions, not by the store (a Go heap limit of 128 MiB applies unless GOMEMLIMIT is set). It compacts in store order, by id, whatever order the sessions were given in, so that its writes stay together in the store (in any other order each merge of its writes would rewrite most of the store); each line names its session. Store maintenance that a batch's writes call for is done before it exits, not left to the next command. A session that fails gets "error" on its line and the rest go on; the exit status is then 1. On a store on etcd the batch opens it through a private wc-store and reads one session at a time; a session that another writer (another machine) committed to after the batch read it is left as that writer made it and gets {"id", "skipped": "changed since it was read"} as its line: no failure. A single session is then read and compacted again, within --lock-timeout (then 75). --all --shard I/N compacts only part I of N of the sessions, so that N machines or bots share a batch over one store: the parts are those of wc-ls --shard (1 + the first 8 bytes of the sha256 of the id as printed, big endian, mod N), disjoint and together every session. Two batches that reach the same session anyway never commit over each other: the later one reports it as changed. One session given alone (as an argument or on stdin, without --all) fails as any command does: its error on stderr, nothing on stdout.`,
	Flags: func() []cli.Flag {
		return []cli.Flag{
			&cli.BoolFlag{Name: "all", Usage: "compact every session in the store"},
			command.ShardFlag(),
			&cli.BoolFlag{Name: "truncate", Usage: "cap every tool body at 32,768 characters"},
			&cli.BoolFlag{Name: "prune", Usage: "cap all but the newest 4 tool messages at 2,048 characters"},
			&cli.BoolFlag{Name: "shake", Usage: "cap all but the newest 4 tool messages at 512 characters"},
			&cli.BoolFlag{Name: "spill", Usage: "move old tool bodies into the store, keeping a pointer"},
			&cli.Uint64Flag{Name: "max-tokens", Usage: "compact the path under 3/4 of `N` tokens by summarising old turns"},
			&cli.StringFlag{Name: "summary", Usage: "use the model summary in `FILE` (- for stdin) instead of the local one"},
			&cli.BoolFlag{Name: "full-replace", Usage: "keep only the last user turn, what followed, and a summary"},
			&cli.StringFlag{Name: "native", Usage: "replace the prefix with the provider compaction block (JSON) in `FILE`"},
			&cli.BoolFlag{Name: "print-transcript", Usage: "print the text the compaction would replace, for a model to summarise"},
			&cli.BoolFlag{Name: "full", Usage: "with --print-transcript: the whole transcript"},
			&cli.BoolFlag{Name: "prefix", Usage: "with --print-transcript: the messages before the last user turn"},
			&cli.BoolFlag{Name: "strict", Usage: "with --max-tokens: exit 4 when a session is still over N (what was compacted stays)"},
			&cli.IntFlag{Name: "max-chars", Value: 12000, Usage: "with --print-transcript and --dropped: cut the transcript at `N` bytes (a cut one ends in a line \"…\"; 48000 with --full or --full-replace)"},
			&cli.BoolFlag{Name: "dropped", Usage: "include the replaced transcript in the output as dropped_transcript"},
			&cli.BoolFlag{Name: "discard", Usage: "keep no pre-compact branch"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "compute and print, write nothing"},
		}
	},
	Examples: []command.Example{
		{Text: "Shrink one session under 100k tokens:", Command: `wc-compact 3f2a --max-tokens 100000`},
		{Text: "Re-compact a project's sessions from cron:", Command: `wc-ls --project ~/src/app | wc-compact --max-tokens 100000 --spill`},
		{Text: "Undo the last compaction:", Command: `wc-branch 3f2a switch pre-compact-1`},
	},
	Exits: []command.ExitStatus{{Code: exitStillOver, Text: `With --strict: a session was still over --max-tokens after its compaction (its line says "still_over":true). What was compacted is committed and printed.`},
		{Code: 130, Text: "A batch was interrupted by SIGINT (143: SIGTERM, 129: SIGHUP) between two sessions; the sessions done are printed, the others are untouched (see SIGNALS)."}},
	Differences: []command.Difference{
		{Whycodes: "compact() drops the oldest messages up to any position, so a tool result can lose its call and the user message of a long turn goes first.",
			Wc:   "cuts only where no tool result loses its call, and keeps the turn's user message after the summary unless only dropping it too meets the budget: a result without its call is invalid input for every provider.",
			Test: "TestDepartureCompactCutsAtAnyMessage (pkg/session/compact_test.go)"},
		{Whycodes: "compact() reserves a fixed 256 tokens for its summary, which a summary of eight long paths and three goals can pass, leaving the path over the target it was cut for.",
			Wc:   "reserves the summary's own estimate when it is larger, so a cut said to fit does, and compacting again changes nothing.",
			Test: "TestDepartureCompactReservesFixedSummarySlack (pkg/session/compact_test.go)"},
		{Whycodes: "prepend_compact_summary after compact() inserts the model's summary in front of the local stub, since its stub test does not know the stub's own \"[N earlier messages trimmed\" form: the path opens with two summaries of one prefix.",
			Wc:   "--summary replaces the local summary (and any leading summary, whycodes' or wc's): the model's summary is given instead of the local one.",
			Test: "TestDeparturePrependKeepsLocalStub (pkg/session/compact_test.go)"},
		{Whycodes: "apply_full_replace restates only the first text of the last user message, losing its images, and the whole message when it has no text.",
			Wc:   "restates the whole message: its images and other blocks are the user's.",
			Test: "TestDepartureFullReplaceKeepsOnlyText (pkg/session/compact_test.go)"},
	},
	Action: compact,
	// Batches open the store in this process: through a socket they ran
	// at 24 against 40 MB/s.
	Direct:  serve.Open,
	Signals: "SIGINT (Ctrl-C), SIGTERM or SIGHUP ends the command at once while it waits for the store, which changes nothing. Once a batch (--all, or several sessions) has the store, it stops between two sessions: the lines of the sessions done are printed, then an error says how many of how many were done, and it exits 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP (128 and the signal's number, as a shell reports a command a signal ended). A single session's compaction ignores them from its first write on, so that what it commits is printed. A session whose compaction was committed is always printed. SIGKILL stops it as a crash would: a session it had not printed may be compacted or not, never half.",
}

func main() { command.Main(&spec) }
