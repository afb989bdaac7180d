// Package store is the store's API, what commands program against: the
// Handle of an open store (the store opened in the process, package
// kvstore, or a client of a store process, package remote), the Mode it is
// opened in, ListQuery and its Shard, Freed, Remover, Empty, session ids
// and references, and the errors with their kinds (KindError, RefError, Damaged*), which
// cross the socket by kind. DecodeAhead is the decode pipeline that both
// kinds of handle run a path through.
//
// It imports the model (package session) and the records (store/record)
// only: no Badger, no etcd, no sockets.
package store
