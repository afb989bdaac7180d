// Package command is what every wc command shares: its Spec and Ctx, Run
// and Main, the common flags, the stdin grammar, output and streams,
// exit statuses and error lines, man pages, completion and the wc-sqlite
// runner. Ctx.Open and its kin open the store through package open, and
// map the errors it returns to exit statuses.
//
// (It is not named cli: every command's main.go imports urfave/cli, whose
// package is cli.)
//
// It imports urfave/cli, the model and its formats, the store's API
// (package store), its records and its directory (store/record,
// store/storedir), the store process's client (store/remote) and
// cmd/internal/open; never the store's logic (store/kvstore). Imports flow
// one way: command → open, never back.
package command
