// Package kv is the seam between the store and the database under it: an
// ordered, transactional key-value engine (Engine), which the store's
// logic (its key layout, listing shards, shared-tail references, gc and
// blobs) is written against once, and which each database implements in a
// package of its own (the embedded Badger engine, a distributed one).
//
// It holds interfaces, errors and limits only, and imports nothing of wc's
// nor any database: every package of the store may import it.
package kv
