// Package local opens the store in this process: wc-store serves it to the
// other commands (as the resident store process, or privately to one
// command that opens the store directly), and wc-compact opens it for its
// batches. It is the only command package that links the store; the others
// reach it through package client.
//
// It imports cmd/internal/tool and the store (store, store/client).
package local
