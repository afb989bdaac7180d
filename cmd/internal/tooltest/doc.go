// Package tooltest runs the wc binaries in tests: it builds them once per
// test process and runs testscript files with them on PATH, so that every
// script exercises real processes, real pipes and a real store; it also
// checks man pages against the command definitions (CheckManPage).
//
// Only tests import it. It imports testscript, cmd/internal/command and
// the store's API and client (store, store/remote).
package tooltest
