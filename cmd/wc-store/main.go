// Command wc-store holds the store open for the other wc commands.
package main

import (
	"github.com/urfave/cli/v2"
	"github.com/wctoolkit/wc/cmd/internal/tool"
	"github.com/wctoolkit/wc/cmd/internal/tool/local"
)

var spec = tool.Spec{
	Name:    "wc-store",
	Summary: "hold the wc store open for the other commands, or stop the process that does",
	Description: `wc-store opens the store for the other commands: they start it and talk to it over a socket (only wc-compact opens the store in its own process, for its batches and when it opens the store directly). It must be installed beside them, on PATH, or where WC_STORE_PROGRAM says, but you rarely run it yourself.

Commands go through a resident wc-store, which keeps the store open between them: the first command that needs the store starts it in the background, later ones connect to its socket, wcd.sock in the store directory, and it stops after WC_RESIDENT_IDLE without commands. When no resident process can serve the store (WC_DIRECT=1, a read-only store or file system, another user's store), a command starts a wc-store of its own instead, which serves that command alone, opens the store for it, and closes it before the command exits. A store an older wc wrote is moved to the current schema by the first command that opens it, a reader's included; one that cannot write there says so.

Run by hand, wc-store serves the store in the foreground as the resident process: it prints one line of JSON once commands can connect ("store", "socket" and "pid") and serves until --idle passes without commands (never with 0), until SIGTERM, SIGINT or SIGHUP, or until wc-store --stop, and then closes the store. A store already held by another resident wc-store is an error (exit 75).

With --stop it asks the resident process of the store to stop once the commands it serves are done, waits up to --lock-timeout until it has closed the store (with 0 it only asks), and prints {"store": DIR, "stopped": true}, or false when no resident process was running. The next command starts a new one: to copy a store directory, stop its resident process while no other wc command runs.`,
	Flags: func() []cli.Flag {
		return []cli.Flag{
			&cli.BoolFlag{Name: "stop", Usage: "stop the resident store process instead of running one"},
			&cli.BoolFlag{Name: "check", Usage: "verify the whole store and print a JSON report, instead of serving it"},
			&cli.StringFlag{Name: "salvage", Usage: "copy every intact session of the store, damaged or not, into a new store in `DIR`, and print a JSON report"},
			&cli.DurationFlag{Name: "idle", EnvVars: []string{"WC_RESIDENT_IDLE"}, Value: tool.ResidentIdle,
				Usage: "stop serving after this Go `DURATION` without commands (0: never)"},
		}
	},
	Examples: []tool.Example{
		{Text: "Stop the resident process, then copy the store while no wc command runs:", Command: `wc-store --stop && tar -czf wc-backup.tgz -C ~/.local/share wc`},
		{Text: "Serve the store until stopped, as a service would:", Command: `wc-store --idle 0`},
	},
	Action:  run,
	Streams: true,
	Signals: "SIGTERM, SIGINT or SIGHUP stops wc-store serving: it closes the store once the commands it serves are done, and exits 0. SIGKILL stops it as a crash would; the commands it served then fail, and what they had not printed may or may not be in the store.",
}

func main() {
	if local.ServeIfAsked() {
		return
	}
	tool.Main(&spec)
}
