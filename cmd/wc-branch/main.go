// Command wc-branch works on a session's tree of messages: names, switches,
// forks, checkpoints, rewinds, reverts, undo and garbage collection.
package main

import (
	"github.com/urfave/cli/v2"

	"github.com/wctoolkit/wc/cmd/internal/command"
)

var spec = command.Spec{
	Name:      "wc-branch",
	Summary:   "name, switch, fork, rewind and undo in a session's tree",
	ArgsUsage: "[SESSION...] VERB [ARG]",
	Description: `A session is a tree of messages; its active path, from the root to the head, is the conversation. Moving the head never deletes anything: the path left behind stays as a branch (unnamed unless you name it), unless another kept path (the new head's, or a branch's) already holds all of it, so every verb below can be undone with switch. Nothing is copied to make a branch. To see whether a later path holds the one left, a move reads the nodes of such a path below the head, never more.

The session comes from the arguments before VERB, or from stdin like any wc command. Verbs:

  mark [NAME]         name the head ("branch N" without a NAME)
  tree                the user turns of every path as JSON rows;
                      --text draws them as lines marked by a bullet on
                      the active path, a filled circle at its end, a
                      hollow circle elsewhere, a fork mark where turns
                      part, and branch names in brackets
  switch NAME|SEQ     move the head to a branch or a node
  fork                a new session holding the active path, or the
                      path to --at SEQ, titled as the session with
                      " (fork)" (a fork of a fork gets it again); prints
                      the new session
  checkpoint          remember the head for a rewind (--goal TEXT)
  rewind              return to the checkpoint and append the report
                      (--report FILE or -) as a user message; a second
                      rewind needs a new checkpoint. When a compaction
                      (or a switch) has left the checkpoint off the
                      active path, the rewind keeps as many messages of
                      the active path as the checkpoint had, as whycodes'
                      keep_until does, instead of going back to it
  revert SEQ          cut the active path after node SEQ (or after
                      position --index N, counted from 0)
  undo                cut the last user message and what followed, as
                      whycodes' undo_last_turn: an agent note, a
                      compaction summary or a rewind report counts
                      (after a rewind, undo takes the report away); a
                      user message of tool results does not
  set-messages        the messages on stdin become the active path; the
                      old one is kept as branch pre-set-N (--discard
                      keeps nothing)
  delete NAME|SEQ     drop a branch name (or the unnamed branch at SEQ)
  gc                  delete the nodes no head or branch reaches

Every verb prints one JSON line per session (tree: one per row). With --dry-run, delete and gc say what they would do and change nothing.`,
	Flags: func() []cli.Flag {
		return []cli.Flag{
			&cli.BoolFlag{Name: "text", Usage: "tree: print the rendered lines instead of JSON"},
			&cli.Uint64Flag{Name: "at", Usage: "fork: the last node `SEQ` of the path to copy (default: the head)"},
			&cli.StringFlag{Name: "goal", Usage: "checkpoint: what the exploration is for, as `TEXT`"},
			&cli.StringFlag{Name: "report", Usage: "rewind: read the report from `FILE` (- for stdin)"},
			&cli.StringFlag{Name: "index", Usage: "revert: keep the active path up to position `N`, counted from 0"},
			&cli.BoolFlag{Name: "discard", Usage: "set-messages: do not keep the old path as a branch"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "delete, gc: change nothing, print what would change"},
		}
	},
	Examples: []command.Example{
		{Text: "Name the current state before trying something:", Command: `wc-branch 3f2a mark before-refactor`},
		{Text: "Look at the tree:", Command: `wc-branch 3f2a tree --text`},
		{Text: "Go back, and forward again:", Command: "wc-branch 3f2a undo\nwc-branch 3f2a tree | jq -r 'select(.on_active_path|not) | .target' | tail -1 | xargs wc-branch 3f2a switch"},
		{Text: "Explore, then collapse the exploration into a report:", Command: "wc-branch 3f2a checkpoint --goal 'find the leak'\n# ... many turns later\necho 'The leak is in the cache.' | wc-branch 3f2a rewind --report -"},
		{Text: "Free the space of abandoned paths in every session:", Command: `wc-ls | wc-branch gc`},
	},
	Differences: []command.Difference{
		{Whycodes: "undo_last_turn cuts at the last user-role message even when it carries tool results (a form whycodes never writes, imported from Anthropic's), leaving the calls before it without results.",
			Wc:   "passes over a user message that carries tool results: a call without its result is invalid input for every provider.",
			Test: "TestDepartureUndoCutsAtAnyUserMessage (pkg/session/branch_test.go)"},
		{Whycodes: "mark_checkpoint on an empty session sets keep_until 0, so a rewind keeps the first message written after it.",
			Wc:   "rewinds such a checkpoint to the empty path: the message after it is exploration.",
			Test: "TestCheckpointRewind, a checkpoint of an empty session rewinds to the empty path (pkg/session/branch_test.go)"},
	},
	Complete: command.Completion{Args: command.ArgsVerbs, BranchVerbs: []string{"switch", "delete"}, Verbs: [][2]string{
		{"mark", "name the head"}, {"tree", "the user turns of every path"}, {"switch", "move the head to a branch or a node"},
		{"fork", "a new session from the active path"}, {"checkpoint", "remember the head for a rewind"},
		{"rewind", "return to the checkpoint with a report"}, {"revert", "cut the active path after a node"},
		{"undo", "cut the last user turn"}, {"set-messages", "make stdin's messages the active path"},
		{"delete", "drop a branch name"}, {"gc", "delete what no head or branch reaches"},
	}},
	Action: branch,
}

func main() { command.Main(&spec) }
