// Package reliability holds the crash, concurrency and security suites of
// the wc commands (RELIABILITY.md lists which test proves which promise).
// Every test runs the real binaries, built once per test process by
// cmd/internal/tooltest, against a store in a temporary directory; the
// state they leave is then read back both through the commands (wc-ls,
// wc-export) and in process with pkg/session/store, read-only, once every
// command has exited.
//
// scripts/crash-test.sh runs the crash suite for as many iterations as asked.
//
// It is tests only; they import cmd/internal/tooltest, the model and the
// store (store, store/kvstore, store/remote, store/record).
package reliability
