// Package gen writes the data sets of the benchmark (package bench): the same
// synthetic coding-agent sessions, drawn from one seeded random stream, as
//
//   - a wc store (-wc DIR), written through pkg/session/store in one process;
//   - wc stores on etcd (-etcd URL), the same sessions written by several
//     writers at once, each committing a session as wc-new --import does;
//   - JSONL files (-jsonl DIR): DIR/sessions/ID.jsonl holds one message per
//     line, in the same JSON wc stores, and DIR/meta/ID.json the session's
//     {"id","title","project","created","updated","message_count"};
//   - an SQLite database (-sqlite FILE), written by piping one transaction
//     into the sqlite3 command: sessions(id, title, project, created,
//     updated) and messages(session_id, seq, json), with indexes.
//
// Generate writes them; Main is `wcbench gen`, which takes those flags
// (as scripts/benchgen did) and prints a JSON summary of what it wrote.
//
// Sizes and the role mix come from the fixtures in testdata/fixtures;
// `sh scripts/fixture-sizes.sh` re-derives them. The 306 wc-level messages
// of the 11 fixture sessions (content bytes; a redacted codex body counts
// its original len=N):
//
//	role       share  p10  p25  p50   p75   p90    p95    p99    max
//	tool        60%    93  365  727  3376  7894  13730  32254  75079 (32,768 after wc's cap)
//	assistant   24%   154  272  556   801  1063   2672  15997  15997
//	user        12%    35   86  136  1183  5296   6970   8675   8675
//	system       4%   806 3638 3696  6684  6684   6684   6684   6684
//
// Tool messages are 60% of all messages but 34% of a session's messages on
// average (median 33%): one codex rollout holds 118 of the 184. The
// generator aims between the two: its 10,000 sessions hold 40% tool, 40%
// assistant, 19% user and 2% system messages (see messages). Messages per
// session in the fixtures: 5 5 6 9 11 11 17 18 25 46 153 (mean 28); each
// session draws one of these and scales it by 0.8-1.25. A generated message's content size is
// drawn from its role's quantiles above, log-linearly between them.
//
// It may import pkg/session and pkg/session/store, etcdstore among them
// (it writes the stores through them), and the standard library.
package gen
