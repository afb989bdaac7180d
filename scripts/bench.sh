#!/bin/sh
# Performance benchmark of wc against the ways sessions are kept today: one
# JSONL file per session read with jq, and an SQLite database queried with
# the sqlite3 command and its JSON1 functions. Prints one table: for each
# operation the median wall time (or MB/s) of wc, jq and sqlite3 measured in
# the same run, how many times faster wc is, and the peak RSS of each.
#
# Usage: sh scripts/bench.sh            the full run (5-10 minutes on 2 cores,
#                                       about 2.5 GB of scratch data)
#        BENCH_QUICK=1 sh scripts/bench.sh   smaller data, under 1 minute
#        sh scripts/bench.sh measure    re-derive the size distribution below
# Run it from the module root. Needs go, jq, sqlite3 (3.38+, JSON1), GNU
# time (/usr/bin/time) and, preferably, hyperfine; says what is missing.
# Progress goes to stderr, the table to stdout.
#
# Environment (full / quick defaults):
#   BENCH_SESSIONS=10000/1000    sessions of the listing and append store
#   BENCH_BIG_MESSAGES=20000/2000  messages of the long session (appends, export)
#   BENCH_COMPACT_SESSIONS=1000/100  sessions of the compaction batch
#   BENCH_MAX_TOKENS=100000      wc-compact --max-tokens
#   BENCH_RUNS=30/10             timed runs of the other fast operations
#   BENCH_TURN_RUNS=150/20       timed runs of those a target compares
#   BENCH_TURN_ROUNDS=15/4       turns they take (see "Times" below)
#   BENCH_SLOW_RUNS=3/3          timed runs of export and compaction
#   BENCH_WARMUP=3/2             untimed runs before the fast operations
#   BENCH_RSS_RUNS=10/8          extra runs of the fast operations under GNU time
#   BENCH_SQLITE_SYNC=NORMAL     PRAGMA synchronous of the sqlite3 writers
#   BENCH_SEED=1                 benchgen's seed
#   BENCH_DIR=(mktemp)           work directory; kept if BENCH_KEEP=1 or given
#   BENCH_NO_HYPERFINE=1         time with a shell loop even if hyperfine exists
#   BENCH_REV=                   build this git revision instead of the working tree
#
# The data (scripts/benchgen) is synthetic but shaped after the fixtures in
# testdata/fixtures (11 sessions in three formats, 306 messages once
# converted to wc's messages; `sh scripts/bench.sh measure` recomputes this):
#
#   role       share  content bytes: p10  p25  p50   p75   p90    p95    p99    max
#   tool        60%                   93  365  727  3376  7894  13730  32254  75079
#   assistant   24%                  154  272  556   801  1063   2672  15997  15997
#   user        12%                   35   86  136  1183  5296   6970   8675   8675
#   system       4%                  806 3638 3696  6684  6684   6684   6684   6684
#
#   - Tool messages are 60% of the messages but 34% of a session on average
#     (median 33%; one codex rollout holds 118 of the 184). benchgen aims
#     between: 40% tool, 40% assistant, 19% user, 2% system.
#   - Tool output is drawn up to 32,768 characters (wc's cap; one fixture
#     output of 75 KB would be capped).
#   - Messages per session: 5 5 6 9 11 11 17 18 25 46 153 (mean 28), each
#     drawn and scaled by 0.8-1.25. Mean message: 2.2 KB of JSON, so 10,000
#     sessions hold about 640 MB and 20,000 messages about 45 MB.
#   - Sessions spread over 20 projects (Zipf); the --project filter picks
#     one holding about 5% of them. Times are whole seconds over 90 days.
#
# wc runs in three modes, each measured in the same run: by default its
# commands go through a resident store process that keeps the store open
# ("wc": started by the warmup, reused by the timed runs); "cold" stops it
# before every run, so each run starts one; "direct" sets WC_DIRECT=1, every
# command opening the store itself. The resident process's own peak RSS is
# reported too ("RSS res"; each operation starts a fresh one).
#
# What each contender does (the same data in each; outputs are compared):
#   append   wc-append ID --role user --text T, one process;
#            jsonl: sh running printf '%s\n' LINE >> ID.jsonl (no metadata
#            file is updated); sqlite3: one process running one INSERT whose
#            seq is max(seq)+1 of the session, with PRAGMA synchronous as
#            BENCH_SQLITE_SYNC (WAL; NORMAL does not fsync a commit). wc
#            syncs before it prints, in every mode (the resident process
#            syncs each commit; a direct command syncs what it flushes on
#            close), so the sqlite3 INSERT with synchronous=FULL, which
#            fsyncs its commit, is measured too and shown below the table.
#            Three stores: one session of 10 messages alone; the same kind
#            of session in a store of BENCH_SESSIONS sessions; one session of
#            BENCH_BIG_MESSAGES messages alone.
#   list     wc-ls -n 50 [--project P]; jq -s over the per-session metadata
#            files (sort by updated, newest 50); sqlite3 -json SELECT ...
#            ORDER BY updated DESC LIMIT 50 (indexed).
#   export   wc-export ID --format markdown; a jq program and an SQL query
#            that print the same markdown byte for byte (checked). MB/s is
#            the session's message JSON over the median time.
#   compact  wc-compact --all --max-tokens N on a fresh copy each run. At
#            N=100000 that truncates tool output to 32,768 characters and
#            prunes all but the newest 4 tool outputs of a session to 2,048
#            (a session still over 3/4 N would lose whole old turns too);
#            jq: a shell loop running that truncation on each file (one jq
#            per session, rewriting it); sqlite3: two UPDATEs with substr on
#            the old tool rows, one transaction. Results are compared. wc
#            keeps the old path as a branch; the others overwrite. MB/s is
#            the batch's message JSON over the median time.
# wc's programs are copied once built, so that they start as installed
# programs do (a program the linker just wrote starts 0.4 ms slower until
# the kernel evicts it; see the build below).
# Times are medians (hyperfine, -N: no shell); peak RSS is the largest
# %M of GNU time over the RSS runs (a separate loop for fast operations,
# the timed runs themselves for slow ones). The commands a target compares
# take turns: wc's resident appends on the three stores with sqlite3's
# INSERTs, and each listing with its sqlite3 query, in BENCH_TURN_ROUNDS
# rounds of a few runs each (every other round in reverse order), so that
# the machine's pace, which moves by 1.5x within minutes here, weighs on
# both sides of a ratio alike. Each round gives a ratio of its own (the
# medians of its runs); the quartiles of those ratios are printed beside
# the verdict, so that a verdict decided by the machine's noise reads as
# one. The other modes and contenders run one after the other.
set -eu

die() { echo "bench.sh: $*" >&2; exit 1; }

# ---------------------------------------------------------------- measure
if [ "${1:-}" = measure ]; then
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
	exit 0
fi
[ $# -eq 0 ] || [ "$1" = run ] || die "usage: sh scripts/bench.sh [run|measure]"

# ---------------------------------------------------------------- configuration
quick=${BENCH_QUICK:-0}
[ "$quick" = 0 ] && quick= || quick=1
q() { if [ -n "$quick" ]; then echo "$2"; else echo "$1"; fi; } # q FULL QUICK
SESSIONS=${BENCH_SESSIONS:-$(q 10000 1000)}
BIG=${BENCH_BIG_MESSAGES:-$(q 20000 2000)}
COMPACT=${BENCH_COMPACT_SESSIONS:-$(q 1000 100)}
MAX_TOKENS=${BENCH_MAX_TOKENS:-100000}
RUNS=${BENCH_RUNS:-$(q 30 10)}
TURN_RUNS=${BENCH_TURN_RUNS:-$(q 150 20)}
ROUNDS=${BENCH_TURN_ROUNDS:-$(q 15 4)}
SLOW_RUNS=${BENCH_SLOW_RUNS:-3}
WARMUP=${BENCH_WARMUP:-$(q 3 2)}
RSS_RUNS=${BENCH_RSS_RUNS:-$(q 10 8)}
SQLITE_SYNC=${BENCH_SQLITE_SYNC:-NORMAL}
SEED=${BENCH_SEED:-1}
TEXT="please look at the failing login test in internal/auth and fix it"

# ---------------------------------------------------------------- tools
[ -f go.mod ] && grep -q '^module github.com/wctoolkit/wc' go.mod || die "run from the module root"
missing=
for t in go jq sqlite3; do command -v "$t" >/dev/null 2>&1 || missing="$missing $t"; done
TIME=/usr/bin/time
"$TIME" -f %M true >/dev/null 2>&1 || missing="$missing time(GNU, /usr/bin/time)"
if command -v sqlite3 >/dev/null 2>&1; then
	[ "$(sqlite3 :memory: "select '{\"a\":[1]}' ->> '\$.a[0]'" 2>/dev/null)" = 1 ] ||
		missing="$missing sqlite3(3.38+ with JSON1)"
fi
[ -z "$missing" ] || die "missing:$missing (Debian: apt-get install -y jq sqlite3 time hyperfine)"
HYPERFINE=
if [ "${BENCH_NO_HYPERFINE:-0}" = 0 ] && command -v hyperfine >/dev/null 2>&1; then
	HYPERFINE=hyperfine
else
	echo "bench.sh: timing with a shell loop (hyperfine is missing, apt-get install -y hyperfine, or BENCH_NO_HYPERFINE=1)" >&2
	date +%s%N | grep -q N && die "missing: GNU date (date +%s%N)"
fi

if [ -n "${BENCH_DIR:-}" ]; then
	D=$BENCH_DIR
	mkdir -p "$D"
else
	D=$(mktemp -d "${TMPDIR:-/tmp}/wc-bench.XXXXXX")
	[ "${BENCH_KEEP:-0}" = 1 ] || trap 'rm -rf "$D"' EXIT
fi
D=$(cd "$D" && pwd)
B=$D/bin
R=$D/results
mkdir -p "$B" "$R" "$D/cmd"
log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
began=$(date +%s)
uptime | sed 's/.*load average: //' >"$D/load.start"
log "work directory $D; load average: $(cat "$D/load.start")"

# ---------------------------------------------------------------- build
# BENCH_REV=REV builds that commit (git archive into the work directory)
# instead of the working tree, which others may be editing meanwhile.
SRC=$PWD
rev=$(git describe --always --dirty 2>/dev/null || echo unknown)
if [ -n "${BENCH_REV:-}" ]; then
	rev=$(git rev-parse --short "$BENCH_REV") || die "unknown revision $BENCH_REV"
	SRC=$D/src
	rm -rf "$SRC"
	mkdir -p "$SRC"
	git archive --format=tar "$BENCH_REV" | tar -x -C "$SRC"
	[ -d "$SRC/scripts/benchgen" ] || { mkdir -p "$SRC/scripts" && cp -R scripts/benchgen "$SRC/scripts/"; }
fi
log "building the binaries and benchgen ($rev)"
(cd "$SRC" && go build -tags urfave_cli_no_docs -o "$B/" ./cmd/... && go build -o "$B/benchgen" ./scripts/benchgen) || die "build failed"
# A program the Go linker has just written stays in the page cache as the
# linker's memory map left it, and each start of it took 0.35-0.45 ms more
# (interleaved against a copy, 1,000 rounds) until the kernel evicts it.
# sqlite3 and jq, installed long ago, are read from disk; so is wc once
# installed and evicted. The copies start as they do.
for f in "$B"/*; do
	cp "$f" "$f.copied" && mv "$f.copied" "$f" || die "copying $f failed"
done

# ---------------------------------------------------------------- data
# gen NAME ARGS...: the same sessions as $D/NAME/{wc,jsonl,db.sqlite}.
gen() {
	name=$1
	shift
	rm -rf "${D:?}/$name"
	mkdir -p "$D/$name"
	"$B/benchgen" -seed "$SEED" -wc "$D/$name/wc" -jsonl "$D/$name/jsonl" -sqlite "$D/$name/db.sqlite" "$@" \
		>"$D/$name/summary.json" 2>"$D/$name/benchgen.log" || { cat "$D/$name/benchgen.log" >&2; die "benchgen $name failed"; }
}
field() { jq -r ".$2" "$D/$1/summary.json"; }

log "generating: one session of 10 messages"
gen one -sessions 1 -messages 10
log "generating: $SESSIONS sessions"
gen many -sessions "$SESSIONS" -first-messages 10
log "generating: one session of $BIG messages"
gen big -sessions 1 -messages "$BIG"
log "generating: $COMPACT sessions to compact"
gen batch -sessions "$COMPACT"
cp -a "$D/batch" "$D/batch.orig"
# The generated stores are over a GB of dirty pages: left to the kernel's
# writeback, they were written out during the first timed rows, and every
# fsync waited for them (wc's appends sync; sqlite3's NORMAL INSERT does not).
log "writing the generated data to disk"
sync
for n in one many big batch; do
	log "  $n: $(jq -c '{sessions, messages, MB: (.json_bytes / 1e6 | floor), roles, seconds}' "$D/$n/summary.json")"
done
ONE_ID=$(field one first_id)
MANY_ID=$(field many first_id)
BIG_ID=$(field big first_id)
PROJECT=$(field many project)

# ---------------------------------------------------------------- programs
# The markdown of wc-export, in jq (streaming the JSONL) and in SQL.
cat >"$D/cmd/md.jq" <<'EOF'
def oneline: [splits("[ \t\n\r\f\u000b]+")] | map(select(. != "")) | join(" ");
def runlen: [match("`+"; "g").length] | max // 0;
def codespan: oneline as $s | ("`" * (($s | runlen) + 1)) as $d
  | (if ($s | startswith("`")) or ($s | endswith("`")) then " " else "" end) as $p | $d + $p + $s + $p + $d;
def fence($info; $body): ("`" * ([3, ($body | runlen) + 1] | max)) as $f | $f + $info + "\n" + $body + "\n" + $f + "\n\n";
# A text that opens a code fence and never closes it gets it closed, as wc does.
def openfence: reduce (match("(?m)^ {0,3}(`{3,}|~{3,})([^\n]*)$"; "g")
    | {run: .captures[0].string, rest: (.captures[1].string | sub("\r+$"; ""))}) as $m (null;
  if . == null then (if ($m.run | startswith("`")) and ($m.rest | contains("`")) then . else $m.run end)
  elif ($m.run[0:1] == .[0:1]) and ($m.run | length) >= length and ($m.rest | test("^\\s*$")) then null
  else . end);
def mdtext: (if test("```|~~~") then openfence else null end) as $f
  | if $f == null then . + "\n\n" else . + (if endswith("\n") then "" else "\n" end) + $f + "\n\n" end;
def pretty: if . == null or . == {} then "{}" else "{\n" + (to_entries | map("  " + (.key | tojson) + ": " + (.value | tojson)) | join(",\n")) + "\n}" end;
def rolelabel: {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"}[.] // .;
def result($err): if $err then "error" else "result" end;
def block($role; $err):
  if $role == "tool" and .type == "text" then fence(result($err); .text)
  elif .type == "text" then .text | mdtext
  elif .type == "tooluse" then fence("tool"; .name + "\n" + (.input | pretty))
  elif .type == "toolresult" then fence(result(.is_error == true); (.content | if type == "string" then . else tojson end))
  elif .type == "image" then "*[image]*\n\n"
  elif .type == "thinking" then fence("thinking"; .text)
  elif .type == "redacted_thinking" then "*[redacted thinking]*\n\n"
  else "*[" + (.type | oneline | gsub("]"; "")) + "]*\n\n" end;
def message: .role as $r | (.is_error == true) as $e
  | "### " + (.role | rolelabel) + "\n\n" + (if (.content | type) == "string"
      then (if $r == "tool" then fence(result($e); .content) else .content | mdtext end)
      else ([.content[] | block($r; $e)] | add // "") end);
($meta[0] | "# " + (.title | oneline) + "\n\n- **Session:** " + (.id | codespan) + "\n- **Project:** "
  + (.project | codespan) + "\n- **Created:** " + .created + "\n\n---\n\n"),
(inputs | message)
EOF
# Titles, ids and projects hold no backticks or line breaks here, so the
# header needs no fence sizing in SQL.
cat >"$D/cmd/md.sql.in" <<'EOF'
WITH
msg AS (
  SELECT seq, json ->> '$.role' AS role, json_type(json, '$.content') AS ct,
         json ->> '$.content' AS body, coalesce(json ->> '$.is_error', 0) AS err, json
  FROM messages WHERE session_id = 'SESSION_ID'),
piece(seq, k, info, body, raw) AS (
  SELECT seq, -1, NULL, NULL, '### ' || CASE role WHEN 'user' THEN 'User' WHEN 'assistant' THEN 'Assistant'
      WHEN 'system' THEN 'System' WHEN 'tool' THEN 'Tool' ELSE role END || char(10, 10) FROM msg
  UNION ALL
  SELECT seq, 0, CASE WHEN role = 'tool' THEN CASE WHEN err THEN 'error' ELSE 'result' END END, body, NULL
  FROM msg WHERE ct = 'text'
  UNION ALL
  SELECT msg.seq, b.key,
         CASE WHEN msg.role = 'tool' AND b.value ->> 'type' = 'text' THEN CASE WHEN msg.err THEN 'error' ELSE 'result' END
              WHEN b.value ->> 'type' = 'tooluse' THEN 'tool'
              WHEN b.value ->> 'type' = 'thinking' THEN 'thinking'
              WHEN b.value ->> 'type' = 'toolresult' THEN CASE WHEN b.value ->> 'is_error' THEN 'error' ELSE 'result' END END,
         CASE WHEN b.value ->> 'type' IN ('text', 'thinking') THEN b.value ->> 'text'
              WHEN b.value ->> 'type' = 'toolresult' THEN b.value ->> 'content'
              WHEN b.value ->> 'type' = 'tooluse' THEN (b.value ->> 'name') || char(10) ||
                   coalesce('{' || char(10) || (SELECT group_concat('  ' || json_quote(i.key) || ': ' ||
                       CASE WHEN i.type = 'text' THEN json_quote(i.value) ELSE i.value END, ',' || char(10))
                     FROM json_each(b.value, '$.input') i) || char(10) || '}', '{}') END,
         CASE WHEN b.value ->> 'type' = 'image' THEN '*[image]*' || char(10, 10)
              WHEN b.value ->> 'type' = 'redacted_thinking' THEN '*[redacted thinking]*' || char(10, 10) END
  FROM msg, json_each(msg.json, '$.content') b WHERE msg.ct = 'array'),
-- A text that opens a code fence and never closes it gets it closed, as wc
-- does: its lines are walked one by one, keeping the fence left open. A
-- recursive step may not use a subquery, so @L@ (the line), @T@ (it without
-- leading spaces) and @N@ (the run of its first character) are expanded below.
scan(seq, k, rest, open) AS (
  SELECT seq, k, body || char(10), '' FROM piece
  WHERE info IS NULL AND raw IS NULL AND (instr(body, '```') OR instr(body, '~~~'))
  UNION ALL
  SELECT seq, k, substr(rest, instr(rest, char(10)) + 1), CASE
      WHEN length(@L@) - length(@T@) > 3 OR @N@ < 3 OR substr(@T@, 1, 1) NOT IN ('`', '~') THEN open
      WHEN open = '' THEN CASE WHEN substr(@T@, 1, 1) = '`' AND instr(substr(@T@, @N@ + 1), '`') THEN open
                               ELSE substr(@T@, 1, @N@) END
      WHEN substr(@T@, 1, 1) = substr(open, 1, 1) AND @N@ >= length(open)
           AND trim(substr(@T@, @N@ + 1), ' ' || char(9, 10, 11, 12, 13)) = '' THEN ''
      ELSE open END
  FROM scan WHERE rest <> ''),
closing(seq, k, open) AS (SELECT seq, k, open FROM scan WHERE rest = '' AND open <> '')
SELECT '# ' || title || char(10, 10) || '- **Session:** `' || id || '`' || char(10) || '- **Project:** `' || project
       || '`' || char(10) || '- **Created:** ' || created || char(10, 10) || '---' || char(10, 10)
FROM sessions WHERE id = 'SESSION_ID'
UNION ALL
SELECT * FROM (SELECT CASE
  WHEN info IS NULL AND raw IS NULL AND body IS NOT NULL THEN body || coalesce(CASE WHEN body LIKE '%' || char(10)
       THEN '' ELSE char(10) END || (SELECT open FROM closing c WHERE c.seq = piece.seq AND c.k = piece.k), '')
       || char(10, 10)
  WHEN info IS NULL THEN raw
  ELSE (SELECT f || info || char(10) || body || char(10) || f || char(10, 10) FROM (SELECT CASE
      WHEN instr(body, '``````') THEN '```````' WHEN instr(body, '`````') THEN '``````'
      WHEN instr(body, '````') THEN '`````' WHEN instr(body, '```') THEN '````' ELSE '```' END AS f)) END
FROM piece ORDER BY seq, k);
EOF
sed -e 's#@N@#(length(@T@) - length(ltrim(@T@, substr(@T@, 1, 1))))#g' \
	-e "s#@T@#ltrim(@L@, ' ')#g" \
	-e 's#@L@#rtrim(substr(rest, 1, instr(rest, char(10)) - 1), char(13))#g' \
	-e "s/SESSION_ID/$BIG_ID/g" "$D/cmd/md.sql.in" >"$D/cmd/md.sql"

# Compaction at --max-tokens: tool output capped at 32,768 characters, then
# all but the newest 4 tool outputs at 2,048, with wc's notice; a cut is
# made only when the notice is shorter than what it removes.
NOTICE="xx[...  characters truncated for context management]" # its length
cat >"$D/cmd/compact.jq" <<'EOF'
def notice($n): "\n\n[... \($n) characters truncated for context management]";
def cap($max): if type == "string" and length > $max
  then (.[:$max] + notice(length - $max)) as $out | if ($out | length) < length then $out else . end else . end;
([to_entries[] | select(.value.role == "tool") | .key]) as $tools
| ($tools[:([($tools | length) - 4, 0] | max)]) as $old
| map(if .role == "tool" then .content |= cap(32768) else . end)
| reduce $old[] as $i (.; .[$i].content |= cap(2048))
| .[]
EOF
cat >"$D/cmd/jq-compact.sh" <<EOF
for f in "\$1"/sessions/*.jsonl; do
	jq -c -s -f "$D/cmd/compact.jq" "\$f" >"\$f.tmp" && mv "\$f.tmp" "\$f"
done
EOF
cat >"$D/cmd/compact.sql" <<EOF
PRAGMA synchronous=$SQLITE_SYNC;
BEGIN;
UPDATE messages SET json = json_set(json, '\$.content',
    substr(json ->> '\$.content', 1, 32768) || char(10, 10) || '[... ' || (length(json ->> '\$.content') - 32768)
    || ' characters truncated for context management]')
  WHERE json ->> '\$.role' = 'tool' AND json_type(json, '\$.content') = 'text'
    AND length(json ->> '\$.content') > 32768 + length('$NOTICE' || (length(json ->> '\$.content') - 32768));
WITH tools AS (
  SELECT rowid AS r, row_number() OVER (PARTITION BY session_id ORDER BY seq DESC) AS newest
  FROM messages WHERE json ->> '\$.role' = 'tool')
UPDATE messages SET json = json_set(json, '\$.content',
    substr(json ->> '\$.content', 1, 2048) || char(10, 10) || '[... ' || (length(json ->> '\$.content') - 2048)
    || ' characters truncated for context management]')
  WHERE rowid IN (SELECT r FROM tools WHERE newest > 4)
    AND json_type(json, '\$.content') = 'text'
    AND length(json ->> '\$.content') > 2048 + length('$NOTICE' || (length(json ->> '\$.content') - 2048));
COMMIT;
EOF

# Listing.
cat >"$D/cmd/jq-ls.sh" <<'EOF'
jq -c -s 'sort_by(.updated) | reverse | .[:50][]' "$1"/meta/*.json
EOF
cat >"$D/cmd/jq-ls-project.sh" <<'EOF'
jq -c -s --arg p "$2" 'map(select(.project == $p or (.project | startswith($p + "/")))) | sort_by(.updated) | reverse | .[:50][]' "$1"/meta/*.json
EOF
cat >"$D/cmd/ls.sql" <<'EOF'
SELECT id, title, project, created, updated FROM sessions ORDER BY updated DESC LIMIT 50;
EOF
cat >"$D/cmd/ls-project.sql" <<EOF
SELECT id, title, project, created, updated FROM sessions
WHERE project = '$PROJECT' OR substr(project, 1, $((${#PROJECT} + 1))) = '$PROJECT/'
ORDER BY updated DESC LIMIT 50;
EOF

# Appending.
LINE=$(printf '{"role":"user","content":"%s","created_at":"2026-08-21T12:00:00Z"}' "$TEXT")
cat >"$D/cmd/jsonl-append.sh" <<EOF
printf '%s\n' '$LINE' >>"\$1"
EOF
for n in one many big; do
	id=$(field "$n" first_id)
	cat >"$D/cmd/append-$n.sql" <<EOF
PRAGMA synchronous=$SQLITE_SYNC;
INSERT INTO messages VALUES('$id', (SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = '$id'), '$LINE');
EOF
	sed 's/^PRAGMA synchronous=.*/PRAGMA synchronous=FULL;/' "$D/cmd/append-$n.sql" >"$D/cmd/append-$n-full.sql"
done

# ---------------------------------------------------------------- measuring
# timeruns KEY RUNS WARMUP PREPARE CMD: adds the seconds of RUNS timed runs of
# CMD to $R/KEY.times. CMD is run without a shell (words split as sh would);
# PREPARE ("" for none) runs before each timed run.
timeruns() {
	key=$1 runs=$2 warm=$3 prep=$4 cmd=$5
	if [ -n "$HYPERFINE" ]; then
		set -- -N --style none --runs "$runs" --warmup "$warm" --export-json "$R/$key.json"
		[ -n "$prep" ] && set -- "$@" --prepare "$prep"
		hyperfine "$@" "$cmd" 2>"$R/$key.err" </dev/null || { cat "$R/$key.err" >&2; die "$key failed: $cmd"; }
		jq -r '.results[0].times[]' "$R/$key.json" >>"$R/$key.times"
	else
		i=0
		while [ "$i" -lt "$warm" ]; do
			[ -z "$prep" ] || sh -c "$prep" </dev/null
			sh -c "exec $cmd" >/dev/null </dev/null || die "$key failed: $cmd"
			i=$((i + 1))
		done
		i=0
		while [ "$i" -lt "$runs" ]; do
			[ -z "$prep" ] || sh -c "$prep" </dev/null
			t0=$(date +%s%N)
			sh -c "exec $cmd" >/dev/null </dev/null || die "$key failed: $cmd"
			t1=$(date +%s%N)
			awk -v d="$((t1 - t0))" 'BEGIN { printf "%.9f\n", d / 1e9 }' >>"$R/$key.times"
			i=$((i + 1))
		done
	fi
}

# stats KEY: median, mean, min and max of $R/KEY.times into $R/KEY.stats,
# the median into $R/KEY.time.
stats() {
	sort -g "$R/$1.times" | awk '{ a[NR] = $1; s += $1 }
		END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; print m, s / NR, a[1], a[NR] }' >"$R/$1.stats"
	cut -d' ' -f1 "$R/$1.stats" >"$R/$1.time"
}

# bench KEY RUNS WARMUP PREPARE CMD: median seconds into $R/KEY.time.
bench() {
	log "  $1: $5"
	: >"$R/$1.times"
	timeruns "$@"
	stats "$1"
}

# turns KEY=CMD...: times the commands in turns, ROUNDS rounds of about
# TURN_RUNS/ROUNDS runs each (after WARMUP untimed runs in the first round
# and one in the others), every other round in reverse order, then their
# peak RSS as fast does. Run one after the other, a change of the machine's
# pace between two commands showed as their ratio. Each round's median goes
# to $R/KEY.rounds, a line per round.
turns() {
	: >"$R/turns"
	for kc in "$@"; do
		printf '%s\n' "$kc" >>"$R/turns"
		: >"$R/${kc%%=*}.times"
		: >"$R/${kc%%=*}.rounds"
		log "  ${kc%%=*}: ${kc#*=}"
	done
	per=$(((TURN_RUNS + ROUNDS - 1) / ROUNDS))
	round=0
	while [ "$round" -lt "$ROUNDS" ]; do
		warm=1
		[ "$round" -eq 0 ] && warm=$WARMUP
		if [ $((round % 2)) -eq 0 ]; then order=cat; else order="sort -r"; fi
		# The order by key, reversed or not: keys are unique.
		sort "$R/turns" | $order >"$R/turns.now"
		while IFS= read -r kc <&3; do
			k=${kc%%=*}
			: >"$R/$k.round.times"
			timeruns "$k.round" "$per" "$warm" "" "${kc#*=}"
			cat "$R/$k.round.times" >>"$R/$k.times"
			stats "$k.round"
			cat "$R/$k.round.time" >>"$R/$k.rounds"
			rm -f "$R/$k.round".*
		done 3<"$R/turns.now"
		round=$((round + 1))
	done
	for kc in "$@"; do
		stats "${kc%%=*}"
		rss "${kc%%=*}" "$RSS_RUNS" "" "${kc#*=}"
	done
}

# rss KEY RUNS PREPARE CMD: the largest peak RSS (KiB) of RUNS runs into
# $R/KEY.rss, and the median into $R/KEY.rssmed.
rss() {
	key=$1 runs=$2 prep=$3 cmd=$4
	: >"$R/$key.rsslist"
	i=0
	while [ "$i" -lt "$runs" ]; do
		[ -z "$prep" ] || sh -c "$prep"
		"$TIME" -f %M -o "$R/$key.rss1" sh -c "exec $cmd" >/dev/null || die "$key failed under time: $cmd"
		tail -n 1 "$R/$key.rss1" >>"$R/$key.rsslist"
		i=$((i + 1))
	done
	sort -n "$R/$key.rsslist" | tail -n 1 >"$R/$key.rss"
	sort -n "$R/$key.rsslist" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }' >"$R/$key.rssmed"
}

# fast KEY CMD: time, then peak RSS over RSS_RUNS more runs. slow KEY
# PREPARE CMD: time with GNU time around each run, for the RSS too.
fast() {
	bench "$1" "$RUNS" "$WARMUP" "" "$2"
	rss "$1" "$RSS_RUNS" "" "$2"
}
slow() {
	: >"$R/$1.rsslist"
	bench "$1" "$SLOW_RUNS" "${4:-0}" "$2" "$TIME -f %M -a -o $R/$1.rsslist $3"
	grep -E '^[0-9]+$' "$R/$1.rsslist" | sort -n | tail -n 1 >"$R/$1.rss"
	grep -E '^[0-9]+$' "$R/$1.rsslist" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }' >"$R/$1.rssmed"
}
# commas N: 10000 -> 10,000
commas() { awk -v n="$1" 'BEGIN { s = ""; while (length(n) > 3) { s = "," substr(n, length(n) - 2) s; n = substr(n, 1, length(n) - 3) } print n s }'; }

# A full id no session has: a direct read of it stops the store's resident
# process (WC_DIRECT=1 asks it to, and the read waits for its lock).
NOID=ffffffff-ffff-4fff-bfff-ffffffffffff
fresh() { WC_DIRECT=1 "$B/wc-export" --store "$1" "$NOID" --format info >/dev/null 2>&1 || true; }
stopres() { echo "sh -c 'WC_DIRECT=1 $B/wc-export --store $1 $NOID --format info >/dev/null 2>&1; true'"; }
# direct FUNCTION ARGS...: measure with WC_DIRECT=1 in the commands' environment.
direct() { (WC_DIRECT=1 && export WC_DIRECT && "$@"); }
# resrss KEY STORE: the peak RSS (KiB) of the resident process serving STORE.
resrss() {
	for p in /proc/[0-9]*; do
		if { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "WC_STORE_SERVE=$2"; then
			awk '/^VmHWM:/ { print $2 }' "$p/status" 2>/dev/null
		fi
	done | sort -n | tail -n 1 >"$R/$1.srvrss"
	[ -s "$R/$1.srvrss" ] || rm -f "$R/$1.srvrss"
}

W="$B/wc"
SQ="sqlite3 -batch"
MDSQ="sqlite3 -batch -list -noheader -newline ''"

log "export: markdown of one session of $BIG messages"
fresh "$D/big/wc"
slow export.wc "" "$B/wc-export --store $D/big/wc $BIG_ID --format markdown" 1
resrss export.wc "$D/big/wc"
direct slow export.wcdirect "" "$B/wc-export --store $D/big/wc $BIG_ID --format markdown"
slow export.jq "" "jq -n -j --slurpfile meta $D/big/jsonl/meta/$BIG_ID.json -f $D/cmd/md.jq $D/big/jsonl/sessions/$BIG_ID.jsonl"
slow export.sql "" "$MDSQ $D/big/db.sqlite '.read $D/cmd/md.sql'"

checks=
"$B/wc-export" --store "$D/big/wc" "$BIG_ID" --format markdown >"$R/md.wc"
jq -n -j --slurpfile meta "$D/big/jsonl/meta/$BIG_ID.json" -f "$D/cmd/md.jq" "$D/big/jsonl/sessions/$BIG_ID.jsonl" >"$R/md.jq"
sqlite3 -batch -list -noheader -newline '' "$D/big/db.sqlite" ".read $D/cmd/md.sql" >"$R/md.sql"
if cmp -s "$R/md.wc" "$R/md.jq" && cmp -s "$R/md.wc" "$R/md.sql"; then
	checks="$checks markdown: identical ($(wc -c <"$R/md.wc") bytes);"
else
	checks="$checks markdown: DIFFERENT (see $R/md.*);"
fi

log "compact: --all --max-tokens $MAX_TOKENS over $COMPACT sessions"
# Removing the store stops its resident process: each run starts a fresh one.
slow compact.wc "sh -c 'rm -rf $D/batch/wc && cp -a $D/batch.orig/wc $D/batch/wc'" \
	"$B/wc-compact --store $D/batch/wc --all --max-tokens $MAX_TOKENS"
resrss compact.wc "$D/batch/wc"
direct slow compact.wcdirect "sh -c 'rm -rf $D/batch/wc && cp -a $D/batch.orig/wc $D/batch/wc'" \
	"$B/wc-compact --store $D/batch/wc --all --max-tokens $MAX_TOKENS"
slow compact.jq "sh -c 'rm -rf $D/batch/jsonl && cp -a $D/batch.orig/jsonl $D/batch/jsonl'" \
	"sh $D/cmd/jq-compact.sh $D/batch/jsonl"
slow compact.sql "sh -c 'rm -f $D/batch/db.sqlite* && cp $D/batch.orig/db.sqlite $D/batch/db.sqlite'" \
	"$SQ $D/batch/db.sqlite '.read $D/cmd/compact.sql'"

# The last timed run of each left its compacted copy: compare the paths.
bad=0
n=0
for f in "$D/batch/jsonl/sessions/"*.jsonl; do
	id=$(basename "$f" .jsonl)
	"$B/wc-export" --store "$D/batch/wc" "$id" --format jsonl | jq -c .message >"$R/cmp.wc"
	sqlite3 -batch "$D/batch/db.sqlite" "SELECT json FROM messages WHERE session_id = '$id' ORDER BY seq" >"$R/cmp.sql"
	cmp -s "$R/cmp.wc" "$f" && cmp -s "$R/cmp.wc" "$R/cmp.sql" || bad=$((bad + 1))
	n=$((n + 1))
	[ "$n" -lt 50 ] || break
done
checks="$checks compacted sessions identical: $((n - bad)) of the first $n;"

log "list: the newest 50 of $SESSIONS sessions, and of project $PROJECT"
fresh "$D/many/wc"
turns "ls.wc=$B/wc-ls --store $D/many/wc -n 50" "ls.sql=$SQ -json $D/many/db.sqlite '.read $D/cmd/ls.sql'"
resrss ls.wc "$D/many/wc"
direct fast ls.wcdirect "$B/wc-ls --store $D/many/wc -n 50"
fast ls.jq "sh $D/cmd/jq-ls.sh $D/many/jsonl"
fresh "$D/many/wc"
turns "lsp.wc=$B/wc-ls --store $D/many/wc -n 50 --project $PROJECT" \
	"lsp.sql=$SQ -json $D/many/db.sqlite '.read $D/cmd/ls-project.sql'"
resrss lsp.wc "$D/many/wc"
direct fast lsp.wcdirect "$B/wc-ls --store $D/many/wc -n 50 --project $PROJECT"
fast lsp.jq "sh $D/cmd/jq-ls-project.sh $D/many/jsonl $PROJECT"

"$B/wc-ls" --store "$D/many/wc" -n 50 | jq -r .id | sort >"$R/ids.wc"
sh "$D/cmd/jq-ls.sh" "$D/many/jsonl" | jq -r .id | sort >"$R/ids.jq"
sqlite3 -batch "$D/many/db.sqlite" ".read $D/cmd/ls.sql" | cut -d'|' -f1 | sort >"$R/ids.sql"
if cmp -s "$R/ids.wc" "$R/ids.jq" && cmp -s "$R/ids.wc" "$R/ids.sql"; then
	checks="$checks top-50 ids: identical"
else
	checks="$checks top-50 ids: DIFFERENT (see $R/ids.*)"
fi

log "append: one user message per process"
# The resident appends of the three stores and the sqlite3 INSERTs (both
# synchronous settings) take turns: the target's ratio and its flatness
# compare them.
appendcmd() { echo "$B/wc-append --store $D/$1/wc $(field "$1" first_id) --role user --text '$TEXT'"; }
for n in one many big; do fresh "$D/$n/wc"; done
turns "append-one.wc=$(appendcmd one)" "append-many.wc=$(appendcmd many)" "append-big.wc=$(appendcmd big)" \
	"append-one.sql=$SQ $D/one/db.sqlite '.read $D/cmd/append-one.sql'" \
	"append-many.sql=$SQ $D/many/db.sqlite '.read $D/cmd/append-many.sql'" \
	"append-big.sql=$SQ $D/big/db.sqlite '.read $D/cmd/append-big.sql'" \
	"append-one.sqlfull=$SQ $D/one/db.sqlite '.read $D/cmd/append-one-full.sql'" \
	"append-many.sqlfull=$SQ $D/many/db.sqlite '.read $D/cmd/append-many-full.sql'" \
	"append-big.sqlfull=$SQ $D/big/db.sqlite '.read $D/cmd/append-big-full.sql'"
for n in one many big; do resrss "append-$n.wc" "$D/$n/wc"; done
for n in one many big; do
	id=$(field "$n" first_id)
	cmd=$(appendcmd "$n")
	bench "append-$n.wccold" "$RUNS" 0 "$(stopres "$D/$n/wc")" "$cmd"
	rss "append-$n.wccold" "$RSS_RUNS" "$(stopres "$D/$n/wc")" "$cmd"
	direct fast "append-$n.wcdirect" "$cmd"
	fast "append-$n.jq" "sh $D/cmd/jsonl-append.sh $D/$n/jsonl/sessions/$id.jsonl"
done

# ---------------------------------------------------------------- table
MB_EXPORT=$(field big json_bytes)
MB_COMPACT=$(field batch json_bytes)
load=$(uptime | sed 's/.*load average: //')
{
	# row|label|key|unit|wc mode (wc: resident process, warm; wccold; wcdirect)
	for m in wc wccold wcdirect; do
		case $m in wc) how="resident" ;; wccold) how="resident, cold" ;; wcdirect) how="direct" ;; esac
		echo "row|append, store of 1 session of 10 msgs ($how)|append-one|ms|$m"
		echo "row|append, store of $(commas "$SESSIONS") sessions ($how)|append-many|ms|$m"
		echo "row|append, session of $(commas "$BIG") msgs ($how)|append-big|ms|$m"
	done
	for m in wc wcdirect; do
		case $m in wc) how="resident" ;; wcdirect) how="direct" ;; esac
		echo "row|list newest 50 of $(commas "$SESSIONS") ($how)|ls|ms|$m"
		echo "row|list --project ($(field many project_sessions) of $(commas "$SESSIONS")), newest 50 ($how)|lsp|ms|$m"
		echo "row|export markdown, $(awk -v b="$MB_EXPORT" 'BEGIN { printf "%.1f", b / 1e6 }') MB session ($how)|export|MB/s $MB_EXPORT|$m"
		echo "row|compact $(commas "$COMPACT") sessions, $(awk -v b="$MB_COMPACT" 'BEGIN { printf "%.1f", b / 1e6 }') MB ($([ $m = wc ] && echo default || echo direct))|compact|MB/s $MB_COMPACT|$m"
	done
} >"$R/rows"

for f in "$R"/*.time "$R"/*.rss "$R"/*.srvrss; do [ -f "$f" ] && printf '%s %s\n' "$(basename "$f")" "$(cat "$f")"; done >"$R/all"
for f in "$R"/*.stats; do printf '%s %s\n' "$(basename "$f" .stats)" "$(cat "$f")"; done >"$R/stats"
for f in "$R"/*.rssmed; do printf '%s %s\n' "$(basename "$f" .rssmed)" "$(cat "$f")"; done >"$R/rssmed"

echo
echo "wc benchmark, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load average $load (at start: $(cat "$D/load.start" 2>/dev/null || echo n/a))" | sed 's/ (at start: n\/a)//'
echo "tree $rev; mode: $([ -n "$quick" ] && echo quick || echo full); medians of $TURN_RUNS runs in $ROUNDS rounds (compared pairs) / $RUNS runs (other fast) / $SLOW_RUNS runs (export, compact); $([ -n "$HYPERFINE" ] && echo hyperfine -N || echo shell loop); sqlite synchronous=$SQLITE_SYNC"
awk -F'|' -v allf="$R/all" -v statf="$R/stats" -v R="$R" '
	BEGIN {
		while ((getline l < allf) > 0) { split(l, a, " "); v[a[1]] = a[2] }
		while ((getline l < statf) > 0) { split(l, a, " "); mean[a[1]] = a[3] }
	}
	function t(k) { return (k in v) ? v[k] : -1 }
	function cell(sec, unit, bytes) {
		if (sec < 0) return "n/a"
		if (unit == "ms") return (sec < 0.01) ? sprintf("%.2f ms", sec * 1000) : sprintf("%.1f ms", sec * 1000)
		return sprintf("%.1f MB/s", bytes / 1e6 / sec)
	}
	function ratio(other, wc) { return (other < 0 || wc <= 0) ? "n/a" : (other / wc >= 10 ? sprintf("%.0fx", other / wc) : sprintf("%.2fx", other / wc)) }
	function mib(k) { return (t(k) < 0) ? "n/a" : sprintf("%.0f", t(k) / 1024) }
	# spread(A, B): the quartiles of the rounds ratios A/B (KEY.rounds
	# files of the same turns, line by line), or "" without rounds.
	function spread(a, b,    fa, fb, x, y, n, r, i, j, tmp) {
		fa = R "/" a ".rounds"; fb = R "/" b ".rounds"; n = 0
		while ((getline x < fa) > 0 && (getline y < fb) > 0) if (y > 0) r[++n] = x / y
		close(fa); close(fb)
		if (n < 2) return ""
		for (i = 2; i <= n; i++) for (j = i; j > 1 && r[j - 1] > r[j]; j--) { tmp = r[j]; r[j] = r[j - 1]; r[j - 1] = tmp }
		return sprintf(", rounds %.2f-%.2fx", r[int((n + 3) / 4)], r[int((3 * n + 3) / 4)])
	}
	$1 == "row" {
		split($4, u, " "); unit = u[1]; bytes = u[2]; k = $3; m = $5
		w = t(k "." m ".time"); j = t(k ".jq.time"); s = t(k ".sql.time")
		target = ""
		if (k ~ /^append/) {
			target = ((s > 0 && w <= s) ? "<=sqlite ok" : "<=sqlite FAIL") (m == "wc" ? spread(k ".sql", k ".wc") : "")
			# Flat: median and mean (which carries the periodic level-0
			# flatten) within 1.25x of those of the small store, same mode.
			if (k != "append-one" && t("append-one." m ".time") > 0 && mean["append-one." m] > 0) {
				rm = w / t("append-one." m ".time"); ra = mean[k "." m] / mean["append-one." m]
				target = target sprintf(", flat %s (median %.2fx, mean %.2fx%s)", (rm <= 1.25 && ra <= 1.25) ? "ok" : "FAIL", rm, ra,
					m == "wc" ? spread(k ".wc", "append-one.wc") : "")
			}
		} else if (k ~ /^ls/) target = ((s > 0 && w <= s) ? "<=sqlite ok" : "<=sqlite FAIL") (m == "wc" ? spread(k ".sql", k ".wc") : "")
		else if (k == "export") target = (j / w >= 5) ? ">=5x jq ok" : ">=5x jq FAIL"
		else if (k == "compact") target = (bytes / 1e6 / w >= 100) ? ">=100 MB/s ok" : ">=100 MB/s FAIL"
		limit = (k == "compact") ? 256 : 64
		peak = t(k "." m ".rss"); if (t(k "." m ".srvrss") > peak) peak = t(k "." m ".srvrss")
		target = target sprintf("; RSS<%d %s", limit, (peak >= 0 && peak / 1024 < limit) ? "ok" : "FAIL")
		printf "%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s\n", $2, cell(w, unit, bytes), cell(j, unit, bytes), cell(s, unit, bytes),
			ratio(j, w), ratio(s, w), mib(k "." m ".rss"), mib(k "." m ".srvrss"), mib(k ".jq.rss"), mib(k ".sql.rss"), target
	}' "$R/rows" >"$R/table"
{
	echo "operation|wc|jsonl+jq|sqlite3|jq/wc|sqlite/wc|RSS wc|RSS res|RSS jq|RSS sql|target"
	cat "$R/table"
} | awk -F'|' '
	{ for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n = NR; nf = NF }
	END {
		for (r = 1; r <= n; r++) {
			line = ""
			for (i = 1; i <= nf; i++) line = line (i == nf ? c[r, i] : sprintf(i == 1 ? "%-*s" : "%*s", w[i], c[r, i]) "  ")
			print line
			if (r == 1) { s = ""; for (i = 1; i <= nf; i++) s = s sprintf("%s", substr("----------------------------------------------------------------", 1, w[i])) (i < nf ? "  " : ""); print s }
		}
	}'
echo "wc, jsonl+jq, sqlite3: median wall time, or MB of message JSON per second. jq/wc, sqlite/wc: the"
echo "other's time over wc's (above 1: wc is faster). wc modes: resident (the default; a resident store"
echo "process started by the warmup serves the timed runs), resident, cold (stopped before each run, so"
echo "each run starts one), direct (WC_DIRECT=1). RSS: peak resident set in MiB (GNU time %M, the largest"
echo "of the runs); RSS res: the resident process's own peak (VmHWM, a fresh process per operation)."
echo "Targets: append <= sqlite3 INSERT and within 1.25x of the 10-message store (median and mean: the"
echo "mean carries the level-0 flatten every 8th direct writer pays); list <= sqlite3; export >= 5x jq;"
echo "compaction >= 100 MB/s; RSS < 64 MiB (batch < 256 MiB), the resident process's included."
echo "rounds: the quartiles of the ratio of each round's medians (the commands a target compares take"
echo "$ROUNDS turns); a range that spans 1.00x (or 1.25x) is a verdict within the machine's noise."
awk -v allf="$R/all" 'BEGIN { while ((getline l < allf) > 0) { split(l, a, " "); v[a[1]] = a[2] }
	printf "sqlite3 INSERT with synchronous=FULL (fsyncs its commit, as wc syncs before printing):"
	n = split("one many big", st, " ")
	for (i = 1; i <= n; i++) { k = "append-" st[i] ".sqlfull.time"; if (k in v) printf " %s %.2f ms;", st[i], v[k] * 1000 }
	print "" }'
echo "checks:$checks"
awk '{ if ($5 > 5 * $2 && $5 > 0.05) printf "note: %s median %.1f ms, mean %.1f ms, max %.1f ms\n", $1, $2 * 1000, $3 * 1000, $5 * 1000 }' "$R/stats"
awk -v allf="$R/all" 'BEGIN { while ((getline l < allf) > 0) { split(l, a, " "); v[a[1]] = a[2] } }
	{ k = $1 ".rss"; if ((k in v) && v[k] > 2 * $2) printf "note: %s peak RSS %.0f MiB, median %.0f MiB\n", $1, v[k] / 1024, $2 / 1024 }' "$R/rssmed"
echo "took $(($(date +%s) - began)) s; raw figures in $R (kept only with BENCH_KEEP=1 or BENCH_DIR)"
