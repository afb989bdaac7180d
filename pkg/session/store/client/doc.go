// Package client is the half of the store that commands link: the Handle
// they work through, its error kinds and queries, and the client of a store
// process (wc-store), which holds the store open and answers over a socket.
//
// It imports the model (package session), the records (store/record) and
// golang.org/x/sys/unix, and never Badger: a program that imports only this
// package starts in about half the time of one that links the store
// (package store, which builds on this one and serves it); a test of
// cmd/wc-store reads the binaries' build information to keep it so.
package client
