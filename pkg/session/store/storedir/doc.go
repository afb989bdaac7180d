// Package storedir holds what commands and the store share about the
// files of a store directory: its lock (flock with a deadline, the error
// naming the process that holds it) and the checks of who owns it and
// what is in it, before anything there is used.
//
// It imports the store's API (package store) and golang.org/x/sys/unix.
package storedir
