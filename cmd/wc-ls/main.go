// Command wc-ls lists the sessions in the store.
package main

import (
	"github.com/urfave/cli/v2"

	"github.com/wctoolkit/wc/cmd/internal/command"
)

var spec = command.Spec{
	Name:    "wc-ls",
	Summary: "list the sessions in the wc store",
	Description: `Lists sessions, most recently updated first. On a terminal it prints a table; otherwise, and with --json, one JSON object per session (the same info the other commands print), so that the rows can be filtered with jq and piped to any wc command. JSON is always complete.

A table (on a terminal, or with --table) shows the 20 sessions that come first unless --limit says otherwise, then a line saying how many more there are (-n 0 lists all), and fits the terminal's width, or $COLUMNS when stdout is not a terminal: titles are cut with "…", and no line wraps.

Filters combine: --project keeps the sessions of a directory and of the directories below it, --since and --until bound the time of the last update, --title matches a substring of the title and --grep a substring of any stored message, both ignoring case with --ignore-case (--title matches the stored title). --empty keeps the sessions that hold no message at all, on no path: wc-new's output when the command after it in a pipeline failed. A store that does not exist yet lists nothing.

A session still on its placeholder title (a legacy "New session - …" or "project-ab", title_source "default") that holds user messages is listed with the title its first prompt gives, title_source "heuristic", as whycodes' maybe_upgrade_title_from_history does when it lists; reading that prompt costs a read of the session's first messages, for such sessions only.`,
	Flags: func() []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "project", Usage: "only sessions of project `DIR` or below it"},
			&cli.StringFlag{Name: "since", Usage: "only sessions updated at or after `TIME` (RFC 3339, YYYY-MM-DD, or an age like 36h or 7d)"},
			&cli.StringFlag{Name: "until", Usage: "only sessions updated before `TIME`"},
			&cli.StringFlag{Name: "title", Usage: "only sessions whose title contains `TEXT`"},
			&cli.StringFlag{Name: "grep", Usage: "only sessions with a message that contains `TEXT`"},
			&cli.BoolFlag{Name: "empty", Usage: "only sessions without a single message, on any path: what a pipeline that failed after wc-new leaves"},
			&cli.BoolFlag{Name: "ignore-case", Aliases: []string{"i"}, Usage: "match --title and --grep regardless of case"},
			&cli.StringFlag{Name: "sort", Value: "updated", Usage: "order by `KEY`: updated, created, title, messages or tokens (largest or newest first)"},
			&cli.BoolFlag{Name: "reverse", Aliases: []string{"r"}, Usage: "reverse the order"},
			&cli.IntFlag{Name: "limit", Aliases: []string{"n"}, Usage: "print at most `N` sessions (0: all; a table shows 20 unless given)"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON even on a terminal"},
			&cli.BoolFlag{Name: "table", Usage: "print the table even when stdout is not a terminal"},
		}
	},
	Env: []command.EnvVar{{Name: "COLUMNS", Text: "The width a table fits when stdout is not a terminal (a terminal says its own)."}},
	Examples: []command.Example{
		{Text: "The ten sessions touched last:", Command: `wc-ls -n 10`},
		{Text: "Titles of this project's sessions from the last week:", Command: `wc-ls --project . --since 7d | jq -r .title`},
		{Text: "Export every session that mentions a function:", Command: `wc-ls --grep parseConfig | wc-export --format markdown`},
		{Text: "Remove the empty sessions that failed pipelines left, an hour old at least (a running pipeline's is empty too):", Command: `wc-ls --empty --until 1h | wc-rm --if-unchanged`},
	},
	Differences: []command.Difference{
		{Whycodes: "listing saves the upgraded title of a session still on its placeholder.",
			Wc:   "shows it and writes nothing: a listing reads the store under a shared lock, opened read-only when direct. The next wc-append to the session stores it, from the same first prompt, before it appends.",
			Test: "cmd/wc-ls/testdata/title-upgrade.txtar"},
	},
	Complete: command.Completion{Args: command.ArgsNone, Values: map[string][]string{"sort": {"updated", "created", "title", "messages", "tokens"}}},
	Action:   list,
}

func main() { command.Main(&spec) }
