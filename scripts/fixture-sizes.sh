#!/bin/sh
# The size distribution of the fixtures' messages, by role, that the
# benchmark's generator (internal/bench/gen) draws from: one [role, content
# bytes] row per message as wc would store it, then quantiles. Usage:
# sh scripts/fixture-sizes.sh (from the module root; FIXTURES=DIR for
# others). Needs jq.
set -eu
die() { echo "fixture-sizes.sh: $*" >&2; exit 1; }
fixtures=${FIXTURES:-testdata/fixtures}
command -v jq >/dev/null || die "missing: jq"
prog=$(mktemp)
trap 'rm -f "$prog"' EXIT
# One [role, content bytes] row per message as wc would store it: Claude
# Code lines of one response merge, each tool_result is a tool message;
# codex reasoning, text and calls of a step form one assistant message;
# opencode tool parts are tool messages. A redacted body counts its len=N.
cat >"$prog" <<'EOF'
def blen: if type == "string" then ((capture("^\\[REDACTED_[A-Z]+ len=(?<n>[0-9]+) sha=[0-9a-f]+\\]$") | .n | tonumber) // utf8bytelength) else utf8bytelength end;
def tlen: if type == "string" then blen elif type == "array" then map(if type == "object" then (.text // "" | tostring | blen) elif type == "string" then blen else 0 end) | add // 0 else (tojson | blen) end;
def cc:
  [.[] | select(type == "object" and (.type == "user" or .type == "assistant") and (.message | type) == "object")] as $r
  | ($r[] | select(.type == "user") | .message.content
      | if type == "string" then ["user", blen]
        elif type == "array" then
          (.[] | select(type == "object" and .type == "tool_result") | ["tool", (.content | tlen)]),
          ([.[] | select(type == "object" and .type != "tool_result") | (.text // "" | blen)] | select(length > 0) | ["user", add])
        else empty end),
    ([$r[] | select(.type == "assistant")] | group_by(.message.id // .uuid)[]
      | ["assistant", ([.[].message.content | if type == "array" then .[] else {text: .} end
          | (.text // .thinking // "" | tostring | blen) + (if .input then (.input | tojson | blen) else 0 end)] | add // 0)]);
def codex:
  reduce (.[] | select(.type == "response_item") | .payload) as $p ({out: [], cur: null};
    if $p.type == "function_call_output" then
      (if .cur then .out += [["assistant", .cur]] | .cur = null else . end) | .out += [["tool", ($p.output | tlen)]]
    elif $p.type == "message" and $p.role == "user" then
      (if .cur then .out += [["assistant", .cur]] | .cur = null else . end) | .out += [["user", ($p.content | tlen)]]
    elif $p.type == "message" and $p.role == "developer" then .out += [["system", ($p.content | tlen)]]
    else .cur = (.cur // 0) + (if $p.type == "message" then ($p.content | tlen)
      elif $p.type == "function_call" then ($p.arguments | tostring | blen)
      elif $p.type == "reasoning" then ($p.summary | tojson | blen) else 0 end)
    end) | (if .cur then .out + [["assistant", .cur]] else .out end) | .[];
def opencode:
  .[0].messages[]
  | if .info.role == "user" then ["user", ([.parts[] | select(.type == "text") | .text | blen] | add // 0)]
    else ["assistant", ([.parts[] | if .type == "text" or .type == "reasoning" then (.text | blen)
          elif .type == "tool" then (.state.input | tojson | blen) else 0 end] | add // 0)],
      (.parts[] | select(.type == "tool") | ["tool", (.state.output // "" | tostring | blen)])
    end;
(if $fmt == "cc" then cc elif $fmt == "codex" then codex else opencode end) | [$file] + . | @tsv
EOF
rows=$(mktemp)
trap 'rm -f "$prog" "$rows"' EXIT
for f in "$fixtures"/claude-code/*.jsonl; do jq -r -s --arg fmt cc --arg file "$f" -f "$prog" "$f"; done >"$rows"
for f in "$fixtures"/codex/*.jsonl; do jq -r -s --arg fmt codex --arg file "$f" -f "$prog" "$f"; done >>"$rows"
for f in "$fixtures"/opencode/*.json; do jq -r -s --arg fmt oc --arg file "$f" -f "$prog" "$f"; done >>"$rows"
echo "role       messages  share  p10  p25  p50   p75   p90    p95    p99    max  mean"
for role in tool assistant user system; do
	awk -F'\t' -v r="$role" '$2 == r { print $3 }' "$rows" | sort -n | awk -v r="$role" -v total="$(wc -l <"$rows")" '
		{ a[NR] = $1; s += $1 }
		END { printf "%-10s %8d  %4.0f%% %4d %4d %4d %5d %5d %6d %6d %6d %5.0f\n", r, NR, 100 * NR / total,
			a[int(NR * .1) + 1], a[int(NR * .25) + 1], a[int(NR * .5) + 1], a[int(NR * .75) + 1],
			a[int(NR * .9) + 1], a[int(NR * .95) + 1], a[int(NR * .99) + 1], a[NR], s / NR }'
done
echo "per session (messages, tool share):"
awk -F'\t' '{ n[$1]++; if ($2 == "tool") t[$1]++ } END { for (f in n) printf "  %-50s %4d %3.0f%%\n", f, n[f], 100 * t[f] / n[f] }' "$rows" | sort
