// Package client is what commands link besides the store's API (package
// store): the wire protocol and the client of a store process (wc-store),
// which holds the store open and answers over a socket, and the files of
// a store directory (its lock, its owner).
//
// It imports the model (package session), the API (package store), the
// records (store/record) and golang.org/x/sys/unix, and never Badger: a
// program that imports only this package starts in about half the time of
// one that links the store (package kvstore, which builds on this one and
// serves it); a test of cmd/wc-store reads the binaries' build information
// to keep it so.
package client
