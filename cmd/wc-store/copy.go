package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/cmd/internal/open"
	"github.com/wctoolkit/wc/pkg/session/store/etcdkv"
	"github.com/wctoolkit/wc/pkg/session/store/etcdstore"
	"github.com/wctoolkit/wc/pkg/session/store/kvstore"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
)

// The passwords of the two stores of a copy, when their etcd users differ;
// each falls back on etcdkv.PasswordEnv.
const (
	copyFromPasswordEnv = "WC_COPY_FROM_PASSWORD"
	copyToPasswordEnv   = "WC_COPY_TO_PASSWORD"
)

// copyWorkers is how many sessions a copy to or from etcd has under way.
const copyWorkers = 8

// copyStores is wc-store --copy SRC DST: kvstore.Copy between the two
// stores, each a directory or an etcd URL, opened here (a directory's
// resident process is stopped first, and the lock held while copying).
func copyStores(c *command.Ctx, timeout time.Duration) error {
	if c.Args().Len() != 2 {
		return command.Usagef("--copy takes two stores: SRC and DST (directories or etcd:// URLs)")
	}
	if c.Bool("check") || c.Bool("stop") || c.IsSet("salvage") {
		return command.Usagef("--copy goes with none of --check, --stop and --salvage")
	}
	src, err := copyArg(c.Args().Get(0))
	if err != nil {
		return err
	}
	dst, err := copyArg(c.Args().Get(1))
	if err != nil {
		return err
	}
	if src == dst {
		return command.Usagef("--copy copies into another store, not into the one it reads")
	}
	if !open.IsSharedURL(src) {
		if _, err := os.Stat(src); err != nil {
			return &command.Error{Code: command.ExitFailure, Msg: "no store at " + src + " to copy"}
		}
	}
	// Every transaction on etcd waits for the network and a quorum's
	// fsync: sessions go several at a time (scripts/copy-bench.sh).
	workers := 1
	if open.IsSharedURL(src) || open.IsSharedURL(dst) {
		workers = copyWorkers
	}
	from, err := openCopy(src, kvstore.Read, copyFromPasswordEnv, timeout, workers == 1)
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := openCopy(dst, kvstore.Write, copyToPasswordEnv, timeout, workers == 1)
	if err != nil {
		return err
	}
	report, err := kvstore.Copy(from, to, kvstore.CopyOptions{Workers: workers, Item: func(it *kvstore.CopyItem) error {
		if err := c.PrintJSON(it); err != nil {
			return err
		}
		return c.Flush()
	}})
	if cerr := to.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return command.Partial(err)
	}
	report.From, report.To = open.StoreName(src), open.StoreName(dst)
	if err := c.PrintJSON(report); err != nil {
		return err
	}
	switch {
	case len(report.Damaged)+len(report.Mismatch) > 0:
		return command.Partial(&command.Error{Code: command.ExitDamaged,
			Msg: fmt.Sprintf("copied %d of %d sessions: %d damaged in %s, %d not read back the same from %s, %d differing there; listed in the report",
				report.Copied+report.Present, report.Sessions, len(report.Damaged), report.From, len(report.Mismatch), report.To, len(report.Differs))})
	case len(report.Differs) > 0:
		return command.Partial(&command.Error{Code: command.ExitFailure,
			Msg:   fmt.Sprintf("copied %d of %d sessions: %d differ in %s and were left as they are, listed in the report", report.Copied+report.Present, report.Sessions, len(report.Differs), report.To),
			Hints: []string{"compare them, then wc-rm --store DST the copy you do not want and run the copy again"}})
	}
	return nil
}

// copyArg is a store as --copy names it: an etcd URL as given, a
// directory absolute.
func copyArg(arg string) (string, error) {
	if arg == "" {
		return "", command.Usagef("--copy: a store is empty")
	}
	if open.IsSharedURL(arg) {
		return arg, nil
	}
	return filepath.Abs(arg)
}

// openCopy opens one store of a copy for mode: an etcd URL with the
// password from passwordEnv (else etcdkv.PasswordEnv), a directory once
// its resident process, if any, has closed it (bulk: used from one
// goroutine, its memory bounded by the largest session). A directory stays locked
// (shared for the source, exclusive for the target) until it is closed,
// so that no command writes to it meanwhile.
func openCopy(arg string, mode kvstore.Mode, passwordEnv string, timeout time.Duration, bulk bool) (*kvstore.Store, error) {
	if open.IsSharedURL(arg) {
		getenv := func(k string) string {
			if v := os.Getenv(passwordEnv); k == etcdkv.PasswordEnv && v != "" {
				return v
			}
			return os.Getenv(k)
		}
		return etcdstore.Open(arg, getenv, kvstore.Options{LockTimeout: timeout}, mode)
	}
	if _, err := remote.Shutdown(arg, timeout); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	st, err := kvstore.Open(kvstore.Options{Dir: arg, LockTimeout: timeout, Bulk: bulk}, mode)
	if errors.Is(err, kvstore.ErrBusy) {
		return nil, &command.Error{Code: command.ExitBusy, Msg: err.Error(),
			Hints: []string{"a wc command holds it past --lock-timeout: wait for it, or raise --lock-timeout"}}
	}
	return st, err
}
