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

Filters combine: --project keeps the sessions of a directory and of the directories below it, --since and --until bound the time of the last update, --title matches a substring of the title and --grep a substring of any stored message, both ignoring case with --ignore-case (--title matches the stored title). --grep is answered from the store's word index: the index names the messages that may hold the text (its words at consecutive positions, the first possibly ending a word and the last beginning one), and only those are read and matched, so the sessions found are exactly those a read of every message finds. A text without a letter or digit (say "->") is matched by reading every message.

--search QUERY ranks the sessions by their best message (BM25 over the messages): every word must appear, ignoring case; "a phrase" must appear as consecutive words; a word ending in * matches every word it begins (log* finds login and logs); a word with inner punctuation (foo-bar) is a phrase. It prints one row per session, best first: in JSON the listing row plus "seq" (the message, for wc-export --at SEQ), "snippet" (its text around the first match, on one line) and "score"; the table shows the seq and the snippet. --project, --since, --until, --title and --limit filter it; --sort, --reverse, --grep and --empty do not combine with it. A query that does not parse (an unclosed ", a * that ends no word, no word at all) is a usage error. The index is kept by every write in the transaction that commits it, and built from the sessions by the first writer (the resident store process) that needs it when it is missing or of another version.

--shard I/N keeps part I of N of the sessions, for N machines or bots that split a batch: a session is in part 1 + (the first 8 bytes of the sha256 of its id as printed, lowercase with dashes, read big endian) mod N, a function of its id alone, the same on every machine and build, so the N parts are disjoint and together are every session. It combines with the other filters and is applied before --limit: --shard 1/2 -n 5 lists the newest 5 sessions of part 1.

--empty keeps the sessions that hold no message at all, on no path: wc-new's output when the command after it in a pipeline failed. A store that does not exist yet lists nothing.

A session still on its placeholder title (a legacy "New session - …" or "project-ab", title_source "default") that holds user messages is listed with the title its first prompt gives, title_source "heuristic", as whycodes' maybe_upgrade_title_from_history does when it lists; reading that prompt costs a read of the session's first messages, for such sessions only.`,
	Flags: func() []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "project", Usage: "only sessions of project `DIR` or below it"},
			&cli.StringFlag{Name: "since", Usage: "only sessions updated at or after `TIME` (RFC 3339, YYYY-MM-DD, or an age like 36h or 7d)"},
			&cli.StringFlag{Name: "until", Usage: "only sessions updated before `TIME`"},
			&cli.StringFlag{Name: "title", Usage: "only sessions whose title contains `TEXT`"},
			&cli.StringFlag{Name: "grep", Usage: "only sessions with a message that contains `TEXT`"},
			&cli.StringFlag{Name: "search", Usage: "rank the sessions whose messages match `QUERY` (words, \"phrases\", prefix*), best first, each with its best message's seq, snippet and score"},
			&cli.BoolFlag{Name: "empty", Usage: "only sessions without a single message, on any path: what a pipeline that failed after wc-new leaves"},
			&cli.BoolFlag{Name: "ignore-case", Aliases: []string{"i"}, Usage: "match --title and --grep regardless of case"},
			&cli.StringFlag{Name: "sort", Value: "updated", Usage: "order by `KEY`: updated, created, title, messages or tokens (largest or newest first)"},
			&cli.BoolFlag{Name: "reverse", Aliases: []string{"r"}, Usage: "reverse the order"},
			command.ShardFlag(),
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
		{Text: "The five sessions that best match a search, and the message of the best:", Command: `wc-ls --search '"login test" flaky' -n 5 | jq -r '"\(.id) \(.seq) \(.snippet)"'`},
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
