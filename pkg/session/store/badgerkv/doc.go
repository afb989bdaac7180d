// Package badgerkv is the embedded Badger engine of the store: a kv.Engine
// over one Badger database in a store directory (engine.go), the one
// configuration every open agrees on and the open itself (options.go,
// open.go), the classification of Badger's errors (errors.go), and the
// maintenance only Badger has (maintain.go: level-0 merges, table counts,
// pinning tables, checksums, the copy of a rebuild), which the store
// reaches through an interface it type-asserts (kvstore.dirEngine), and
// the release of the table pages Badger maps (pages_linux.go), which the
// store calls by name: it releases them while Badger opens, before there
// is an engine to assert. The store directory around the database (its
// lock, turnstile, recovery of a rebuild) is the store's.
//
// It is the only package that imports Badger, and only the store may
// import it, so that only the commands that open a store directory
// themselves (wc-store, wc-compact) link Badger: TestOnlyBadgerkvImportsBadger
// in cmd/wc-store holds both.
//
// Transactions are Badger's: a View or an Update sees one snapshot, and an
// Update fails with kv.ErrConflict when a key it read changed. Badger also
// counts as read every key an iterator of an Update visited and every key
// it sought to, so scans conflict too (a retry more, never a lost check).
// Limits: a value fits in one value-log file; MaxTxnOps is Badger's count
// of writes, in which a key written twice counts twice; there is no byte
// limit in the interface's terms, since Badger counts a value kept in its
// value log as a pointer, and it refuses a transaction by its own measure
// with kv.ErrTooBig.
package badgerkv
