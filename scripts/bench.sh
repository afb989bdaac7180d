#!/bin/sh
# Performance benchmark of wc against one JSONL file per session read with
# jq (or grep) and an SQLite database queried with the sqlite3 command. It
# builds wc's programs and the benchmark (internal/bench), then runs it: the
# benchmark generates the data, times every row, wc and its peers in the
# same run, and prints one table. docs/performance.md says what each row
# means; the method and the statistics are in internal/bench.
#
# Usage: sh scripts/bench.sh [FLAGS]           the full run (15-30 minutes on 2
#                                              cores, about 2.5 GB of scratch data)
#        BENCH_QUICK=1 sh scripts/bench.sh     tiny data, a run or two of each
#        sh scripts/bench.sh measure           the fixtures' size distribution
#                                              (scripts/fixture-sizes.sh)
# FLAGS go to `wcbench run` (-sessions N, -runs N, ...; wcbench run -h).
# Run it from the module root. Needs go, jq, sqlite3 (3.38+, JSON1) and GNU
# time (/usr/bin/time). Progress goes to stderr, the table to stdout.
#
#   BENCH_DIR=(mktemp)   work directory; kept if BENCH_KEEP=1 or given
#   BENCH_REV=           build this git revision instead of the working tree
#   BENCH_ETCD=          the etcd column (issue 26): empty starts a 3-member
#                        cluster on loopback (scripts/etcd-cluster.sh, data in
#                        the work directory, stopped on exit) when etcd is
#                        installed; 0 leaves the column out; HOST:PORT,... uses
#                        that cluster (its space row then counts what others
#                        write there meanwhile)
#   BENCH_ETCD_PORT=     the started cluster's base port (default: free ports)
set -eu

die() { echo "bench.sh: $*" >&2; exit 1; }
[ "${1:-}" != measure ] || exec sh "$(dirname "$0")/fixture-sizes.sh"
[ "${1:-}" != run ] || shift
[ -f go.mod ] && grep -q '^module github.com/wctoolkit/wc' go.mod || die "run from the module root"
command -v go >/dev/null 2>&1 || die "missing: go"

if [ -n "${BENCH_DIR:-}" ]; then
	D=$BENCH_DIR
	mkdir -p "$D"
else
	D=$(mktemp -d "${TMPDIR:-/tmp}/wc-bench.XXXXXX")
	[ "${BENCH_KEEP:-0}" = 1 ] || trap 'rm -rf "$D"' EXIT
fi
D=$(cd "$D" && pwd)
B=$D/bin
mkdir -p "$B"

# BENCH_REV=REV builds that commit (git archive into the work directory)
# instead of the working tree, which others may be editing meanwhile; the
# benchmark itself comes from the working tree when REV has none.
SRC=$PWD
rev=$(git describe --always --dirty 2>/dev/null || echo unknown)
if [ -n "${BENCH_REV:-}" ]; then
	rev=$(git rev-parse --short "$BENCH_REV") || die "unknown revision $BENCH_REV"
	SRC=$D/src
	rm -rf "$SRC"
	mkdir -p "$SRC"
	git archive --format=tar "$BENCH_REV" | tar -x -C "$SRC"
	[ -d "$SRC/internal/bench" ] || { mkdir -p "$SRC/internal" && cp -R internal/bench "$SRC/internal/"; }
fi
echo "bench.sh: building the programs and the benchmark ($rev)" >&2
(cd "$SRC" && go build -tags urfave_cli_no_docs -o "$B/" ./cmd/... ./internal/bench/wcbench) || die "build failed"
# A program the Go linker has just written stays in the page cache as the
# linker's memory map left it, and each start of it took 0.35-0.45 ms more
# (interleaved against a copy, 1,000 rounds) until the kernel evicts it.
# sqlite3 and jq, installed long ago, are read from disk; so is wc once
# installed and evicted. The copies start as they do.
for f in "$B"/*; do
	cp "$f" "$f.copied" && mv "$f.copied" "$f" || die "copying $f failed"
done

# A started cluster gets etcd's largest quota (8 GiB): the default 2 GiB
# holds the data sets, but not what their history takes before the
# compaction and defragmentation the space row measures.
etcd_dir=
cluster=$PWD/scripts/etcd-cluster.sh
stop_etcd() { [ -z "$etcd_dir" ] || sh "$cluster" stop "$etcd_dir"; }
endpoints=${BENCH_ETCD:-}
if [ -z "$endpoints" ] && command -v etcd >/dev/null 2>&1; then
	etcd_dir=$D/etcd
	rm -rf "$etcd_dir"
	if [ "${BENCH_KEEP:-0}" = 1 ] || [ -n "${BENCH_DIR:-}" ]; then
		trap stop_etcd EXIT
	else
		trap 'stop_etcd; rm -rf "$D"' EXIT
	fi
	trap 'exit 130' INT TERM
	echo "bench.sh: starting a 3-member etcd cluster in $etcd_dir" >&2
	ETCD_QUOTA_BACKEND_BYTES=8589934592 sh "$cluster" start "$etcd_dir" ${BENCH_ETCD_PORT:-} ||
		die "the etcd cluster did not start (BENCH_ETCD=0 leaves the etcd column out)"
	endpoints=$(cat "$etcd_dir/endpoints")
elif [ -z "$endpoints" ]; then
	echo "bench.sh: etcd is not installed: no etcd column (apt-get install etcd-server)" >&2
fi
[ "$endpoints" != 0 ] || endpoints=

quick=
[ "${BENCH_QUICK:-0}" = 0 ] || quick=-quick
"$B/wcbench" run $quick -bin "$B" -work "$D/data" -rev "$rev" ${endpoints:+-etcd "$endpoints"} "$@"
