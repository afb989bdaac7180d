#!/bin/sh
# Batch re-compaction of a whole store: generates SESSIONS sessions of
# MESSAGES messages each (tool outputs drawn from the fixtures' sizes, up to
# 32 KB), runs `wc-compact --all --max-tokens TOKENS` once over it, and
# prints the throughput (the store's message JSON over the wall time), the
# peak RSS, and the resident set's largest anonymous and file-backed parts
# (sampled from /proc every 0.2 s). Then it times one wc-append on the
# result, which shows whether the batch left merge work to the next command.
#
# Usage: sh scripts/batch-bench.sh [SESSIONS [MESSAGES [TOKENS]]]
#        defaults 1000 500 100000: a 1.1 GB store, 1-3 minutes on 2 cores.
# Run it from the module root, or with wcbench and the wc binaries on PATH.
# Needs GNU time (/usr/bin/time). BATCH_DIR keeps the work directory.
set -eu
sessions=${1:-1000}
messages=${2:-500}
tokens=${3:-100000}

die() { echo "batch-bench: $*" >&2; exit 1; }
[ -x /usr/bin/time ] || die "needs GNU time at /usr/bin/time"

if [ -n "${BATCH_DIR:-}" ]; then
	dir=$BATCH_DIR
	mkdir -p "$dir"
else
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
fi
if ! command -v wcbench >/dev/null 2>&1 || ! command -v wc-compact >/dev/null 2>&1; then
	[ -f go.mod ] || die "run from the module root, or put wcbench and the wc binaries on PATH"
	echo "batch-bench: building" >&2
	go build -tags urfave_cli_no_docs -o "$dir/bin/" ./cmd/... ./internal/bench/wcbench || die "build failed"
	PATH="$dir/bin:$PATH"
fi
# The batch opens the store itself whatever the mode; the append after it
# measures a command opening the store, as a cron job's next command would.
WC_DIRECT=1
export WC_DIRECT

echo "batch-bench: generating $sessions sessions of $messages messages" >&2
wcbench gen -sessions "$sessions" -messages "$messages" -wc "$dir/store" >"$dir/gen.json" 2>"$dir/gen.log" ||
	{ cat "$dir/gen.log" >&2; die "wcbench gen failed"; }
json_bytes=$(sed 's/.*"json_bytes":\([0-9]*\).*/\1/' "$dir/gen.json")
id=$(sed 's/.*"first_id":"\([^"]*\)".*/\1/' "$dir/gen.json")
store_before=$(du -sk "$dir/store" | cut -f1)

echo "batch-bench: compacting" >&2
/usr/bin/time -f '%e %M' -o "$dir/time" \
	wc-compact --store "$dir/store" --all --max-tokens "$tokens" >"$dir/out.jsonl" 2>"$dir/err" &
job=$!
anon=0
file=0
# The timed process is time's child; sample it until it exits.
while kill -0 "$job" 2>/dev/null; do
	for pid in $(pgrep -P "$job" 2>/dev/null); do
		set -- $(awk '/^RssAnon|^RssFile/ {print $2}' "/proc/$pid/status" 2>/dev/null) 0 0
		[ "$1" -gt "$anon" ] && anon=$1
		[ "$2" -gt "$file" ] && file=$2
	done
	sleep 0.2
done
status=0
wait "$job" || status=$?
[ "$status" -eq 0 ] || { cat "$dir/err" >&2; die "wc-compact failed ($status)"; }
read -r secs maxrss <"$dir/time"
[ -s "$dir/err" ] && { echo "batch-bench: wc-compact wrote to stderr:" >&2; cat "$dir/err" >&2; }
lines=$(wc -l <"$dir/out.jsonl")
changed=$(grep -c '"changed":true' "$dir/out.jsonl" || true)
store_after=$(du -sk "$dir/store" | cut -f1)

/usr/bin/time -f '%e %M' -o "$dir/time" wc-append --store "$dir/store" "$id" --role user --text "after the batch" >/dev/null
read -r append_secs append_rss <"$dir/time"

awk -v s="$sessions" -v m="$messages" -v b="$json_bytes" -v t="$secs" -v rss="$maxrss" \
	-v anon="$anon" -v file="$file" -v lines="$lines" -v changed="$changed" \
	-v before="$store_before" -v after="$store_after" -v as="$append_secs" -v arss="$append_rss" \
	-v load="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)" 'BEGIN {
	printf "sessions           %d x %d messages, %.0f MB of message JSON\n", s, m, b / 1e6
	printf "store              %.0f MB before, %.0f MB after (the old paths stay as branches)\n", before / 1024, after / 1024
	printf "compacted          %d sessions, %d changed\n", lines, changed
	printf "wall time          %.1f s\n", t
	printf "throughput         %.1f MB/s\n", b / 1e6 / t
	printf "peak RSS           %.0f MiB (largest anonymous %.0f MiB, file-backed %.0f MiB)\n", rss / 1024, anon / 1024, file / 1024
	printf "next wc-append     %.3f s, %.0f MiB\n", as, arss / 1024
	printf "load average       %s\n", load
}'
