#!/bin/sh
# Runs N separate wc-append processes (default 2000) round-robin over S
# sessions (default 10) in a fresh store and prints the store's table count
# and the wall time of the first and last 100 appends. Needs GNU date.
# Usage: growth.sh [N] [S]
set -eu
n=${1:-2000}
s=${2:-10}
WC_STORE=$(mktemp -d)/store
# Commands that open the store themselves, each leaving a table behind, are
# the case this measures; a resident process writes one table in all.
WC_DIRECT=1
export WC_STORE WC_DIRECT
trap 'rm -rf "$(dirname "$WC_STORE")"' EXIT

ids=""
i=0
while [ "$i" -lt "$s" ]; do
	ids="$ids $(wc-new --title "growth $i" | sed 's/.*"id":"\([^"]*\)".*/\1/')"
	i=$((i + 1))
done
set -- $ids

now() { date +%s%N; }
first=0
last=0
i=0
while [ "$i" -lt "$n" ]; do
	id=$(eval echo "\${$((i % s + 1))}")
	t0=$(now)
	wc-append "$id" --role user --text "message $i: the quick brown fox jumps over the lazy dog" >/dev/null
	t1=$(now)
	[ "$i" -lt 100 ] && first=$((first + t1 - t0))
	[ "$i" -ge $((n - 100)) ] && last=$((last + t1 - t0))
	i=$((i + 1))
done

tables=$(ls "$WC_STORE/db" | grep -c '\.sst$' || true)
echo "appends:          $n over $s sessions"
echo "sst tables:       $tables"
echo "first 100 wall:   $((first / 1000000)) ms"
echo "last 100 wall:    $((last / 1000000)) ms"
awk -v a="$first" -v b="$last" 'BEGIN { printf "last/first:       %.2f\n", b / a }'
