// Package open reaches the store for a command: through the resident
// store process (dialled, or started when there is none), or through a
// private store process of its own; DirectOptions is what a command that
// opens the store in the process (Spec.Direct) is given. It holds the
// process knowledge of that: environment variables, sockets, exec.
//
// A store on etcd (IsSharedURL) is always reached through a wc-store,
// whose resident socket is in the user's runtime directory
// (SharedSocket).
//
// It imports the store's API (package store), its client (store/remote),
// the checks of a store directory (store/storedir) and
// golang.org/x/sys/unix, and never cmd/internal/command (which imports
// it): errors that are none of the store's kinds are a FailedError, which
// command maps to its exit status.
package open
