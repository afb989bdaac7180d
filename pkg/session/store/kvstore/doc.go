// Package kvstore persists sessions in a store directory that many
// short-lived processes share, one at a time (DESIGN §3,
// reference/badger.md). Its logic (key layout, listing shards, shared-tail
// references, gc, blobs, reads and writes) is written over kv.Engine; the
// database is badgerkv's Badger engine, the only importer of Badger, whose
// maintenance it reaches through dirEngine (maintain.go). The directory
// around the database (lock, turnstile, recovery, integrity checks of its
// files, salvage) is this package's. Opened on an engine shared by many
// machines instead (Options.Engine: etcd, through package etcdstore), it
// has no directory and no lock: each session's commits are checked
// against the revision its writer read, and values beyond the engine's
// are stored in pieces (shared.go, chunks.go). Serving the store to the
// commands is this package's too (resident.go): who gets it, for how long,
// the protocol's answers.
// The process around that (the socket it listens on, how it reaches its
// directory, signals) is cmd/internal/serve's.
//
// It imports the model, the store's API (package store), its records
// (store/record), the engine interface (store/kv) and the Badger engine
// (store/badgerkv); only wc-store and wc-compact link it.
package kvstore
