#!/bin/sh
# Runs every fuzz target for a while each: scripts/fuzz.sh [DURATION] (default 1m).
set -eu
cd "$(dirname "$0")/.."
time=${1:-1m}
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
		echo "fuzz $pkg $target ($time)"
		if ! out=$(go test "$pkg" -run '^$' -fuzz "^$target\$" -fuzztime "$time" 2>&1); then
			# On a loaded machine the fuzzing engine itself can time out
			# stopping its workers ("context deadline exceeded", no input
			# found failing); that run says nothing of our code: run again.
			case $out in
			*"Failing input written"*) ;;
			*"context deadline exceeded"*)
				echo "fuzz engine timed out stopping its workers; running $target again"
				out=$(go test "$pkg" -run '^$' -fuzz "^$target\$" -fuzztime "$time" 2>&1) && continue ;;
			esac
			echo "$out"
			exit 1
		fi
	done
done
