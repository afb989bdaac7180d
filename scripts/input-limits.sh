#!/bin/sh
# Gives every kind of input past its limit to the command that reads it,
# and prints for each the exit status, the command's peak RSS (GNU time's
# maximum resident set) and its error line. The limits (cmd/internal/command,
# the man pages' INPUT): 32 MiB for one text or value that becomes a message
# or a member (raw text on stdin, --file, --summary, --report, --native,
# --tools, --system @FILE), 1024 MiB for a stream (messages, sessions,
# references on stdin, an imported file), 256 bytes for a reference alone
# on its line. Each input is refused at its limit (status 65, or 2 for a
# reference) with its size as given, holding at most the limit in memory:
# a 1 GiB stream of raw text costs a 32 MiB message's memory, not the
# gigabyte. With --full it also sends a stream past 1024 MiB (the command
# then holds about a gigabyte).
#
# Usage: scripts/input-limits.sh [--full]   (the wc commands on PATH)
set -eu
full=${1:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT INT TERM
export WC_STORE="$dir/store" WC_DIRECT=1
id=$(wc-new --title limits | sed 's/.*"id":"\([^"]*\)".*/\1/')
head -c 40M /dev/zero | tr '\0' a >"$dir/big.txt"
printf '{"type":"native","data":"%s"}' "$(head -c 40M /dev/zero | tr '\0' a)" >"$dir/big.json"
cd "$dir"

# run LABEL COMMAND: runs COMMAND (a shell command line) and prints its
# figures; its stdout must stay empty.
run() {
	status=0
	/usr/bin/time -f '%M' -o rss sh -c "$2" >out 2>err || status=$?
	rss=$(tail -n 1 rss)
	[ -s out ] && echo "$1: wrote to stdout" >&2
	printf '%-34s status %-3s peak RSS %5d MiB  %s\n' "$1" "$status" $((rss / 1024)) "$(grep -v '^Command exited' err | head -n 1)"
}

run "raw text, 1 GiB on a pipe" "head -c 1G /dev/zero | wc-append $id --role user"
run "raw text, a 40 MiB file" "wc-append $id --role user < big.txt"
run "--file, 40 MiB" "wc-append $id --file big.txt"
run "--system @FILE, 40 MiB" "wc-new --system @big.txt"
run "--summary, 40 MiB" "wc-compact $id --summary big.txt"
run "--native, 40 MiB" "wc-compact $id --native big.json"
run "--report, 40 MiB" "wc-branch $id rewind --report big.txt"
run "--tools, 40 MiB" "wc-export $id --format request --provider anthropic --model m --tools big.txt"
run "a 1 GiB reference line" "head -c 1G /dev/zero | tr '\\0' a | wc-export"
run "a 40 MiB message in a stream" "{ printf '{\"role\":\"user\",\"content\":\"'; cat big.txt; printf '\"}\\n'; } | wc-append $id"
if [ "$full" = --full ]; then
	run "messages, 1100 MiB on a pipe" "yes '{\"role\":\"user\",\"content\":\"x\"}' | head -c 1100M | wc-append $id"
fi
