package etcdstore

import (
	"errors"
	"fmt"
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
	return OpenWithin(rawURL, getenv, opts, mode, opts.LockTimeout)
}

// OpenWithin is Open waiting for an unavailable cluster only within, not
// opts.LockTimeout: a resident process reports to the command that started
// it within the command's lock timeout, and retries operations longer.
func OpenWithin(rawURL string, getenv func(string) string, opts kvstore.Options, mode kvstore.Mode, within time.Duration) (*kvstore.Store, error) {
	cfg, err := etcdkv.ParseURL(rawURL, getenv)
	if err != nil {
		return nil, err
	}
	e, err := connect(cfg, time.Now().Add(within))
	if err != nil {
		return nil, err
	}
	opts.Dir, opts.Engine, opts.Name = "", e, cfg.String()
	return kvstore.Open(opts, mode)
}

// minDialTimeout is the shortest a try to reach the cluster may take: a
// member on loopback answers within it.
const minDialTimeout = 100 * time.Millisecond

// connect opens the engine, waiting out an unavailable cluster until
// deadline; then the busy error.
func connect(cfg etcdkv.Config, deadline time.Time) (*etcdkv.Engine, error) {
	start, delay := time.Now(), 50*time.Millisecond
	dialTimeout := cfg.DialTimeout
	if dialTimeout <= 0 {
		dialTimeout = etcdkv.DefaultDialTimeout
	}
	for {
		// Each try waits no longer than what is left, so that an
		// unreachable cluster is reported by the deadline, not a dial
		// timeout after it (the command gives up at the deadline).
		cfg.DialTimeout = max(min(dialTimeout, time.Until(deadline)), minDialTimeout)
		e, err := etcdkv.Open(cfg)
		if err == nil {
			return e, nil
		}
		msg := "store " + cfg.String() + ": " + err.Error()
		if !errors.Is(err, etcdkv.ErrUnavailable) {
			return nil, errors.New(msg)
		}
		if time.Now().Add(delay).After(deadline) {
			msg += fmt.Sprintf(" (tried for %s)", time.Since(start).Round(100*time.Millisecond))
			return nil, &store.KindError{Msg: msg, Kind: kvstore.ErrBusy,
				Hints: []string{"raise --lock-timeout or WC_LOCK_TIMEOUT to wait longer for the cluster"}}
		}
		time.Sleep(delay)
		delay = min(2*delay, time.Second)
	}
}
