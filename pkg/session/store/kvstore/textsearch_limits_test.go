package kvstore

import (
	"math/rand/v2"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// etcdLimits are the limits etcdkv declares (etcd's defaults).
var etcdLimits = kv.Limits{MaxValueBytes: 1 << 20, MaxTxnBytes: 1280 << 10, MaxTxnOps: 128}

// limitedEngine is an engine that holds every transaction to limits, as
// etcd does (ErrTooBig beyond them): the index's writes must fit an etcd
// store's transactions.
type limitedEngine struct {
	kv.Engine
	limits kv.Limits
}

func (e *limitedEngine) Limits() kv.Limits { return e.limits }

func (e *limitedEngine) Update(fn func(kv.Txn) error) error {
	return e.Engine.Update(func(txn kv.Txn) error {
		return fn(&limitedTxn{Txn: txn, e: e})
	})
}

type limitedTxn struct {
	kv.Txn
	e          *limitedEngine
	ops, bytes int
}

func (t *limitedTxn) count(key, value []byte) error {
	l := t.e.limits
	if len(value) > l.MaxValueBytes || t.ops+1 > l.MaxTxnOps || int64(t.bytes+len(key)+len(value)) > l.MaxTxnBytes {
		return kv.ErrTooBig
	}
	t.ops++
	t.bytes += len(key) + len(value)
	return nil
}

func (t *limitedTxn) Set(key, value []byte) error {
	if err := t.count(key, value); err != nil {
		return err
	}
	return t.Txn.Set(key, value)
}

func (t *limitedTxn) Delete(key []byte) error {
	if err := t.count(key, nil); err != nil {
		return err
	}
	return t.Txn.Delete(key)
}

// TestIndexWithinEtcdLimits builds, folds and merges the index of a store
// whose engine holds transactions to etcd's limits: every write fits (the
// segments' chunks, the marks' deletions, the merges), and --grep still
// finds what a read of every message finds.
func TestIndexWithinEtcdLimits(t *testing.T) {
	dir := t.TempDir()
	st := open(t, dir, Write)
	lim := &limitedEngine{Engine: st.eng, limits: etcdLimits}
	st.setEngine(lim)
	w := &searchWorld{t: t, st: st, r: rand.New(rand.NewPCG(5, 6)), nodes: map[string][]session.Node{}}
	var ids []string
	for i := range 300 {
		id := testID(uint32(i)*2654435761, i)
		ids = append(ids, id)
		w.add(id, 1+w.r.IntN(8))
	}
	// Long messages, so that segments span many chunks.
	for range 40 {
		id := ids[w.r.IntN(len(ids))]
		old := w.nodes[id]
		text := ""
		for len(text) < 300<<10 {
			text += w.text()
		}
		n := session.Child(&old[len(old)-1], uint64(len(old)+1), userMsg(text))
		all := append(old, n)
		m := metaFor(id, all)
		if err := st.Commit(&m, []session.Node{n}); err != nil {
			t.Fatal(err)
		}
		w.nodes[id] = all
	}
	w.check("built under etcd's limits", st)
	for range 3 * foldBound {
		w.add(ids[w.r.IntN(len(ids))], 1)
	}
	if err := st.foldIndex(true, mergeBytes); err != nil {
		t.Fatal(err)
	}
	w.check("folded and merged under etcd's limits", st)
	stats, _ := st.IndexStats()
	if stats.Bytes < 2*indexChunk {
		t.Errorf("the index is %d bytes: too small to span chunks", stats.Bytes)
	}
	mustClose(t, st)
}
