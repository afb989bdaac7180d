// Package remote is the client of a store process (wc-store): a Client is
// a store.Handle whose every operation is a request over a connection,
// resident (Dial) or private to one command (Attach).
//
// It imports the model (package session), the API (package store), the
// records (store/record), the protocol (store/wire), the store directory's
// files (store/storedir) and golang.org/x/sys/unix, and never Badger: a
// program that links it and not package kvstore starts in about half the
// time (a test of cmd/wc-store reads the binaries' build information to
// keep it so). socket.go still holds the process knowledge of a
// command's side (the raw Unix socket and its peer check, Dial, DialSocket,
// Shutdown, SocketPath); it belongs in cmd/internal, and moves there with
// the server that kvstore/resident.go still holds, whose tests dial it.
package remote
