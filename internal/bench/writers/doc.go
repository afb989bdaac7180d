// Package writers is `wcbench writers`: concurrent writers appending to
// one session at the store's level, each on a handle (and, on etcd, a
// connection) of its own, the way many machines append to one shared
// session. It counts what the commands cannot show: the commits refused
// because another writer changed the session first (and run again after
// a backoff, as the commands do), and the transactions the store ran
// again. It prints one line of JSON.
//
// It may import pkg/session and pkg/session/store (etcdstore and kvstore)
// and the standard library.
package writers
