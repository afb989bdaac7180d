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

With --salvage DIR it copies every session of the store it can prove intact into a new store in DIR (a new or empty directory), whatever is damaged, and never writes to the store it reads: it reads every table whether or not the MANIFEST lists them (or exists), leaving out those that fail their checksums, through a MANIFEST of its own in a scratch directory beside DIR, removed when it is done. A session is copied, with its id, its whole tree and its spilled blobs, when every record of it reads back and checks as --check checks it and none of its keys may be in a table left out. It prints one line of JSON: {"store", "into", "ok", "salvaged": [ids], "unverified": [ids], "lost": [{"session", "problem"}], "damaged_tables": [{"table", "problem", "from", "to"}]}. Unverified sessions were copied whole and consistent, but a table left out whose keys nothing tells (its index damaged too) may have held later versions of their records; from and to bound the sessions a damaged table may have held. It exits 0 when every session was salvaged and verified, and 74 otherwise, after the report.

With --copy SRC DST it copies every session of the store SRC into the store DST, each a directory or an etcd:// URL (--store and WC_STORE play no part): directory to etcd, etcd to directory, directory to directory, or between two prefixes of etcd. A session keeps its id, its whole tree, its branches and checkpoint, its metadata and the blobs its nodes point at (blobs no node points at are gc's to free and stay behind). Each session is read in one transaction, at one revision of a store being written to, and checked as it is read, as wc-new --restore checks a backup and more: a record that does not decode, a node whose parent is missing or whose running totals are not its path's, metadata whose counts are not its head's, a blob that does not match its sha256. Such a session is reported as damaged and not copied: a source's damage is never copied silently. A session DST holds already is compared, not written: byte for byte the same, it counts as copied ("present"); otherwise it is reported ("differs") and left as it is, never overwritten. Sessions are written as a restore writes them, the metadata last, so a copy interrupted at any point (a signal, kill -9, a lost cluster) is finished by running it again with the same arguments: what DST holds whole is compared and skipped, what it holds in part is invisible and written again, and nothing is doubled. When every session has been seen, each one written is read back from DST and compared with what was read from SRC: every session's wc-export --format jsonl --tree lines, its metadata and its blobs, byte for byte.

A store directory is copied at rest: its resident wc-store is stopped first and the directory stays locked while the copy runs (shared for SRC, exclusive for DST), so commands on it wait (--lock-timeout). A store on etcd is copied live, each session as it was when the copy read it; a session appended after it was copied differs on the next run, which reports it and leaves it: wc-rm DST's copy, then run the copy again to take the newer one. One password, WC_STORE_PASSWORD, serves both stores' etcd users; when they differ, WC_COPY_FROM_PASSWORD and WC_COPY_TO_PASSWORD give SRC's and DST's.

It prints a line of JSON for each session as it is done, {"session", "copy" ("copied", "present", "differs", "damaged"), "nodes", "blobs", "bytes", "problem" (but for copied and present ones)}, one more, with "copy": "mismatch", for each copied session that then does not read back the same, and a last one: {"from", "to", "ok", "sessions", "copied", "present", "differs": [ids], "damaged": [{"session", "problem"}], "mismatch": [{"session", "problem"}], "nodes", "blobs", "bytes"}. It exits 0 when every session of SRC is in DST, verified; 74 when a session was damaged in SRC or did not read back the same from DST; 1 when only differing sessions were left; all after the report.`,
	Flags: func() []cli.Flag {
		return []cli.Flag{
			&cli.BoolFlag{Name: "stop", Usage: "stop the resident store process instead of running one"},
			&cli.BoolFlag{Name: "check", Usage: "verify the whole store and print a JSON report, instead of serving it"},
			&cli.BoolFlag{Name: "copy", Usage: "copy every session of the store SRC into the store DST, the two arguments, and verify them there, instead of serving a store"},
			&cli.StringFlag{Name: "salvage", Usage: "copy every intact session of the store, damaged or not, into a new store in `DIR`, and print a JSON report"},
			&cli.DurationFlag{Name: "idle", EnvVars: []string{"WC_RESIDENT_IDLE"}, Value: open.ResidentIdle,
				Usage: "stop serving after this Go `DURATION` without commands (0: never)"},
		}
	},
	Examples: []command.Example{
		{Text: "Stop the resident process, then copy the store while no wc command runs:", Command: `wc-store --stop && tar -czf wc-backup.tgz -C ~/.local/share wc`},
		{Text: "Serve the store until stopped, as a service would:", Command: `wc-store --idle 0`},
		{Text: "Verify a store, and list what is damaged:", Command: `wc-store --check | jq -r '.problems[] | [.session, .problem] | @tsv'`},
		{Text: "Move the default store onto an etcd cluster, then use it there:", Command: `wc-store --copy ~/.local/share/wc etcd://10.0.0.1:2379,10.0.0.2:2379/wc && export WC_STORE=etcd://10.0.0.1:2379,10.0.0.2:2379/wc`},
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
