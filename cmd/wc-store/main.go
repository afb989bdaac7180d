// Command wc-store holds the store open for the other wc commands.
package main

import (
	"github.com/urfave/cli/v2"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/cmd/internal/open"
	"github.com/wctoolkit/wc/cmd/internal/serve"
)

var spec = command.Spec{
	Name:    "wc-store",
	Summary: "hold the wc store open for the other commands, or stop the process that does",
	Description: `wc-store opens the store for the other commands: they start it and talk to it over a socket (only wc-compact opens the store in its own process, for its batches and when it opens the store directly). It must be installed beside them, on PATH, or where WC_STORE_PROGRAM says, but you rarely run it yourself.

Commands go through a resident wc-store, which keeps the store open between them: the first command that needs the store starts it in the background, later ones connect to its socket, wcd.sock in the store directory, and it stops after WC_RESIDENT_IDLE without commands. When no resident process can serve the store (WC_DIRECT=1, a read-only store or file system, another user's store), a command starts a wc-store of its own instead, which serves that command alone, opens the store for it, and closes it before the command exits. A store an older wc wrote is moved to the current schema by the first command that opens it, a reader's included; one that cannot write there says so.

Run by hand, wc-store serves the store in the foreground as the resident process: it prints one line of JSON once commands can connect ("store", "socket" and "pid") and serves until --idle passes without commands (never with 0), until SIGTERM, SIGINT or SIGHUP, or until wc-store --stop, and then closes the store. A store already held by another resident wc-store is an error (exit 75).

A store on etcd (--store etcd://HOST:PORT[,…]/PREFIX[?PARAMS]) is served the same way, by the only wc-store that links an etcd client: its socket and lock are in $XDG_RUNTIME_DIR/wc (else /tmp/wc-UID), named by a hash of the URL, so that each user on each machine has one resident wc-store per URL; it keeps no listing cache (other machines write), and its writes are durable once etcd acknowledges them (--sync changes nothing). --check and --salvage read a store directory's files and refuse a store on etcd (status 2): etcd keeps and checks its own (docs/etcd.md says what to schedule there).

With --stop it asks the resident process of the store to stop once the commands it serves are done, waits up to --lock-timeout until it has closed the store (with 0 it only asks), and prints {"store": DIR, "stopped": true}, or false when no resident process was running. The next command starts a new one: to copy a store directory, stop its resident process while no other wc command runs.

With --check it verifies the whole store, at rest (a resident process is stopped first), and changes nothing: Badger's MANIFEST and every table it lists (the index and every block against their checksums), every value-log entry, and every session's records (each node decodes, its parent is stored below it and its running totals are its parent's and its own; the head, every branch and the checkpoint exist; the metadata's counts are the head's; every blob the active path points at is there and matches its sha256), and the listing against the metadata. It prints one line of JSON: {"store", "ok", "sessions", "nodes", "blobs", "tables", "value_logs", "index": {"built", "segments", "messages", "bytes", "pending_commits"} (the search index of wc-ls --grep and --search, whose every segment it decodes too), "problems": [{"session" (when it is a session's), "problem"}]}, and exits 74 when it found a problem.

With --salvage DIR it copies every session of the store it can prove intact into a new store in DIR (a new or empty directory), whatever is damaged, and never writes to the store it reads: it reads every table whether or not the MANIFEST lists them (or exists), leaving out those that fail their checksums, through a MANIFEST of its own in a scratch directory beside DIR, removed when it is done. A session is copied, with its id, its whole tree and its spilled blobs, when every record of it reads back and checks as --check checks it and none of its keys may be in a table left out. It prints one line of JSON: {"store", "into", "ok", "salvaged": [ids], "unverified": [ids], "lost": [{"session", "problem"}], "damaged_tables": [{"table", "problem", "from", "to"}]}. Unverified sessions were copied whole and consistent, but a table left out whose keys nothing tells (its index damaged too) may have held later versions of their records; from and to bound the sessions a damaged table may have held. It exits 0 when every session was salvaged and verified, and 74 otherwise, after the report.`,
	Flags: func() []cli.Flag {
		return []cli.Flag{
			&cli.BoolFlag{Name: "stop", Usage: "stop the resident store process instead of running one"},
			&cli.BoolFlag{Name: "check", Usage: "verify the whole store and print a JSON report, instead of serving it"},
			&cli.StringFlag{Name: "salvage", Usage: "copy every intact session of the store, damaged or not, into a new store in `DIR`, and print a JSON report"},
			&cli.DurationFlag{Name: "idle", EnvVars: []string{"WC_RESIDENT_IDLE"}, Value: open.ResidentIdle,
				Usage: "stop serving after this Go `DURATION` without commands (0: never)"},
		}
	},
	Examples: []command.Example{
		{Text: "Stop the resident process, then copy the store while no wc command runs:", Command: `wc-store --stop && tar -czf wc-backup.tgz -C ~/.local/share wc`},
		{Text: "Serve the store until stopped, as a service would:", Command: `wc-store --idle 0`},
		{Text: "Verify a store, and list what is damaged:", Command: `wc-store --check | jq -r '.problems[] | [.session, .problem] | @tsv'`},
		{Text: "Copy every intact session of a damaged store into a new one, then use it:", Command: `wc-store --salvage ~/.local/share/wc-salvaged && export WC_STORE=~/.local/share/wc-salvaged`},
	},
	Complete: command.Completion{Args: command.ArgsNone},
	Action:   run,
	Streams:  true,
	Signals:  "SIGTERM, SIGINT or SIGHUP stops wc-store serving: it closes the store once the commands it serves are done, and exits 0. SIGKILL stops it as a crash would; the commands it served then fail, and what they had not printed may or may not be in the store.",
}

func main() {
	if serve.ServeIfAsked(etcdServing) {
		return
	}
	command.Main(&spec)
}
