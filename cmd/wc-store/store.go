package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wctoolkit/wc/cmd/internal/command"
	"github.com/wctoolkit/wc/cmd/internal/open"
	"github.com/wctoolkit/wc/cmd/internal/serve"
	"github.com/wctoolkit/wc/pkg/session/store/kvstore"
	"github.com/wctoolkit/wc/pkg/session/store/remote"
	"github.com/wctoolkit/wc/pkg/session/store/storedir"
)

func run(c *command.Ctx) error {
	if c.Bool("copy") {
		timeout, err := c.LockTimeout()
		if err != nil {
			return err
		}
		return copyStores(c, timeout)
	}
	if c.Args().Len() > 0 {
		return command.Usagef("wc-store takes no arguments")
	}
	dir, err := c.StoreDir()
	if err != nil {
		return err
	}
	timeout, err := c.LockTimeout()
	if err != nil {
		return err
	}
	if open.IsSharedURL(dir) {
		return runShared(c, dir, timeout)
	}
	if c.Bool("check") {
		return check(c, dir, timeout)
	}
	if c.IsSet("salvage") {
		return salvage(c, dir, timeout)
	}
	if c.Bool("stop") {
		if _, err := storedir.CheckStore(dir, storedir.Trust{}); err != nil {
			return err
		}
		stopped, err := remote.Shutdown(dir, timeout)
		if err != nil {
			return err
		}
		return c.PrintJSON(struct {
			Store   string `json:"store"`
			Stopped bool   `json:"stopped"`
		}{dir, stopped})
	}
	if c.Duration("idle") < 0 {
		return command.Usagef("--idle must not be negative")
	}
	var printErr error
	err = serve.Serve(dir, c.Bool("sync"), timeout, c.Duration("idle"), func() {
		printErr = c.PrintJSON(struct {
			Store  string `json:"store"`
			Socket string `json:"socket"`
			PID    int    `json:"pid"`
		}{dir, remote.SocketPath(dir), os.Getpid()})
		if printErr == nil {
			printErr = c.Flush()
		}
	})
	if errors.Is(err, kvstore.ErrBusy) {
		return &command.Error{Code: command.ExitBusy, Msg: err.Error(),
			Hints: []string{"another wc-store serves it (wc-store --stop stops it), or a command holds it past --lock-timeout"}}
	}
	if errors.Is(err, kvstore.ErrStoreGone) {
		return &command.Error{Code: command.ExitFailure, Msg: err.Error()}
	}
	if err != nil {
		return err
	}
	return printErr
}

// runShared is run for a store on etcd: it has no files of wc's to
// check or salvage (etcd keeps them, and checks them itself).
func runShared(c *command.Ctx, url string, timeout time.Duration) error {
	name := open.StoreName(url)
	switch {
	case c.Bool("check"), c.IsSet("salvage"):
		return command.Usagef("--check and --salvage read a store directory's files; %s is a store on etcd, whose files etcd keeps", name).
			WithHint("etcdctl endpoint health and etcdctl check perf check the cluster; see docs/etcd.md")
	case c.Bool("stop"):
		stopped, err := open.ShutdownShared(url, timeout)
		if err != nil {
			return err
		}
		return c.PrintJSON(struct {
			Store   string `json:"store"`
			Stopped bool   `json:"stopped"`
		}{name, stopped})
	case c.Duration("idle") < 0:
		return command.Usagef("--idle must not be negative")
	}
	sock, _, err := open.SharedSocket(url)
	if err != nil {
		return err
	}
	var printErr error
	err = serveEtcd(url, false, timeout, c.Duration("idle"), func() {
		printErr = c.PrintJSON(struct {
			Store  string `json:"store"`
			Socket string `json:"socket"`
			PID    int    `json:"pid"`
		}{name, sock, os.Getpid()})
		if printErr == nil {
			printErr = c.Flush()
		}
	})
	if errors.Is(err, kvstore.ErrBusy) {
		return &command.Error{Code: command.ExitBusy, Msg: err.Error(),
			Hints: []string{"wc-store --stop stops the wc-store that serves it"}}
	}
	if err != nil {
		return err
	}
	return printErr
}

// check verifies the store at rest: its resident process, if any, closes
// it first.
func check(c *command.Ctx, dir string, timeout time.Duration) error {
	if _, err := remote.Shutdown(dir, timeout); err != nil {
		return err
	}
	report, err := kvstore.Check(kvstore.Options{Dir: dir, LockTimeout: timeout})
	if err != nil {
		return err
	}
	if err := c.PrintJSON(report); err != nil {
		return err
	}
	if !report.OK {
		return command.Partial(&command.Error{Code: command.ExitDamaged, Msg: fmt.Sprintf("store %s is damaged: %s, listed in the report", dir, count(len(report.Problems), "problem")),
			Hints: []string{"wc-store --salvage NEWDIR copies every intact session into a new store"}})
	}
	return nil
}

// salvage copies the intact sessions into a new store, with the store at
// rest.
func salvage(c *command.Ctx, dir string, timeout time.Duration) error {
	into := c.String("salvage")
	if into == "" {
		return command.Usagef("--salvage needs a directory for the new store")
	}
	into, err := filepath.Abs(into)
	if err != nil {
		return err
	}
	if into == dir {
		return command.Usagef("--salvage copies into a new store, not into the store it reads")
	}
	if _, err := remote.Shutdown(dir, timeout); err != nil {
		return err
	}
	report, err := kvstore.Salvage(kvstore.Options{Dir: dir, LockTimeout: timeout}, into)
	if err != nil {
		return err
	}
	if err := c.PrintJSON(report); err != nil {
		return err
	}
	if !report.OK {
		return command.Partial(&command.Error{Code: command.ExitDamaged, Msg: fmt.Sprintf("salvaged %s into %s, %d unverified; %s lost, listed in the report", count(len(report.Salvaged), "session"), into, len(report.Unverified), count(len(report.Lost), "session"))})
	}
	return nil
}

// count is n things, in the singular for one.
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
