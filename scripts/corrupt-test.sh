#!/bin/sh
# Runs the corruption suite for N trials (default 400) and prints a summary:
# a store of several sessions (tables, a value log, a branch, a spilled
# blob) is copied N times, and each copy damaged in one file (a table, a
# value log, the MANIFEST, the key registry, in turn): a byte changed at a
# seeded offset, the file cut short, or the file removed. After each
# damage, every reader (wc-ls, wc-export of every session) must print
# exactly what it printed from the undamaged store or fail with status 74
# and one error line, never a Go trace; wc-store --check must report the
# damage; and wc-store --salvage must copy only sessions that export byte
# for byte as before. The checks are
# cmd/internal/reliability/corrupt_test.go; CI runs a short version.
#
# Usage: scripts/corrupt-test.sh [N]
#   WC_CORRUPT_SEED=S   repeat the trials of an earlier run
set -eu
cd "$(dirname "$0")/.."
n=${1:-400}
case $n in
'' | *[!0-9]*)
	echo "usage: $0 [TRIALS]" >&2
	exit 2
	;;
esac
log=$(mktemp)
trap 'rm -f "$log"' EXIT INT TERM
echo "corruption test: $n trials"
status=0
WC_CORRUPT_TRIALS=$n go test ./cmd/internal/reliability/ -run '^TestCorruption$' -count=1 -v -timeout 0 >"$log" 2>&1 || status=$?
grep -v -e '^=== ' -e '^PASS$' -e '^ok ' -e '^FAIL$' "$log" | sed 's/^    [a-z_]*_test\.go:[0-9]*: //'
if [ "$status" -ne 0 ]; then
	echo "corruption test: FAILED"
	exit 1
fi
echo "corruption test: passed"
