#!/bin/sh
# import-bench.sh [N]: how fast wc-new imports, beside jq reading the same
# files (jq -c . parses every JSON value and prints it; wc-new detects the
# format, converts and stores). First the largest fixture of each format,
# one wc-new per file, then one wc-new on a directory of N files (copies of
# the fixtures, imported with --again so that every copy is stored).
# Prints MB/s; needs wc-new and jq on PATH. Each store is a fresh
# temporary one.
set -eu
n=${1:-1000}
fixtures=$(cd "$(dirname "$0")/../testdata/fixtures" && pwd)
work=$(mktemp -d)
trap 'wc-store --store "$work/store" --stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
export WC_STORE="$work/store"

now() { date +%s%N; }
rate() { # bytes nanoseconds
	awk -v b="$1" -v ns="$2" 'BEGIN { if (ns <= 0) ns = 1; printf "%.1f", b / 1e6 / (ns / 1e9) }'
}
size() { cat "$@" | wc -c | tr -d ' '; }

printf '%-44s %10s %10s %10s\n' 'input' 'bytes' 'wc-new' 'jq'
for dir in "$fixtures"/*/; do
	[ "$(basename "$dir")" != sqlite ] || continue # databases: jq cannot read them
	f=$(ls -S "$dir" | grep -v '\.md$' | while read -r x; do [ -f "$dir$x" ] && echo "$dir$x" && break; done)
	[ -n "$f" ] || continue
	b=$(size "$f")
	t0=$(now); wc-new --again "$f" >/dev/null; t1=$(now)
	jq -c . "$f" >/dev/null; t2=$(now)
	printf '%-44s %10s %7s MB/s %5s MB/s\n' "${f#"$fixtures"/}" "$b" "$(rate "$b" $((t1 - t0)))" "$(rate "$b" $((t2 - t1)))"
done

mkdir "$work/tree"
set -- $(find "$fixtures" -maxdepth 2 -type f ! -name '*.md' ! -path '*/sqlite/*' | sort)
i=0
while [ "$i" -lt "$n" ]; do
	for f; do
		[ "$i" -lt "$n" ] || break
		ext=${f##*.}
		cp "$f" "$work/tree/$i.$ext"
		i=$((i + 1))
	done
done
b=$(size "$work"/tree/*)
t0=$(now); wc-new --again "$work/tree" >/dev/null; t1=$(now)
jq -c . "$work"/tree/* >/dev/null; t2=$(now)
printf '%-44s %10s %7s MB/s %5s MB/s\n' "directory of $n files" "$b" "$(rate "$b" $((t1 - t0)))" "$(rate "$b" $((t2 - t1)))"
printf 'sessions stored: %s\n' "$(wc-ls --json | wc -l | tr -d ' ')"
