package kvstore

import (
	"bytes"
	"errors"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// A rewritten path (a compaction, a pruning) keeps most of the old path's
// messages, and copy-on-write would store each of them twice. A node that
// repeats an older node's message is instead stored as a reference to it
// (record.EncodeNodeRef): its own header and the seq of the node holding
// the message. References point only at nodes holding their message, so a
// read resolves one in a single lookup, and Collect writes the message
// back into a kept reference before it deletes the node that held it.

// shareRepeats replaces vals[i], the full encoding of nodes[i], with a
// reference wherever the node's Same hint names a visible node, older than
// every node of this commit, whose stored message is byte for byte this
// one.
func (s *Store) shareRepeats(id sid, nodes []session.Node, vals [][]byte) error {
	first := ^uint64(0)
	hinted := false
	for i := range nodes {
		first = min(first, nodes[i].Seq)
		hinted = hinted || nodes[i].Same != 0
	}
	if !hinted {
		return nil
	}
	return s.eng.View(func(txn kv.Txn) error {
		next, err := nextSeq(txn, id)
		if errors.Is(err, ErrNotFound) {
			return nil // a new session has no node to repeat
		}
		if err != nil {
			return err
		}
		// Nodes at or above next are invisible leftovers of an interrupted
		// commit, which a later one may overwrite; and a node this commit
		// writes cannot hold a message for another (no caller writes
		// below next, but then a reference could name itself).
		limit := min(next, first)
		holders := refResolver{txn: txn, id: id}
		defer holders.close()
		for i := range nodes {
			same := nodes[i].Same
			if same == 0 || same >= limit {
				continue
			}
			_, msg, err := record.DecodeNodeHeader(vals[i])
			if err != nil {
				return err
			}
			holder, ok, err := messageHolder(&holders, same, msg)
			if err != nil {
				return err
			}
			if ok {
				vals[i] = record.EncodeNodeRef(&nodes[i], holder)
			}
		}
		return nil
	})
}

// messageHolder finds the node holding node seq's message, seq itself or
// the node it refers to, and reports whether that message is msg.
func messageHolder(r *refResolver, seq uint64, msg []byte) (uint64, bool, error) {
	id := r.id
	for hops := 0; hops < 2; hops++ {
		item, found, err := r.holder(seq)
		if !found || err != nil {
			return 0, false, err
		}
		var same uint64
		equal := false
		err = useValue(item, func(v []byte) error {
			h, stored, err := record.DecodeNodeHeader(v)
			if err != nil {
				return corrupt(id, "node %d is malformed", seq)
			}
			same, equal = h.Same, h.Same == 0 && bytes.Equal(stored, msg)
			return nil
		})
		if err != nil || same == 0 {
			return seq, equal, err
		}
		if same >= seq {
			return 0, false, corrupt(id, "node %d refers to node %d", seq, same)
		}
		seq = same
	}
	return 0, false, corrupt(id, "node %d refers to a reference", seq)
}

// resolveRef returns the full value of a stored node: v itself, or, for a
// reference, its header with the message of the node it names. The result
// may be v, valid only as long as v is.
func resolveRef(txn kv.Txn, id sid, seq uint64, v []byte) ([]byte, error) {
	r := refResolver{txn: txn, id: id, lookup: true}
	return r.resolve(seq, v)
}

// refResolver resolves the references of one session met in seq order.
// Their messages then come in seq order too (a rewritten path keeps its
// tail in order), so one iterator that mostly steps to the next key reads
// each block once: a lookup per reference would find and decode a block
// each time (reading a batch-compacted store took 65% longer so).
type refResolver struct {
	txn    kv.Txn
	id     sid
	lookup bool        // one reference: a Get rather than an iterator
	it     kv.Iterator // made at the first reference
	buf    []byte
}

// maxStep is how far ahead the iterator walks to the next message before
// it seeks instead.
const maxStep = 8

func (r *refResolver) resolve(seq uint64, v []byte) ([]byte, error) {
	if record.IsChunked(v) {
		full, err := joinChunks(r.txn, r.id, seq, v, r.buf)
		r.buf = full
		return full, err
	}
	h, _, err := record.DecodeNodeHeader(v)
	if err != nil || h.Same == 0 {
		return v, nil // a malformed node is its reader's to report
	}
	if h.Same >= seq {
		return nil, corrupt(r.id, "node %d refers to node %d", seq, h.Same)
	}
	item, found, err := r.holder(h.Same)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, corrupt(r.id, "node %d refers to node %d, which is missing", seq, h.Same)
	}
	err = useValue(item, func(target []byte) error {
		full, rerr := record.AppendResolvedNodeRef(r.buf[:0], v, target)
		if rerr != nil {
			return corrupt(r.id, "node %d refers to node %d, which holds no message", seq, h.Same)
		}
		r.buf = full
		return nil
	})
	return r.buf, err
}

// holder reads node seq's stored value, and whether it is there.
func (r *refResolver) holder(seq uint64) ([]byte, bool, error) {
	if r.lookup {
		v, err := r.txn.Get(nodeKey(r.id, seq))
		if errors.Is(err, kv.ErrNotFound) {
			return nil, false, nil
		}
		return v, err == nil, err
	}
	if r.it == nil {
		r.it = r.txn.Iterate(kv.IterOptions{Prefix: nodePrefix(r.id)})
		r.it.Seek(nodeKey(r.id, seq))
	}
	at := func() uint64 {
		if !r.it.Valid() {
			return 0
		}
		got, _ := keySeq(r.it.Key())
		return got
	}
	cur := at()
	for steps := 0; cur != 0 && cur < seq && steps < maxStep; steps++ {
		r.it.Next()
		cur = at()
	}
	if cur != seq {
		r.it.Seek(nodeKey(r.id, seq))
		cur = at()
	}
	if cur != seq {
		return nil, false, nil
	}
	v, err := r.it.Value()
	return v, err == nil, err
}

func (r *refResolver) close() {
	if r.it != nil {
		r.it.Close()
	}
}
