// Package tool is what every wc command shares: the common flags, the stdin
// grammar, the store protocol (validate, lock, open, work, close, then
// print), exit statuses and error lines. It is the only package that knows
// about processes: arguments, standard streams, signals, the clock.
//
// It imports urfave/cli, the model and its formats, and the store's
// Badger-free half (store/client, store/record); never package store.
package tool
