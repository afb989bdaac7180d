package etcdstore

import (
	"errors"
	"time"

	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/etcdkv"
	"github.com/wctoolkit/wc/pkg/session/store/kvstore"
)

// IsURL tells a store argument naming an etcd store from a directory.
func IsURL(s string) bool { return etcdkv.IsURL(s) }

// Open opens the store the URL names for mode, its password (if it names
// a user) from getenv(etcdkv.PasswordEnv). opts tune the store as for a
// directory, but for Dir, Engine and Name, which Open sets; LockTimeout
// bounds how long Open waits for an unavailable cluster, and how long
// each operation retries. Errors name the store as etcdkv.Config.String
// does, never its password.
func Open(rawURL string, getenv func(string) string, opts kvstore.Options, mode kvstore.Mode) (*kvstore.Store, error) {
	cfg, err := etcdkv.ParseURL(rawURL, getenv)
	if err != nil {
		return nil, err
	}
	e, err := connect(cfg, time.Now().Add(opts.LockTimeout))
	if err != nil {
		return nil, err
	}
	opts.Dir, opts.Engine, opts.Name = "", e, cfg.String()
	return kvstore.Open(opts, mode)
}

// connect opens the engine, waiting out an unavailable cluster until
// deadline; then the busy error.
func connect(cfg etcdkv.Config, deadline time.Time) (*etcdkv.Engine, error) {
	delay := 50 * time.Millisecond
	for {
		e, err := etcdkv.Open(cfg)
		if err == nil {
			return e, nil
		}
		msg := "store " + cfg.String() + ": " + err.Error()
		if !errors.Is(err, etcdkv.ErrUnavailable) {
			return nil, errors.New(msg)
		}
		if time.Now().Add(delay).After(deadline) {
			return nil, &store.KindError{Msg: msg, Kind: kvstore.ErrBusy,
				Hints: []string{"raise --lock-timeout or WC_LOCK_TIMEOUT to wait longer for the cluster"}}
		}
		time.Sleep(delay)
		delay = min(2*delay, time.Second)
	}
}
