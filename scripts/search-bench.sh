#!/bin/sh
# Search benchmark (issue 25, item 3): wc-ls --grep and --search, answered
# from the store's word index, against grep -rlF over the same sessions as
# JSONL files, an SQL instr() over the messages and sqlite3's FTS5 on the
# same messages, in one run; the index's size against the messages' bytes;
# an append's cost with the index on. It generates the data with wcbench
# gen (the benchmark's 10,000 sessions by default), builds the FTS5 table
# and the wc index once (timed), then times each query SEARCH_RUNS times and
# prints the medians (wall, and CPU: user+sys) and the spread. Every query
# also compares the sessions each side found. docs/search.md reads the
# figures.
#
# Usage: sh scripts/search-bench.sh [-quick]   from the module root
#   SEARCH_DIR=DIR       data and scratch (kept; reused when it holds data)
#   SEARCH_BIN=DIR       wc's programs and wcbench, built already
#   SEARCH_SESSIONS=N    sessions (10000; 60 with -quick)
#   SEARCH_RUNS=N        timed runs of each (5; 2 with -quick)
# Needs sqlite3 with FTS5 and GNU time (/usr/bin/time).
set -eu

die() { echo "search-bench.sh: $*" >&2; exit 1; }
quick=0
[ "${1:-}" != -quick ] || quick=1
sessions=${SEARCH_SESSIONS:-10000}
runs=${SEARCH_RUNS:-5}
if [ $quick = 1 ]; then
	sessions=${SEARCH_SESSIONS:-60}
	runs=${SEARCH_RUNS:-2}
fi
[ -x /usr/bin/time ] || die "missing: GNU time (/usr/bin/time)"
command -v sqlite3 >/dev/null 2>&1 || die "missing: sqlite3"

D=${SEARCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/wc-search.XXXXXX")}
mkdir -p "$D"
D=$(cd "$D" && pwd)
if [ -n "${SEARCH_BIN:-}" ]; then
	B=$(cd "$SEARCH_BIN" && pwd)
else
	B=$D/bin
	mkdir -p "$B"
	go build -tags urfave_cli_no_docs -o "$B/" ./cmd/... ./internal/bench/wcbench
fi
mkdir -p "$D/home" "$D/tmp"
export HOME="$D/home" TMPDIR="$D/tmp" WC_STORE="$D/wc"
unset WC_DIRECT WC_RESIDENT || true
log() { echo "search-bench: $*" >&2; }

if [ ! -s "$D/gen.json" ]; then
	log "generating $sessions sessions"
	rm -rf "$D/wc" "$D/jsonl" "$D/db.sqlite"
	"$B/wcbench" gen -sessions "$sessions" -wc "$D/wc" -jsonl "$D/jsonl" -sqlite "$D/db.sqlite" >"$D/gen.json"
fi
json_bytes=$(sed 's/.*"json_bytes":\([0-9]*\).*/\1/' "$D/gen.json")

# t NAME CMD...: runs CMD $runs times under GNU time; keeps the medians of
# wall (date, in microseconds) and CPU seconds (GNU time, in hundredths),
# and the wall's least and most, in $D/t.NAME; prints nothing.
t() {
	name=$1
	shift
	: >"$D/t.$name.runs"
	i=0
	while [ $i -lt "$runs" ]; do
		start=$(date +%s%N)
		/usr/bin/time -f "%U %S" -o "$D/t.out" "$@" >"$D/out.$name" 2>"$D/err.$name" || {
			[ $? = 1 ] && [ ! -s "$D/err.$name" ] || { cat "$D/err.$name" >&2; die "$name failed"; }
		}
		end=$(date +%s%N)
		echo "$(((end - start) / 1000)) $(tail -n 1 "$D/t.out")" | awk '{print $1 / 1e6, $2, $3}' >>"$D/t.$name.runs"
		i=$((i + 1))
	done
	awk '{print $1, $2 + $3}' "$D/t.$name.runs" | sort -n | awk -v n="$runs" '
		{ w[NR] = $1; c[NR] = $2 }
		END { m = int((n + 1) / 2); printf "%.3f %.3f %.3f %.3f\n", w[m], c[m], w[1], w[n] }' >"$D/t.$name"
}
wall() { cut -d' ' -f1 "$D/t.$1"; }
cpu() { cut -d' ' -f2 "$D/t.$1"; }
spread() { awk '{printf "%.3f–%.3f", $3, $4}' "$D/t.$1"; }
ms() { awk -v s="$1" 'BEGIN { printf "%.1f ms", s * 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.1f×", b / a; else print "-" }'; }
row() { # row OPERATION WC PEER PEERNAME
	printf '| %s | %s (cpu %s; %s s) | %s: %s (cpu %s) | %s |\n' "$1" "$(ms "$(wall "$2")")" "$(ms "$(cpu "$2")")" \
		"$(spread "$2")" "$4" "$(ms "$(wall "$3")")" "$(ms "$(cpu "$3")")" "$(ratio "$(wall "$2")" "$(wall "$3")")"
}
ids() { # ids FILE KIND: the session ids a command printed, sorted
	case $2 in
	wc) sed 's/^{"id":"\([^"]*\)".*/\1/' "$1" ;;
	grep) sed 's#.*/##; s#\.jsonl$##' "$1" ;;
	sql) cat "$1" ;;
	esac | sort -u
}
same() { # same NAME A KINDA B KINDB
	ids "$D/out.$2" "$3" >"$D/ids.a"
	ids "$D/out.$4" "$5" >"$D/ids.b"
	if cmp -s "$D/ids.a" "$D/ids.b"; then
		echo "- $1: identical ($(wc -l <"$D/ids.a") sessions)"
	else
		echo "- $1: DIFFERENT ($2 $(wc -l <"$D/ids.a"), $4 $(wc -l <"$D/ids.b"))"
	fi >>"$D/checks"
}

if [ "$(sqlite3 "$D/db.sqlite" "SELECT count(*) FROM sqlite_master WHERE name = 'fts'")" = 0 ]; then
	log "building the FTS5 table"
	runs_saved=$runs
	runs=1
	t fts.build sqlite3 "$D/db.sqlite" "CREATE VIRTUAL TABLE fts USING fts5(session_id UNINDEXED, body); INSERT INTO fts SELECT session_id, json FROM messages;"
	runs=$runs_saved
	cp "$D/t.fts.build" "$D/fts.build"
fi

# The first query of a writer (the resident process) builds the index of
# a store written before it.
"$B/wc-store" --stop >/dev/null 2>&1 || true
export WC_RESIDENT_IDLE=10m
built=$(sh -c '"$1/wc-store" --check | sed "s/.*\"index\":{\"built\":\([a-z]*\).*/\1/"' sh "$B" 2>/dev/null || echo false)
if [ "$built" != true ]; then
	log "building the wc index (the first --grep builds it)"
	runs_saved=$runs
	runs=1
	t wc.build "$B/wc-ls" --grep zzzzzz -n 1
	runs=$runs_saved
	cp "$D/t.wc.build" "$D/wc.build"
fi
: >"$D/checks"
: >"$D/rows"

for q in "login test" "parseConfig" "flaky rollback" ":= "; do
	log "grep $q"
	"$B/wc-ls" --grep "$q" -n 1 >/dev/null # the resident process, started
	t grep.wc "$B/wc-ls" -n 0 --grep "$q"
	t grep.direct env WC_DIRECT=1 "$B/wc-ls" -n 0 --grep "$q"
	t grep.grep grep -rlF -- "$q" "$D/jsonl/sessions"
	t grep.sql sqlite3 "$D/db.sqlite" "SELECT DISTINCT session_id FROM messages WHERE instr(json, '$q');"
	row "wc-ls --grep \"$q\" (resident)" grep.wc grep.grep "grep -rlF" >>"$D/rows"
	row "wc-ls --grep \"$q\" (direct)" grep.direct grep.grep "grep -rlF" >>"$D/rows"
	row "wc-ls --grep \"$q\" (resident)" grep.wc grep.sql "sqlite3 instr" >>"$D/rows"
	same "--grep \"$q\" vs grep -rlF" grep.wc wc grep.grep grep
	same "--grep \"$q\" vs sqlite3 instr" grep.wc wc grep.sql sql
done

for q in '"login test"' 'flaky rollback' 'pars*'; do
	log "search $q"
	t search.wc "$B/wc-ls" -n 0 --search "$q"
	t search.direct env WC_DIRECT=1 "$B/wc-ls" -n 0 --search "$q"
	t search.fts sqlite3 "$D/db.sqlite" "SELECT DISTINCT session_id FROM fts WHERE fts MATCH '$q';"
	t search20.wc "$B/wc-ls" -n 20 --search "$q"
	t search20.fts sqlite3 "$D/db.sqlite" "SELECT session_id, snippet(fts, 1, '', '', '…', 12) FROM fts WHERE fts MATCH '$q' ORDER BY rank LIMIT 20;"
	row "wc-ls --search '$q', all (resident)" search.wc search.fts "FTS5 MATCH" >>"$D/rows"
	row "wc-ls --search '$q', all (direct)" search.direct search.fts "FTS5 MATCH" >>"$D/rows"
	row "wc-ls --search '$q' -n 20, ranked + snippet (resident)" search20.wc search20.fts "FTS5 top 20 messages by bm25 + snippet" >>"$D/rows"
	same "--search '$q' vs FTS5 MATCH" search.wc wc search.fts sql
done

log "append"
id=$(sed 's/.*"first_id":"\([^"]*\)".*/\1/' "$D/gen.json")
t append.wc "$B/wc-append" "$id" --role user --text "the login test failed again after the rollback"
t append.direct env WC_DIRECT=1 "$B/wc-append" "$id" --role user --text "the login test failed again after the rollback"
t append.sql sqlite3 "$D/db.sqlite" "INSERT INTO messages(session_id, seq, json) SELECT session_id, max(seq) + 1, '{\"role\":\"user\",\"content\":\"the login test failed\"}' FROM messages WHERE session_id = '$id';"
row "wc-append, index on (resident)" append.wc append.sql "sqlite3 insert" >>"$D/rows"
row "wc-append, index on (direct)" append.direct append.sql "sqlite3 insert" >>"$D/rows"

"$B/wc-store" --stop >/dev/null 2>&1 || true
"$B/wc-store" --check >"$D/check.json" || true
index_bytes=$(sed 's/.*"index":{[^}]*"bytes":\([0-9]*\).*/\1/' "$D/check.json")
pending=$(sed 's/.*"pending_commits":\([0-9]*\).*/\1/' "$D/check.json")
# FTS5's index without its copy of the messages (fts_content).
fts_bytes=$(sqlite3 "$D/db.sqlite" "SELECT sum(pgsize) FROM dbstat WHERE name IN ('fts_data', 'fts_idx', 'fts_docsize', 'fts_config');" 2>/dev/null || echo 0)

echo "| operation | wc (median; cpu; spread) | peer (median; cpu) | peer / wc |"
echo "|---|---|---|---|"
cat "$D/rows"
echo
echo "$sessions sessions, $json_bytes bytes of messages as JSON; $runs runs of each; load $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v i="$index_bytes" -v j="$json_bytes" -v f="${fts_bytes:-0}" -v p="$pending" 'BEGIN {
	printf "index: %d bytes, %.1f%% of the messages (FTS5: %d bytes, %.1f%%); %d commits pending\n", i, 100 * i / j, f, 100 * f / j, p }'
if [ -f "$D/wc.build" ]; then
	awk -v j="$json_bytes" '{ printf "index build (the first --grep): %.1f s, %.1f MB/s of messages\n", $1, j / $1 / 1e6 }' "$D/wc.build"
fi
if [ -f "$D/fts.build" ]; then
	awk -v j="$json_bytes" '{ printf "FTS5 build: %.1f s, %.1f MB/s\n", $1, j / $1 / 1e6 }' "$D/fts.build"
fi
echo
cat "$D/checks"
