// Command wc-rm removes sessions from the store.
package main

import (
	"github.com/urfave/cli/v2"

	"github.com/wctoolkit/wc/cmd/internal/command"
)

var spec = command.Spec{
	Name:      "wc-rm",
	Summary:   "remove sessions from the wc store",
	ArgsUsage: "[SESSION...]",
	Description: `Removes each SESSION (the arguments, or the references on stdin, such as the lines of wc-ls) and prints the info line it had, one per session. Nothing is removed unless it is named: wc-rm never picks sessions by age or by anything else itself, and a reference that names no session, or more than one, removes nothing at all (status 3 or 2).

A removed session is gone for every command at once: its messages, branches, spilled tool output (blobs) and listing entry are no longer readable, and its id is free again. Its bytes stay in the store's files, though, until the store is rewritten: the database marks deleted records and drops their space only when it next merges the tables that hold them, and values of over 64 KB sit in its value log until that is collected. With --purge, wc-rm rewrites the store once the sessions are removed, copying what is live into a new database and swapping it in, so that nothing of the removed sessions is left in the store directory. A purge copies the whole store: it takes about as long as exporting every session, holds the store's lock meanwhile, and stops the resident store process first. A fork holds copies of its source's messages and blobs of its own: remove the fork too. On a store on etcd there is no store file of wc's to rewrite: a removal deletes the session's keys at once, and --purge deletes what removals and interrupted commits left behind, session by session, without stopping other writers; the bytes leave etcd's files only at the cluster's next compaction and defragmentation, which its operator schedules (docs/etcd.md).

With --purge and no SESSION (no arguments, and stdin a terminal or empty), wc-rm only rewrites the store, purging what earlier removals left.

With --dry-run, wc-rm prints the info lines of the sessions it would remove and changes nothing.

With --if-unchanged, a reference that comes in a row a wc command printed (a line of wc-ls, wc-new or wc-append) removes its session only if the session is still as the row saw it: its updated_at, head and message_count. A session that changed in between (a pipeline appended to it after wc-ls listed it as empty) is refused with status 1, and nothing is removed: list the sessions again. A plain id or prefix removes the session as it is. Without it, a row names its session whatever the session holds now, as a saved "wc-new > s.json" does.

To find what to remove: wc-ls --until 90d lists the sessions not updated for 90 days, and wc-ls --empty the sessions without a single message, such as those a pipeline that failed after wc-new left behind. A pipeline that is running has an empty session too, between its wc-new and its first wc-append: wc-ls --empty --until 1h leaves those alone, and --if-unchanged spares one that a pipeline wrote to after wc-ls listed it.`,
	Flags: func() []cli.Flag {
		return []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "remove nothing; print the sessions that would be removed"},
			&cli.BoolFlag{Name: "purge", Usage: "then rewrite the store, so that no byte of the removed sessions stays in its files"},
			&cli.BoolFlag{Name: "if-unchanged", Usage: "remove nothing if a session named by a row (a line of wc-ls) has changed since the row was printed"},
		}
	},
	Examples: []command.Example{
		{Text: "Remove one session:", Command: `wc-rm 3f2a`},
		{Text: "See, then remove, the sessions not touched for 90 days (from cron: sparing one touched meanwhile):", Command: "wc-ls --until 90d | wc-rm --dry-run\nwc-ls --until 90d | wc-rm --if-unchanged"},
		{Text: "Remove the empty sessions failed pipelines left (an hour old at least, so that no pipeline still running loses its session):", Command: `wc-ls --empty --until 1h | wc-rm --if-unchanged`},
		{Text: "Remove a session that holds a pasted secret, and every trace of it in the store's files:", Command: `wc-ls --grep 'sk-live-' | wc-rm --purge`},
	},
	Action: remove,
}

func main() { command.Main(&spec) }
