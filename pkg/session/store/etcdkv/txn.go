package etcdkv

import (
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// txn reads at one revision, the header revision of its first read, and
// holds its writes until Update commits them.
type txn struct {
	e        *Engine
	deadline time.Time // bounds each request too, when set (Engine.Within)
	update   bool
	rev      int64 // the snapshot; 0 until the first read
	// reads are the keys Get read in an Update, with their ModRevision at
	// the snapshot (0: absent), each compared at the commit.
	reads      map[string]int64
	readVals   map[string][]byte // what they held at the snapshot: read again, a key costs no request
	readBytes  int64             // the compares' share of the request
	writes     map[string]pendingWrite
	writeBytes int64 // keys and values, as Limits count them
	err        error // a failed read the caller could not be told of (an iterator's page)
	done       bool
}

type pendingWrite struct {
	value   []byte
	deleted bool
}

// snapshot returns the options that read at the transaction's revision,
// once it has one.
func (t *txn) snapshot(opts ...clientv3.OpOption) []clientv3.OpOption {
	if t.rev != 0 {
		opts = append(opts, clientv3.WithRev(t.rev))
	}
	return opts
}

// get reads a range at the snapshot, fixing the snapshot at the first
// read. An error also fails the transaction as a whole.
func (t *txn) get(key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if t.done {
		return nil, newError(errUnexpected, "etcd: the transaction has ended")
	}
	if t.err != nil {
		return nil, t.err
	}
	ctx, cancel, timeout := t.e.requestContext(t.deadline)
	defer cancel()
	resp, err := t.e.cli.Get(ctx, key, t.snapshot(opts...)...)
	if err != nil {
		t.err = t.e.mapError("read", err, false, timeout)
		return nil, t.err
	}
	if t.rev == 0 {
		t.rev = resp.Header.Revision
	}
	return resp, nil
}

func (t *txn) Get(key []byte) ([]byte, error) {
	k := string(key)
	if t.update {
		if w, ok := t.writes[k]; ok {
			if w.deleted {
				return nil, kv.ErrNotFound
			}
			return w.value, nil
		}
		if rev, seen := t.reads[k]; seen {
			if rev == 0 {
				return nil, kv.ErrNotFound
			}
			return t.readVals[k], nil
		}
		if len(t.reads) >= etcdMaxTxnOps {
			return nil, newError(kv.ErrTooBig, "etcd: a transaction compares at most %d keys read with Get", etcdMaxTxnOps)
		}
		if !t.fits(len(t.writes), t.writeBytes, t.readBytes+t.compareSize(k)) {
			return nil, newError(kv.ErrTooBig, "etcd: the transaction's compares would not fit in one request")
		}
	}
	resp, err := t.get(t.e.ns + k)
	if err != nil {
		return nil, err
	}
	var modRev int64
	var value []byte
	if len(resp.Kvs) == 1 {
		modRev, value = resp.Kvs[0].ModRevision, resp.Kvs[0].Value
	}
	if t.update {
		t.reads[k] = modRev
		t.readVals[k] = value
		t.readBytes += t.compareSize(k)
	}
	if modRev == 0 {
		return nil, kv.ErrNotFound
	}
	return value, nil
}

func (t *txn) Set(key, value []byte) error {
	if len(value) > limits.MaxValueBytes {
		return newError(kv.ErrTooBig, "etcd: a value of %d bytes is over the %d-byte limit", len(value), limits.MaxValueBytes)
	}
	return t.write(string(key), pendingWrite{value: append([]byte{}, value...)})
}

func (t *txn) Delete(key []byte) error {
	return t.write(string(key), pendingWrite{deleted: true})
}

func (t *txn) write(k string, w pendingWrite) error {
	if !t.update {
		return newError(errReadOnly, "etcd: a read-only transaction cannot write")
	}
	if t.done {
		return newError(errUnexpected, "etcd: the transaction has ended")
	}
	ops, size := len(t.writes), t.writeBytes
	if old, ok := t.writes[k]; ok {
		size -= int64(len(old.value))
	} else {
		ops++
		size += int64(len(k))
	}
	size += int64(len(w.value))
	if ops > limits.MaxTxnOps {
		return newError(kv.ErrTooBig, "etcd: a transaction holds at most %d writes", limits.MaxTxnOps)
	}
	if size > limits.MaxTxnBytes {
		return newError(kv.ErrTooBig, "etcd: a transaction writes at most %d bytes of keys and values", limits.MaxTxnBytes)
	}
	if !t.fits(ops, size, t.readBytes) {
		return newError(kv.ErrTooBig, "etcd: the transaction would not fit in one request")
	}
	t.writes[k] = w
	t.writeBytes = size
	return nil
}

func (t *txn) compareSize(k string) int64 {
	return int64(len(t.e.ns) + len(k) + compareOverhead)
}

// fits tells whether a commit of ops writes of writeBytes, with compares
// of compareBytes, stays under etcd's request limit.
func (t *txn) fits(ops int, writeBytes, compareBytes int64) bool {
	size := writeBytes + int64(ops)*int64(len(t.e.ns)+opOverhead) + compareBytes
	return size <= etcdMaxRequestBytes-4096
}

// commit sends the writes in one Txn, If every key read with Get still
// has the ModRevision it had at the snapshot.
func (t *txn) commit() error {
	if len(t.writes) == 0 {
		return nil
	}
	cmps := make([]clientv3.Cmp, 0, len(t.reads))
	for k, rev := range t.reads {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(t.e.ns+k), "=", rev))
	}
	ops := make([]clientv3.Op, 0, len(t.writes))
	for k, w := range t.writes {
		if w.deleted {
			ops = append(ops, clientv3.OpDelete(t.e.ns+k))
		} else {
			ops = append(ops, clientv3.OpPut(t.e.ns+k, string(w.value)))
		}
	}
	ctx, cancel, timeout := t.e.requestContext(t.deadline)
	defer cancel()
	resp, err := t.e.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return t.e.mapError("commit", err, true, timeout)
	}
	if !resp.Succeeded {
		return newError(kv.ErrConflict, "etcd: commit refused: a key the transaction read was changed by another commit")
	}
	return nil
}
