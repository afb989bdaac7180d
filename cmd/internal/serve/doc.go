// Package serve opens the store in this process: wc-store serves it to the
// other commands (as the resident store process, or privately to one
// command that opens the store directly), and wc-compact opens it for its
// batches. It is the only command package that links the store's logic;
// the others reach it through package remote.
//
// It holds what a store process knows of processes and the file system
// that the store's serving (kvstore.Serve) does not: the environment it was
// started with, signals, its owner-only socket, reaching its directory
// through a descriptor, noticing a parent that died.
//
// (Named for wc-store's part, most of it; wc-compact uses only Open.)
//
// It imports cmd/internal/command, cmd/internal/open and the store (store,
// store/kvstore, store/remote).
package serve
