#!/bin/sh
# Re-compacts stored sessions under a token budget; meant for cron:
#
#   0 3 * * * WC_STORE=$HOME/.local/share/wc /path/to/recompact.sh --project $HOME/src/app 100000 >>$HOME/wc-recompact.log 2>&1
#
# Old tool output is spilled into the store and old turns are summarised.
# Nothing is lost: each compacted session keeps its previous path as a
# branch pre-compact-N. Prints one JSON line per session, then a summary.
# Usage: recompact.sh [--project DIR] [MAX_TOKENS]
set -eu
project=
if [ "${1:-}" = --project ]; then
	project=$2
	shift 2
fi
max=${1:-100000}

status=0
if [ -n "$project" ]; then
	out=$(wc-ls --project "$project" | wc-compact --max-tokens "$max" --spill --lock-timeout 5m) || status=$?
else
	out=$(wc-compact --all --max-tokens "$max" --spill --lock-timeout 5m) || status=$?
fi
[ -n "$out" ] && printf '%s\n' "$out"
total=$(printf '%s' "$out" | grep -c '"id"' || true)
changed=$(printf '%s' "$out" | grep -c '"changed":true' || true)
failed=$(printf '%s' "$out" | grep -c '"error"' || true)
echo "recompact: $total sessions, $changed compacted, $failed failed (budget $max tokens)" >&2
exit "$status"
