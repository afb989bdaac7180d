// Package bench is wc's benchmark against the ways sessions are kept
// today: one JSONL file per session read with jq (or grep), and an SQLite
// database queried with the sqlite3 command. Run generates the data sets
// (package gen), times each operation of wc in each mode beside its peers
// in the same run, and prints one table: medians, the spread of the ratios
// of the commands that take turns, peak RSS, and a verdict against each
// target. With -etcd ENDPOINTS it adds the etcd column (etcd.go): the
// same operations on stores on that cluster, concurrent writers on one
// session, and the cluster's space per GB of sessions.
// NewConfig(true) is the quick run its test makes. The main is in
// wcbench; scripts/bench.sh builds and runs it; docs/performance.md says
// what each row means.
//
// It may import package gen and the standard library; it runs wc's
// programs (and wcbench writers), never wc's packages. Its test starts an
// etcd cluster of its own with etcdtest.
package bench
