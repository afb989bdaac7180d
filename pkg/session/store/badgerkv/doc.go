// Package badgerkv is the embedded Badger engine of the store: a kv.Engine
// over one Badger database in a store directory, and the maintenance only
// Badger has, which the store reaches through the optional interface it
// type-asserts.
//
// It is the only package that imports Badger (TestOnlyBadgerkvImportsBadger
// in cmd/internal/tooltest holds that), and only the store and the
// commands that open a store directory themselves (wc-store, wc-compact)
// may import it.
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
