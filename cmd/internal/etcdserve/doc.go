// Package etcdserve serves a store on etcd to the commands: wc-store's
// resident process of an etcd URL (its socket and lock in the user's
// runtime directory, see open.SharedSocket) and the store its private
// process opens. Only wc-store imports it, so that no other command
// links the etcd client (.ci/run checks).
//
// It imports cmd/internal/open and cmd/internal/serve, and the store
// (store, store/etcdstore, store/kvstore, store/storedir).
package etcdserve
