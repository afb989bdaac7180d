// Package record holds the store's records and their codecs, one codec a
// record: a node (its running totals, then its message, or a reference to
// an earlier node holding it), a session's metadata, the listing summary
// that wc-ls filters and prints, and the backup stream of wc-export
// --format backup. The codecs are written by hand where encoding/json or
// gjson cost a benchmark's target (BenchmarkExportMarkdown, BenchmarkList,
// BenchmarkDecodeNode, BenchmarkDecodeMeta); the metadata keeps the bytes
// encoding/json wrote for it, so that every store reads the same.
//
// It imports the model (package session) and gjson, and nothing of the
// store, so that the commands that do not link Badger can read records.
package record
