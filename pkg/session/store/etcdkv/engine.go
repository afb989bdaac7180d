package etcdkv

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// etcd's defaults, which the engine keeps within: --max-txn-ops (the
// compares and the writes of one Txn are each limited to it) and
// --max-request-bytes (a whole request).
const (
	etcdMaxTxnOps       = 128
	etcdMaxRequestBytes = 1536 * 1024
)

// limits leave a quarter MiB of a request's 1.5 MiB for what the store
// does not count: the prefix of every key, the compares, the framing.
var limits = kv.Limits{
	MaxValueBytes: 1 << 20,
	MaxTxnBytes:   1280 << 10,
	MaxTxnOps:     etcdMaxTxnOps,
}

// Per-operation framing the size estimate adds (protobuf tags, lengths,
// the RequestOp and Compare wrappers), rounded up.
const (
	opOverhead      = 24
	compareOverhead = 32
)

// Engine is a store's part of an etcd cluster, as a kv.Engine. It is safe
// for concurrent use; each View and Update is a transaction of its own.
type Engine struct {
	cfg    Config
	cli    *clientv3.Client
	ns     string // every key of the store begins with it
	closed atomic.Bool
}

var (
	_ kv.Engine  = (*Engine)(nil)
	_ kv.Bounded = (*Engine)(nil)
)

// namespace is the prefix of a store's keys: a slash, the store's
// prefix, a slash and a NUL byte. The NUL ends it, so no store's keys lie
// inside another's (a/b is not inside a), and an etcd permission on
// "/a/" covers the store a and those below it.
func namespace(prefix string) string { return "/" + prefix + "/\x00" }

// Open connects to the cluster and checks, with one read of the store's
// key range, that a member with a leader answers and the user may read
// there. It fails with ErrUnavailable, ErrDenied or a configuration error.
func Open(cfg Config) (*Engine, error) {
	if err := checkPrefix(cfg.Prefix); err != nil {
		return nil, newError(errConfig, "etcd: %v", err)
	}
	if len(cfg.Endpoints) == 0 {
		return nil, newError(errConfig, "etcd: no endpoints")
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	e := &Engine{cfg: cfg, ns: namespace(cfg.Prefix)}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		// gRPC's floor for a client's keepalive is 10s: a member that
		// stops answering (SIGSTOP, a partition) is left within 13s, and
		// until then a request sent to it times out on its own.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		TLS:                  cfg.TLS,
		Username:             cfg.Username,
		Password:             cfg.Password,
		Logger:               zap.NewNop(),
		// A member back from a restart is used again within a second,
		// not after gRPC's default backoff of up to two minutes.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: cfg.DialTimeout,
		})},
	})
	if err != nil {
		return nil, e.connectError(err)
	}
	e.cli = cli
	// Reaching a member is what DialTimeout bounds, this first answer
	// included: the client does not wait for a connection before it.
	ctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(context.Background()), min(cfg.DialTimeout, cfg.RequestTimeout))
	defer cancel()
	if _, err := cli.Get(ctx, e.ns, clientv3.WithCountOnly()); err != nil {
		cli.Close()
		return nil, e.connectError(err)
	}
	return e, nil
}

// connectError is the error of an Open that reached no member, with TLS's
// own reason when TLS is what failed.
func (e *Engine) connectError(err error) error {
	err = e.mapError("connecting", err, false, min(e.cfg.DialTimeout, e.cfg.RequestTimeout))
	if errors.Is(err, ErrUnavailable) && e.cfg.TLS != nil {
		if why := e.tlsTrouble(); why != nil {
			return why
		}
	}
	return err
}

// tlsTrouble tells why TLS fails with the first member that answers a
// TCP connection, which gRPC hides behind its deadline; nil when the
// handshake succeeds or nothing answers.
func (e *Engine) tlsTrouble() error {
	for _, ep := range e.cfg.Endpoints {
		conf := e.cfg.TLS.Clone()
		conf.NextProtos = []string{"h2"}
		if conf.ServerName == "" {
			conf.ServerName, _, _ = net.SplitHostPort(ep)
		}
		raw, err := net.DialTimeout("tcp", ep, e.cfg.DialTimeout)
		if err != nil {
			continue
		}
		conn := tls.Client(raw, conf)
		conn.SetDeadline(time.Now().Add(e.cfg.DialTimeout))
		err = conn.Handshake()
		if err == nil {
			// TLS 1.3 servers refuse a client's certificate after the
			// handshake, in their first record.
			conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			var b [1]byte
			if _, err = conn.Read(b[:]); isTimeout(err) {
				err = nil
			}
		}
		conn.Close()
		if err != nil {
			return newError(ErrUnavailable, "etcd: connecting failed: TLS with %s failed: %s", ep, e.redact(firstLine(err.Error())))
		}
		return nil
	}
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// requestContext bounds one request and refuses it on a member that has
// lost its leader, at once rather than after the server's own timeout.
// The request's timeout is RequestTimeout, less when deadline (if set)
// comes sooner, but never below minRequestTimeout: see Within.
func (e *Engine) requestContext(deadline time.Time) (context.Context, context.CancelFunc, time.Duration) {
	timeout := e.cfg.RequestTimeout
	if !deadline.IsZero() {
		timeout = min(timeout, max(time.Until(deadline), minRequestTimeout))
	}
	ctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(context.Background()), timeout)
	return ctx, cancel, timeout
}

// minRequestTimeout is the least a request bounded by a deadline may
// take: a healthy member answers a page well within it, so that only a
// stalled cluster meets it.
const minRequestTimeout = 500 * time.Millisecond

// Within is the engine with each request of its transactions bounded by
// deadline too (kv.Bounded): a transaction run when the cluster stalls
// fails about at deadline, not RequestTimeout after its last request
// began. Close of it closes nothing.
func (e *Engine) Within(deadline time.Time) kv.Engine { return &bounded{e: e, deadline: deadline} }

type bounded struct {
	e        *Engine
	deadline time.Time
}

func (b *bounded) View(fn func(kv.Txn) error) error   { return b.e.view(fn, b.deadline) }
func (b *bounded) Update(fn func(kv.Txn) error) error { return b.e.update(fn, b.deadline) }
func (b *bounded) Limits() kv.Limits                  { return limits }
func (b *bounded) Close() error                       { return nil }

// Config is the configuration the engine was opened with.
func (e *Engine) Config() Config { return e.cfg }

// Limits are the sizes the engine takes: at most 128 writes and 1.25 MiB
// of keys and values in a transaction, 1 MiB in a value.
func (e *Engine) Limits() kv.Limits { return limits }

// Close closes the connection; transactions under way fail.
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	return e.cli.Close()
}

// View runs fn on a snapshot: the revision of its first read.
func (e *Engine) View(fn func(kv.Txn) error) error { return e.view(fn, time.Time{}) }

func (e *Engine) view(fn func(kv.Txn) error, deadline time.Time) error {
	if e.closed.Load() {
		return newError(ErrClosed, "etcd: the engine is closed")
	}
	t := &txn{e: e, deadline: deadline}
	err := fn(t)
	t.done = true
	if err == nil {
		err = t.err
	}
	return err
}

// Update runs fn on a snapshot and commits its writes in one etcd Txn
// that compares the revision of every key fn read with Get.
func (e *Engine) Update(fn func(kv.Txn) error) error { return e.update(fn, time.Time{}) }

func (e *Engine) update(fn func(kv.Txn) error, deadline time.Time) error {
	if e.closed.Load() {
		return newError(ErrClosed, "etcd: the engine is closed")
	}
	t := &txn{e: e, deadline: deadline, update: true, reads: map[string]int64{}, readVals: map[string][]byte{}, writes: map[string]pendingWrite{}}
	err := fn(t)
	t.done = true
	if err == nil {
		err = t.err
	}
	if err != nil {
		return err
	}
	return t.commit()
}
