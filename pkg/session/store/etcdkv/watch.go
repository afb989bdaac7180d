package etcdkv

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

var _ kv.Watcher = (*Engine)(nil)

// watchRetry is how long a watch waits before it watches again after the
// cluster ended it (a member that lost its leader, a lost connection the
// client could not resume).
const watchRetry = 200 * time.Millisecond

// Watch reads in one transaction, then watches each prefix from the
// revision after its snapshot, so that every later commit comes, once.
// A watch etcd ends is started again from the revision after the last it
// passed on; one whose revisions were compacted away reads again (sync).
func (e *Engine) Watch(ctx context.Context, prefixes [][]byte, sync func(kv.Txn) error, changed func([]kv.Change) error) error {
	for {
		rev, err := e.syncAt(sync)
		if err != nil {
			return err
		}
		err = e.watchFrom(ctx, prefixes, rev+1, changed)
		if ctx.Err() != nil {
			return nil
		}
		if !errors.Is(err, rpctypes.ErrCompacted) {
			return err
		}
	}
}

// syncAt runs sync in a transaction whose snapshot it fixes first, and
// returns that revision.
func (e *Engine) syncAt(sync func(kv.Txn) error) (int64, error) {
	var rev int64
	err := e.View(func(t kv.Txn) error {
		tx := t.(*txn)
		if _, err := tx.get(e.ns, clientv3.WithCountOnly()); err != nil {
			return err
		}
		rev = tx.rev
		return sync(t)
	})
	return rev, err
}

// watchFrom passes on the changes under prefixes from revision from on,
// until ctx ends (nil), a callback fails, the engine closes, or the
// revisions it would resume from were compacted (rpctypes.ErrCompacted).
func (e *Engine) watchFrom(ctx context.Context, prefixes [][]byte, from int64, changed func([]kv.Change) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan batch)
	failed := make(chan error, len(prefixes))
	for _, p := range prefixes {
		go func() { failed <- e.watchPrefix(ctx, string(p), from, batches) }()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-failed:
			return err
		case b := <-batches:
			b.done <- changed(b.changes)
		}
	}
}

// batch is one revision's changes under a prefix; done takes the
// callback's answer.
type batch struct {
	changes []kv.Change
	done    chan error
}

// watchPrefix watches one prefix, resuming after what it passed on when
// etcd ends the watch, and sends each revision's changes to batches.
func (e *Engine) watchPrefix(ctx context.Context, prefix string, from int64, batches chan<- batch) error {
	done := make(chan error)
	for {
		if e.closed.Load() {
			return kv.ErrWatchEnded
		}
		wctx := clientv3.WithRequireLeader(ctx)
		ch := e.cli.Watch(wctx, e.ns+prefix, clientv3.WithPrefix(), clientv3.WithRev(from))
		for resp := range ch {
			if resp.CompactRevision != 0 {
				return rpctypes.ErrCompacted
			}
			if resp.Canceled || resp.Err() != nil {
				break
			}
			for i := 0; i < len(resp.Events); {
				rev := resp.Events[i].Kv.ModRevision
				var changes []kv.Change
				for ; i < len(resp.Events) && resp.Events[i].Kv.ModRevision == rev; i++ {
					ev := resp.Events[i]
					c := kv.Change{Key: ev.Kv.Key[len(e.ns):]}
					if ev.Type == mvccpb.DELETE {
						c.Deleted = true
					} else {
						c.Value = ev.Kv.Value
					}
					changes = append(changes, c)
				}
				select {
				case batches <- batch{changes, done}:
				case <-ctx.Done():
					return nil
				}
				if err := <-done; err != nil {
					return err
				}
				from = rev + 1
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		select {
		case <-time.After(watchRetry):
		case <-ctx.Done():
			return nil
		}
	}
}
