// Package etcdkv is the etcd engine of the store: a kv.Engine over an etcd
// v3 cluster (go.etcd.io/etcd/client/v3), for a fleet of machines sharing
// one store. docs/etcd.md says why and how; this is the contract in short.
//
// A store is etcd://HOST:PORT[,HOST:PORT…]/PREFIX[?PARAMS] (ParseURL). Its
// keys are the store's keys behind "/PREFIX/\x00", so that one cluster holds
// several stores and none lies inside another. The parameters are cacert,
// cert, key (TLS with a CA and a client certificate), tls=1 (TLS with the
// system's CAs), server-name, user (its password from WC_STORE_PASSWORD,
// never from the URL, which is refused if it has one), timeout and
// dial-timeout (Go durations, 5s each by default). Errors and Config.String
// show the endpoints, the prefix and the user, never the password or a
// certificate's content.
//
// Transactions. View and Update read at one revision, the header revision
// of their first read (later reads and every page of an iterator pass it
// WithRev), so each sees one snapshot. Update holds its writes and commits
// them in one etcd Txn whose If compares the ModRevision of every key it
// read with Get (0 for a key that was absent): ErrConflict when one
// changed, and nothing written. Scanned keys are not compared. Nothing is
// ever committed before Update's end: a transaction that would not fit in
// one etcd request is refused write by write with kv.ErrTooBig, never
// split. Iterators read their range in pages at the snapshot (WithRange,
// WithLimit, WithSort descending for Reverse, WithKeysOnly), and merge in
// the writes the transaction made before it opened them.
//
// Limits (etcd's defaults: --max-txn-ops 128, --max-request-bytes 1.5 MiB):
// a value of at most 1 MiB; at most 128 writes and 1.25 MiB of keys and
// values in a transaction, the rest of a request left for the prefix, the
// compares and the framing; at most 128 keys read with Get in an Update
// (each is a compare, and etcd counts them as it counts writes): the 129th
// Get fails with kv.ErrTooBig and the transaction stays usable.
//
// Errors: every error is an *Error whose Kind is matched with errors.Is,
// and whose text is one line to print after the store's name:
//
//	kind                 when                                   what the store does, and the command's status
//	kv.ErrConflict       a compared key changed                 runs the Update again (backoff); 75 past --lock-timeout
//	kv.ErrUnknownResult  the commit was sent, its answer lost:  looks for its own token, then runs it again;
//	                     timeout, connection cut, leader lost    75 past --lock-timeout
//	                     while it was proposed
//	ErrUnavailable       no leader, no member reachable, a      retries with backoff until --lock-timeout, then 75:
//	                     read timed out; nothing was written    "wc-append: store etcd://…/PREFIX is unavailable:
//	                                                            etcd: read failed: the cluster has no leader"
//	ErrCompacted         the snapshot's revision was compacted  as kv.ErrConflict, which it also matches (Is):
//	                     while the transaction ran              a View or Update run again reads a new snapshot
//	kv.ErrTooBig         a write or a Get beyond Limits         a bug of the store's chunking: 1
//	ErrNoSpace           the database reached its quota         1, with a hint to compact and defragment
//	ErrDenied            a wrong password, a missing permission 1
//	ErrClosed            the engine was closed                  1
//
// A request requires a leader (clientv3.WithRequireLeader): a member cut off
// from the others answers "no leader" at once instead of after the server's
// own timeout, and that answer comes before the request reaches Raft, so it
// is ErrUnavailable even for a commit. A request waits at most Config's
// RequestTimeout (5s): an election after a leader's loss takes about one
// election timeout (1s by default), so a command rides it out in its
// retries. Without importing this package (the commands link no etcd
// client), an unavailable error is told by its method Unavailable() bool.
//
// An iterator cannot return an error; a page it could not read ends it
// and fails its transaction: View returns the error, Update commits
// nothing and returns it, so a range cut short never passes for a whole
// one.
package etcdkv
