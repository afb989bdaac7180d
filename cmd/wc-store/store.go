package main

import (
	"errors"
	"os"

	"github.com/wctoolkit/wc/cmd/internal/tool"
	"github.com/wctoolkit/wc/cmd/internal/tool/local"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/client"
)

func run(c *tool.Ctx) error {
	if c.Args().Len() > 0 {
		return tool.Usagef("wc-store takes no arguments")
	}
	dir, err := c.StoreDir()
	if err != nil {
		return err
	}
	timeout, err := c.LockTimeout()
	if err != nil {
		return err
	}
	if c.Bool("stop") {
		stopped, err := client.Shutdown(dir, timeout)
		if err != nil {
			return err
		}
		return c.PrintJSON(struct {
			Store   string `json:"store"`
			Stopped bool   `json:"stopped"`
		}{dir, stopped})
	}
	if c.Duration("idle") < 0 {
		return tool.Usagef("--idle must not be negative")
	}
	var printErr error
	err = local.Serve(dir, c.Bool("sync"), timeout, c.Duration("idle"), func() {
		printErr = c.PrintJSON(struct {
			Store  string `json:"store"`
			Socket string `json:"socket"`
			PID    int    `json:"pid"`
		}{dir, client.SocketPath(dir), os.Getpid()})
		if printErr == nil {
			printErr = c.Flush()
		}
	})
	if errors.Is(err, store.ErrBusy) {
		return &tool.Error{Code: tool.ExitBusy, Msg: err.Error(),
			Hints: []string{"another wc-store serves it (wc-store --stop stops it), or a command holds it past --lock-timeout"}}
	}
	if errors.Is(err, store.ErrStoreGone) {
		return &tool.Error{Code: tool.ExitFailure, Msg: err.Error()}
	}
	if err != nil {
		return err
	}
	return printErr
}
