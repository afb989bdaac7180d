#!/bin/sh
# Runs the canonical pipeline N times in a row, then P at once (ROUNDS times),
# and checks what every run printed. Lock trouble would show as a failure or
# a line on stderr. Usage: pipeline-check.sh [N] [P] [ROUNDS]
set -eu
n=${1:-20}
p=${2:-4}
rounds=${3:-3}

run() {
	out=$(wc-new --system "You are terse." \
		| wc-append --role user --text "question $1" \
		| wc-append --role assistant --text "answer $1" \
		| wc-export --format markdown)
	case $out in
	*"### User"*"question $1"*"### Assistant"*"answer $1"*) ;;
	*)
		echo "pipeline $1 printed the wrong document" >&2
		return 1
		;;
	esac
}

i=0
while [ "$i" -lt "$n" ]; do
	run "seq-$i"
	i=$((i + 1))
done

r=0
while [ "$r" -lt "$rounds" ]; do
	pids=""
	i=0
	while [ "$i" -lt "$p" ]; do
		run "par-$r-$i" &
		pids="$pids $!"
		i=$((i + 1))
	done
	for pid in $pids; do
		wait "$pid" || { echo "a parallel pipeline failed" >&2; exit 1; }
	done
	r=$((r + 1))
done
echo "ok: $n pipelines in a row, $rounds rounds of $p at once"
