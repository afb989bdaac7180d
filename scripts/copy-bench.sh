#!/bin/sh
# wc-store --copy between engines: generates SESSIONS sessions of MESSAGES
# messages (wcbench gen), copies the store directory to a store on etcd
# and that back into a new directory (and, without etcd, directory to
# directory), and prints each copy's rate: the sessions' backup bytes
# (metadata, --format jsonl --tree lines, blobs) over the wall time, and
# sessions per second. Each copy's own verification is part of its time.
# A second run of the first copy shows what a resumed copy costs when
# everything is there already (every session read from both and compared).
#
# Usage: sh scripts/copy-bench.sh [SESSIONS [MESSAGES]]
#        defaults 1000 50. etcd: the endpoints in COPY_ETCD, else
#        WC_TEST_ETCD (scripts/etcd-cluster.sh start DIR PORT writes them);
#        without either, only directory to directory.
# Run it from the module root, or with wcbench and the wc binaries in
# COPY_BIN. COPY_DIR keeps the work directory.
set -eu
sessions=${1:-1000}
messages=${2:-50}

die() { echo "copy-bench: $*" >&2; exit 1; }

if [ -n "${COPY_DIR:-}" ]; then
	dir=$COPY_DIR
	mkdir -p "$dir"
else
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
fi
if [ -n "${COPY_BIN:-}" ]; then
	PATH="$COPY_BIN:$PATH"
else
	[ -f go.mod ] || die "run from the module root, or give the binaries' directory in COPY_BIN"
	echo "copy-bench: building" >&2
	go build -tags urfave_cli_no_docs -o "$dir/bin/" ./cmd/... ./internal/bench/wcbench || die "build failed"
	PATH="$dir/bin:$PATH"
fi
endpoints=${COPY_ETCD:-${WC_TEST_ETCD:-}}

echo "copy-bench: generating $sessions sessions of $messages messages" >&2
wcbench gen -sessions "$sessions" -messages "$messages" -wc "$dir/src" >"$dir/gen.json" 2>"$dir/gen.log" ||
	{ cat "$dir/gen.log" >&2; die "wcbench gen failed"; }
echo "store              $(du -sk "$dir/src" | cut -f1) KB on disk, $sessions sessions of $messages messages"

# copy NAME SRC DST: runs the copy, checks its report, prints its rate.
copy() {
	start=$(date +%s.%N)
	status=0
	wc-store --copy "$2" "$3" >"$dir/out.jsonl" 2>"$dir/err" || status=$?
	end=$(date +%s.%N)
	[ "$status" -eq 0 ] || { cat "$dir/err" >&2; die "$1: wc-store --copy failed ($status)"; }
	report=$(tail -1 "$dir/out.jsonl")
	case $report in
	*'"ok":true'*) ;;
	*) die "$1: not ok: $report" ;;
	esac
	n=$(echo "$report" | sed 's/.*"sessions":\([0-9]*\).*/\1/')
	copied=$(echo "$report" | sed 's/.*"copied":\([0-9]*\).*/\1/')
	present=$(echo "$report" | sed 's/.*"present":\([0-9]*\).*/\1/')
	bytes=$(echo "$report" | sed 's/.*"bytes":\([0-9]*\).*/\1/')
	[ "$n" -eq "$sessions" ] || die "$1: $n sessions, want $sessions"
	awk -v name="$1" -v n="$n" -v c="$copied" -v p="$present" -v b="$bytes" -v s="$start" -v e="$end" 'BEGIN {
		t = e - s
		printf "%-18s %d sessions (%d copied, %d present), %.1f MB in %.2f s: %.1f MB/s, %.0f sessions/s\n", name, n, c, p, b / 1e6, t, b / 1e6 / t, n / t
	}'
}

# same A B: every session's wc-export --format jsonl --tree, in A and in B.
same() {
	for s in "$1" "$2"; do
		wc-ls --store "$s" --json | sed 's/^{"id":"\([^"]*\)".*/\1/' | sort >"$dir/ids"
		: >"$dir/export"
		while read -r id; do
			WC_DIRECT=1 wc-export --store "$s" --format jsonl --tree "$id" >>"$dir/export"
		done <"$dir/ids"
		cksum <"$dir/export"
	done | uniq | awk -v a="$1" -v b="$2" 'END { if (NR != 1) { print "copy-bench: " a " and " b " export differently" > "/dev/stderr"; exit 1 } }'
}

if [ -n "$endpoints" ]; then
	url="etcd://$endpoints/copy-bench-$$"
	copy "dir -> etcd" "$dir/src" "$url"
	copy "again (resume)" "$dir/src" "$url"
	copy "etcd -> dir" "$url" "$dir/back"
	wc-store --stop --store "$url" >/dev/null 2>&1 || true
	# The benchmark's keys go; the cluster stays as it was.
	ETCDCTL_API=3 etcdctl --endpoints "$endpoints" del --prefix "/copy-bench-$$/" >/dev/null 2>&1 || true
else
	echo "copy-bench: no etcd endpoints (COPY_ETCD, WC_TEST_ETCD): directory to directory only" >&2
	copy "dir -> dir" "$dir/src" "$dir/back"
	copy "again (resume)" "$dir/src" "$dir/back"
fi
same "$dir/src" "$dir/back"
echo "exports            identical: every session's --format jsonl --tree, source and copy"
printf 'load               %s\n' "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
