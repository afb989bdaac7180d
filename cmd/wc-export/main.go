// Command wc-export writes sessions out as JSON, markdown or text.
package main

import (
	"github.com/urfave/cli/v2"

	"github.com/wctoolkit/wc/cmd/internal/command"
)

var spec = command.Spec{
	Name:      "wc-export",
	Summary:   "write sessions out as JSON, markdown or text",
	ArgsUsage: "[SESSION...]",
	Description: `Writes each SESSION (the arguments, or the references on stdin) in one format:

  json      the whole session as whycodes share JSON, one line per session:
            the active path as messages, every other path as a full copy
            under branches; whycodes loads it, wc-new --import native
            reads it back whole (see The share below)
  jsonl     one line per message of the active path (with --tree, per
            node of the whole tree): {"id","seq","parent","message"};
            with --tree the head's line also has "head":true, and the
            line of a node that branches end at has their names,
            "branches":[names] ("" for an unnamed one)
  markdown  a readable document; code fences always outlast their content,
            what wc writes itself (the title, an unknown block's type)
            is escaped, and so is a "<" outside code in the messages'
            text, which a renderer would take for HTML
  text      "Role: text" per message, as whycodes' conversation text,
            but with every text block of the message, in order; of
            several sessions, each after a line "==> ID TITLE <=="
  info      the session's info, as the other commands print it, and
            what whycodes reads of its messages: first_user_text (the
            text of the first user turn, null when it has none),
            first_assistant_snippet (the first --snippet-chars chars of
            the first assistant text) and compaction_prefix_end (the
            position of the last user turn, where the prefix that
            --full-replace and --native replace ends; the message count
            when there is none)
  summary   whycodes' exit summary (--model, --duration, --binary)
  html      one self-contained page to read in a browser: no script,
            no request, tool calls (summed up as Read(src/auth.go)),
            results and thinking collapsible; several sessions make
            one page, each session once
  request   a request body for --provider anthropic or openai, ready
            for curl (see Request bodies below)
  backup    everything the session holds, for wc-new --restore: its
            metadata as stored, every node as a --tree line, and the
            spilled tool output its messages point at; each session
            once, however often it is named (see BACKUP)

The share. whycodes loads every share wc writes with its own serde types, and wc-new --import native reads it back without losing a byte: after wc-export | wc-new --import native, wc-export --format jsonl --tree prints the same lines, but for the session id. A whycodes load keeps the session's id, title, title_source, system_prompt, project_path, created_at, updated_at, usage, cost, edit_stats, checkpoint (keep_until, goal, started_at), last_rewind_report, stream_rules and branches, and of each message its role, tool_call_id, name, created_at and content, of which whycodes knows text, image (a base64 or url source), tooluse, toolresult (a string), thinking and redacted_thinking blocks. What it cannot load goes in members its serde skips, which only wc reads back:

  wc_content  a message's content as wc stores it, when whycodes cannot
              load all of it; "content" then holds what it can: blocks of
              other types (a provider's server-tool blocks, the --native
              compaction block, Codex items, documents) and images of
              other sources (file) are left out, a tool result's block
              list becomes its text, block members whycodes cannot parse
              (numbers past f64, nesting past serde_json's 128 levels)
              are left out, and so is a tool input, sent as its JSON text
  wc_tree     the seq of every message of the active path and of each
              branch, the nodes no path reaches, and the next seq: only
              when reading the paths alone would number the tree another
              way (after undo, switch or rewind, with equal sibling
              messages, unreached nodes, or seqs freed by gc)
  other       tool messages' is_error and a message's kind; every member
              of a message or block that wc keeps from its source (Claude
              Code's caller, opencode's part ids); checkpoint.seq;
              forked_from; the session's own other members (imported_from)

wc-new --import native refuses (65) a title_source other than default, heuristic, generated and manual (one an older wc stored is exported as the one wc infers from the title), a time that is not RFC 3339 with a full stop before any fraction of a second (what chrono reads), and a wc_tree that does not match the share's paths. In every input a lone surrogate escape (\ud800 without its other half) inside JSON that wc keeps as it came becomes \ufffd, as encoding/json reads it: serde_json and jq refuse such a string.

Request bodies. --format request --provider anthropic (Messages API) or openai (Chat Completions) --model MODEL prints a body for curl, made from a copy of the active path; the stored transcript is never changed. Both APIs require the model: without --model the format is a usage error (2), as is a --temperature past the API's range (1 for anthropic, 2 for openai). A --tools file is refused (65) when the API would refuse it: a tool that is not an object or has no name, a name twice, a name of other characters than letters, digits, "_" and "-" or longer than the API takes (128 characters for anthropic, 64 for openai), a schema that is not an object. The copy keeps each provider's structural rules, which wc's tests check on every imported fixture, every generated session and the fuzz corpus. Anthropic:

  - the system prompt, with every system message, is the top-level
    "system"; messages are "user" or "assistant" and alternate from
    "user": messages of one role in a row are merged (a compaction
    summary and the next prompt), and a path that begins with the
    assistant gets a first user message saying earlier turns are left out
  - every tool_use is answered by a tool_result with its id at the start
    of the next user message: a call without a result gets the error
    result "error: no result was recorded for this tool call", a result
    that answers no call is left out
  - no empty or whitespace-only text block, no empty message (an
    assistant message of reasoning alone is left out)
  - tool_use.input is an object: an input of another kind (a Codex
    custom tool's patch text, arguments that are not JSON) is sent as
    {"input": it}; tool_use ids match ^[a-zA-Z0-9_-]+$ and are unique:
    other characters become "_", a missing id is wc_call_N, a repeated
    one gets _2, _3, ...
  - thinking blocks carry their signature; images are base64 JPEG, PNG,
    GIF or WebP, or an http(s) URL; documents are base64 PDF, plain text
    or a URL; a tool_result holds text, images and documents
  - a block has only the members the API declares (wc's and other
    tools' own members are left out)

OpenAI:

  - the system prompt comes first; system messages stay where they are
  - every tool_calls id is answered by a tool message before the next
    other message (the same repair as above); ids are unique and never
    empty
  - no empty assistant message: one that held only reasoning or server
    tool items is left out
  - function.arguments is a string holding a JSON object
  - content parts are of the types the role takes: tool messages carry
    text only, so the images and PDFs a tool returned follow the tool
    messages in one user message, opened by "[returned by tool call ID]"

Which blocks go to which provider (each only to the one that can replay it):

  block                          anthropic            openai
  text                           text                 text
  whitespace-only text           left out             left out
  image                          image                image_url
  document (PDF, text)           document             file part (PDF), text
  thinking with a signature      thinking             left out
  thinking without one (Codex,   left out             left out
    opencode encrypted reasoning)
  redacted_thinking              redacted_thinking    left out
  server tool blocks             kept, with their     left out
    (server_tool_use, web_       results in the
    search_tool_result, ...)     same message
  Codex items (web_search_call)  left out             left out
  --native compaction block      its summary text, or left out when
                                 encrypted
  other blocks                   their "text" as text, else left out

An image or document a provider cannot take (a file source, an unsupported media type) becomes the text "[image not sent: ...]". A final assistant message is a prefill to the Messages API, which extended thinking and newer models refuse: for anthropic wc-export refuses such a body (65) with a hint; --no-prefill leaves the message out, --prefill sends it, its trailing whitespace and thinking cut as the API asks. For openai it is sent (the model answers after it), or left out with --no-prefill. A body with no message at all is refused (65).

With --blob SHA256, wc-export prints the tool output that wc-compact --spill moved out of the transcript, exactly as it was. Of the formats only backup carries those bodies: share JSON and JSONL keep the wc-blob: pointers alone.

BACKUP. wc-ls | wc-export --format backup > FILE backs up every session, and wc-new --restore FILE puts them back, each with its id, its nodes and their seqs, its branches, checkpoint, usage, cost and times, and its blobs, so that every export of a restored session is byte for byte what it was. A backup is one JSON object a line, each with the session's "id": first the session's line {"id","backup":2,"meta"} (meta is the session's stored metadata), then one line per node as --format jsonl --tree writes them, then {"id","blob":SHA256,"data":BASE64} for each blob its messages point at; after the last session, {"backup_end":{"sessions":N,"sha256":SHA256}} closes the backup with the sha256 of every byte before it, written only once every session is whole, so that wc-new --restore refuses a backup cut short (an export that failed or was interrupted, a full disk) or changed. Backups written one after the other into a file restore as one. Share JSON (--format json) is what whycodes reads; a backup is for wc alone.

Exports read the store under a shared lock, so any number run side by side. Unlike the commands that write, wc-export prints as it reads: what it reads is on disk already. Output that stdout does not take at once (a pager nobody scrolls) waits in memory, then in an unlinked temporary file under TMPDIR, so that a slow reader never holds the lock, and other commands, back.

If an export fails midway (a damaged store, a full disk behind stdout), it exits with its error as always, and stdout holds what was written before the failure: whole documents for the sessions before, and a truncated one for the session that failed.`,
	Flags: func() []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "json", Usage: "output `FORMAT`: json, jsonl, markdown, text, info, summary, html, request or backup"},
			&cli.BoolFlag{Name: "tree", Usage: "with jsonl: every node of the tree, not only the active path"},
			&cli.StringFlag{Name: "blob", Usage: "print the tool output spilled as wc-blob:`SHA256`, byte for byte, instead of a format"},
			&cli.StringFlag{Name: "model", Usage: "with summary: the `MODEL` label (default: unknown); with request: the model to ask"},
			&cli.StringFlag{Name: "provider", Usage: "with request: the `API` to write the body for: anthropic or openai"},
			&cli.StringFlag{Name: "tools", Usage: "with request: a JSON array of tool definitions in `FILE` ({name, description, parameters} or the provider's own form)"},
			&cli.Uint64Flag{Name: "max-tokens", Usage: "with request: the reply's token limit `N` (anthropic: default 8192)"},
			&cli.Float64Flag{Name: "temperature", Usage: "with request: the sampling temperature `T`"},
			&cli.IntFlag{Name: "snippet-chars", Value: 400, Usage: "with info: the length `N` of first_assistant_snippet (whycodes' title refine uses 400)"},
			&cli.BoolFlag{Name: "prefill", Usage: "with request: send a final assistant message (anthropic: as a prefill)"},
			&cli.BoolFlag{Name: "no-prefill", Usage: "with request: leave a final assistant message out"},
			&cli.StringFlag{Name: "duration", Value: "0s", Usage: "with summary: how long the session ran, as a Go `DURATION` or seconds"},
			&cli.StringFlag{Name: "binary", Value: "whycodes", Usage: "with summary: the `NAME` in the resume hint"},
		}
	},
	Env: []command.EnvVar{{Name: "TMPDIR", Text: "Where output that stdout has not taken waits, in a file deleted as soon as it is made (default /tmp)."}},
	Examples: []command.Example{
		{Text: "Read a session as markdown:", Command: `wc-export 3f2a --format markdown | less`},
		{Text: "The user's prompts of a session:", Command: `wc-export 3f2a --format jsonl | jq -r 'select(.message.role=="user") | .message.content'`},
		{Text: "Back up every session, and restore them in another store:", Command: "wc-ls | wc-export --format backup > wc.backup\nwc-new --store ~/restored --restore wc.backup"},
		{Text: "Ask a model to continue a session:", Command: "wc-export 3f2a --format request --provider anthropic --model claude-sonnet-4-5 \\\n  | curl -s https://api.anthropic.com/v1/messages -H \"x-api-key: $ANTHROPIC_API_KEY\" \\\n      -H 'anthropic-version: 2023-06-01' -H 'content-type: application/json' -d @- \\\n  | wc-append 3f2a"},
	},
	Differences: []command.Difference{
		{Whycodes: "a session loaded from its database starts its cost and its stream-rule ledger at zero and infers title_source from the title.",
			Wc:   "keeps all three: a share carries them, the store holds them, and an import keeps what the share says. Keeping more loses nothing.",
			Test: "TestDepartureResumeRestartsCostAndStreamRules (pkg/session/share_test.go)"},
	},
	Complete: command.Completion{Values: map[string][]string{
		"format":   {"json", "jsonl", "markdown", "text", "info", "summary", "html", "request", "backup"},
		"provider": {"anthropic", "openai"},
	}},
	Action:  export,
	Streams: true,
}

func main() { command.Main(&spec) }
