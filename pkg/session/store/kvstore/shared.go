package kvstore

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// A store opened on a shared engine (Options.Engine: etcd) has no lock:
// writers on many machines commit at once. Each session then guards
// itself:
//
//   - Revision. Meta returns the metadata with its Revision, a hash of the
//     record it read; Commit commits only when the stored record still has
//     that revision (in the same transaction that writes it), else fails
//     with ErrChanged, and sets meta.Revision to the record it wrote. The
//     revision travels with the caller's value, not in the handle, so that
//     goroutines (or the clients of one resident process) sharing a handle
//     never vouch for each other's reads. It is a hash rather than a
//     counter kept in the record so that no record, share or wire format
//     changes; a record that comes back byte for byte (next_seq only
//     grows) is the same session, so a hash seen again is harmless. A
//     Meta that was not read (Revision 0) is committed unchecked, as on a
//     directory.
//   - Token. Each Commit writes a random token into the session's token
//     ring (the last tokenRing tokens); run again after
//     kv.ErrUnknownResult, it finds its token and knows it landed.
//   - Guard. A Commit too big for one transaction (or with values in
//     pieces, chunks.go) writes its nodes first, under the session's guard
//     key holding its token and how many writes are in: every such
//     transaction, and the last one (the metadata, which makes the nodes
//     visible), commits only while the metadata is unchanged and the guard
//     is its own. A second writer that takes the guard makes the first fail
//     before it could publish nodes the second overwrote, and no pre-write
//     lands once another commit moved the metadata (which could overwrite
//     visible nodes).
//
// Conflicts (kv.ErrConflict), lost answers and an unavailable cluster are
// retried inside the store with backoff, up to Options.LockTimeout, then
// the busy error.

const (
	tagToken = 'T' // the token ring of the last commits
	tagGuard = 'W' // the token of a commit writing its nodes ahead
	tagChunk = 'C' // a piece of a value too big for the engine (chunks.go)

	tokenLen  = 16
	tokenRing = 64
)

func tokenKey(id sid) []byte { return append(sessionPrefix(id), tagToken) }

func guardKey(id sid) []byte { return append(sessionPrefix(id), tagGuard) }

// errLanded ends the transaction of a Commit run again that finds its own
// token: the first run was applied.
var errLanded = errors.New("store: the commit was applied")

// sharedState is what a handle on a shared engine keeps.
type sharedState struct {
	name     string        // the store, as errors name it
	retryFor time.Duration // how long one operation retries (Options.LockTimeout)
	retries  atomic.Int64  // transactions run again (benchmarks)
	landed   atomic.Int64  // commits run again that found they had landed (tests)
}

// Retries counts the transactions the handle ran again after a conflict,
// a lost answer or an unavailable engine (0 on a directory).
func (s *Store) Retries() int64 {
	if s.shared == nil {
		return 0
	}
	return s.shared.retries.Load()
}

// openShared opens the store on opts.Engine, which it takes: Close closes
// it, and so does a failed open.
func openShared(opts Options, mode Mode) (*Store, error) {
	name := opts.Name
	if name == "" {
		name = "(shared engine)"
	}
	if opts.OtherOwner {
		opts.Engine.Close()
		return nil, errors.New("store: another user's store is a directory")
	}
	st := &sharedState{name: name, retryFor: opts.LockTimeout}
	s := &Store{dir: "", mode: mode, bulk: opts.Bulk, shared: st, rw: mode == Write, segments: newSegmentCache(segmentCacheChunks)}
	s.setEngine(&retryingEngine{Engine: opts.Engine, st: st, retryFor: st.retryFor})
	if err := s.checkSchema(); err != nil {
		s.eng.Close()
		if errors.Is(err, errMigrate) {
			return nil, fmt.Errorf("store %s was written by an older wc: open it for writing once, to move it to schema %d", name, schemaVersion)
		}
		return nil, err
	}
	return s, nil
}

// revisionOf is the revision of a stored metadata record: never 0.
func revisionOf(stored []byte) uint64 {
	sum := sha256.Sum256(stored)
	return binary.BigEndian.Uint64(sum[:8]) | 1
}

// noteRead sets m.Revision from the record it was read from (shared
// stores only).
func (s *Store) noteRead(m *session.Meta, stored []byte) {
	if s.shared != nil {
		m.Revision = revisionOf(stored)
	}
}

func newToken() []byte {
	t := make([]byte, tokenLen)
	_, _ = rand.Read(t)
	return t
}

// checkRevision reads, in a commit's transaction, the session's token
// ring and metadata: errLanded when the ring holds token, the changed
// error when the metadata is not at revision want (0: unchecked). It
// returns the ring, to which the commit adds its token.
func checkRevision(txn kv.Txn, id sid, want uint64, token []byte) ([]byte, error) {
	ring, err := getOptional(txn, tokenKey(id))
	if err != nil {
		return nil, err
	}
	for i := 0; i+tokenLen <= len(ring); i += tokenLen {
		if bytes.Equal(ring[i:i+tokenLen], token) {
			return nil, errLanded
		}
	}
	cur, err := getOptional(txn, metaKey(id))
	if err != nil {
		return nil, err
	}
	if want != 0 && (cur == nil || revisionOf(cur) != want) {
		return nil, sessionChanged(id)
	}
	return ring, nil
}

// getOptional is a Get whose missing key is nil.
func getOptional(txn kv.Txn, key []byte) ([]byte, error) {
	v, err := txn.Get(key)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	return v, err
}

// withToken is ring with token added last, the oldest dropped past
// tokenRing.
func withToken(ring, token []byte) []byte {
	ring = ring[:len(ring)/tokenLen*tokenLen]
	if len(ring) >= tokenRing*tokenLen {
		ring = ring[len(ring)-(tokenRing-1)*tokenLen:]
	}
	return append(append(make([]byte, 0, len(ring)+tokenLen), ring...), token...)
}

// errSplit ends a commit's single transaction that does not fit.
var errSplit = errors.New("store: the commit does not fit in one transaction")

// commitShared is Commit on a shared engine, its values encoded and
// checked: in one transaction when it fits, else its nodes ahead under
// the session's guard and the metadata last (see the top of this file).
func (s *Store) commitShared(id sid, meta *session.Meta, nodes []session.Node, vals [][]byte, metaVal, summary []byte) error {
	token := newToken()
	want := meta.Revision
	finish := func(txn kv.Txn, ring []byte) error {
		if err := putMeta(txn, id, meta, metaVal, summary); err != nil {
			return err
		}
		if err := markPending(txn, id, nodes, meta.NextSeq); err != nil {
			return err
		}
		if err := txn.Set(tokenKey(id), withToken(ring, token)); err != nil {
			return err
		}
		return txn.Delete(guardKey(id))
	}
	ahead, err := s.chunkLarge(id, vals)
	if err != nil {
		return mapErr("commit", err)
	}
	txns := 1
	if len(ahead) == 0 {
		err = s.eng.Update(func(txn kv.Txn) error {
			ring, err := checkRevision(txn, id, want, token)
			if err != nil {
				return err
			}
			for i := range nodes {
				if err := txn.Set(nodeKey(id, nodes[i].Seq), vals[i]); errors.Is(err, kv.ErrTooBig) {
					return errSplit
				} else if err != nil {
					return err
				}
			}
			if err := finish(txn, ring); errors.Is(err, kv.ErrTooBig) {
				return errSplit
			} else if err != nil {
				return err
			}
			return nil
		})
	}
	if len(ahead) > 0 || errors.Is(err, errSplit) {
		for i := range nodes {
			ahead = append(ahead, pending{key: nodeKey(id, nodes[i].Seq), val: vals[i]})
		}
		txns, err = s.commitSplit(id, want, token, ahead, finish)
	}
	if errors.Is(err, errLanded) {
		s.shared.landed.Add(1)
		err = nil
	}
	if err != nil {
		return mapErr("commit", err)
	}
	s.wrote.Store(true)
	s.lastTxns.Store(int64(txns))
	meta.Revision = revisionOf(metaVal)
	s.foldIfDue(id)
	return nil
}

// commitSplit writes ahead (pieces, nodes) in as many transactions as they
// fill, each under the guard, then the metadata with finish. The guard
// holds the token and how many of ahead are written: a transaction run
// again after a lost answer reads there whether it landed.
func (s *Store) commitSplit(id sid, want uint64, token []byte, ahead []pending, finish func(kv.Txn, []byte) error) (int, error) {
	txns := 0
	// guarded checks the revision and the guard: written is how many of
	// ahead the guard says are in, -1 when it is not this commit's.
	guarded := func(txn kv.Txn, first bool) (ring []byte, written int, err error) {
		if ring, err = checkRevision(txn, id, want, token); err != nil {
			return nil, 0, err
		}
		g, err := getOptional(txn, guardKey(id))
		if err != nil {
			return nil, 0, err
		}
		if len(g) == tokenLen+4 && bytes.Equal(g[:tokenLen], token) {
			return ring, int(binary.BigEndian.Uint32(g[tokenLen:])), nil
		}
		if !first {
			return nil, 0, &changedError{id: id.String(), why: " (another commit took over its nodes)"}
		}
		return ring, -1, nil
	}
	end := 0
	for first := 0; first < len(ahead); {
		if end <= first {
			end = batchEnd(s.eng.Limits(), ahead, first)
		}
		landed := 0
		err := s.eng.Update(func(txn kv.Txn) error {
			_, written, err := guarded(txn, first == 0)
			if err != nil {
				return err
			}
			if written > first {
				landed = written // run again after a lost answer
				return errLanded
			}
			g := binary.BigEndian.AppendUint32(append(make([]byte, 0, tokenLen+4), token...), uint32(end))
			if err := txn.Set(guardKey(id), g); err != nil {
				return err
			}
			for k := first; k < end; k++ {
				err := txn.Set(ahead[k].key, ahead[k].val)
				if errors.Is(err, kv.ErrTooBig) && k > first {
					end = k
					return errShrink
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		switch {
		case errors.Is(err, errShrink):
			continue // with the end it found
		case errors.Is(err, errLanded):
			end = landed
		case err != nil:
			return txns, err
		}
		txns++
		if testHookTxnCommitted != nil {
			testHookTxnCommitted(txns)
		}
		first = end
	}
	err := s.eng.Update(func(txn kv.Txn) error {
		ring, _, err := guarded(txn, len(ahead) == 0)
		if err != nil {
			return err
		}
		return finish(txn, ring)
	})
	return txns + 1, err
}

// errShrink ends a transaction of a split commit that holds less than its
// engine's Limits promised: nothing was committed, and it is run again
// with fewer writes.
var errShrink = errors.New("store: the batch does not fit in one transaction")

// batchEnd is where the batch of ahead from first ends within the
// engine's Limits (leaving room for the guard and the compares): at least
// one past first. An engine that declares none answers kv.ErrTooBig, and
// the batch shrinks (errShrink).
func batchEnd(lim kv.Limits, ahead []pending, first int) int {
	end, ops, size := first, 0, int64(0)
	for end < len(ahead) {
		ops++
		size += int64(len(ahead[end].key) + len(ahead[end].val))
		if end > first && (lim.MaxTxnOps > 0 && ops > lim.MaxTxnOps-4 || lim.MaxTxnBytes > 0 && size > lim.MaxTxnBytes-4096) {
			break
		}
		end++
	}
	return end
}

// sessionUnchanged is the check of a Collect's transactions on a shared
// engine: the metadata is still m's, and no commit is writing nodes ahead
// (which would be orphans to a collection).
func sessionUnchanged(id sid, m *session.Meta) func(kv.Txn) error {
	return func(txn kv.Txn) error {
		cur, err := getOptional(txn, metaKey(id))
		if err != nil {
			return err
		}
		if cur == nil || m.Revision != 0 && revisionOf(cur) != m.Revision {
			return sessionChanged(id)
		}
		g, err := getOptional(txn, guardKey(id))
		if err != nil {
			return err
		}
		if g != nil {
			return &changedError{id: id.String(), why: " (a commit is writing its nodes)"}
		}
		return nil
	}
}

// RetryChanged is store.RetryChanged.
func RetryChanged(deadline time.Time, fn func() error) error { return store.RetryChanged(deadline, fn) }

// retryingEngine runs a shared engine's transactions again while they
// conflict, lose their answer or find the engine unavailable, up to the
// handle's retry time; then the busy error. A View is run again only when
// it failed before reading anything, so that its callbacks never see a
// record twice. The engine's requests are bounded by the same deadline
// (kv.Bounded), so that a stalled cluster is answered by it too.
type retryingEngine struct {
	kv.Engine
	st       *sharedState
	retryFor time.Duration
	// progress, on a client's handle (ForClient), is when the handle was
	// made or an operation of it last succeeded (unix nanos): retries end
	// retryFor after it, so that a command's operations in a row wait no
	// longer than its lock timeout together.
	progress *atomic.Int64
}

func (r *retryingEngine) View(fn func(kv.Txn) error) error {
	return r.retry(func(e kv.Engine) (error, bool) {
		t := &readCounting{}
		err := e.View(func(txn kv.Txn) error { t.Txn = txn; return fn(t) })
		return err, t.read == 0
	})
}

func (r *retryingEngine) Update(fn func(kv.Txn) error) error {
	return r.retry(func(e kv.Engine) (error, bool) { return e.Update(fn), true })
}

func (r *retryingEngine) retry(op func(kv.Engine) (err error, again bool)) error {
	deadline := time.Now().Add(r.retryFor)
	if r.progress != nil {
		deadline = time.Unix(0, r.progress.Load()).Add(r.retryFor)
	}
	e := r.Engine
	if b, ok := e.(kv.Bounded); ok {
		e = b.Within(deadline)
	}
	b := store.NewBackoff(deadline)
	for {
		err, again := op(e)
		if err == nil && r.progress != nil {
			r.progress.Store(time.Now().UnixNano())
		}
		if err == nil || !again || !retryable(err) {
			return err
		}
		if !b.Wait() {
			return r.st.busy(err, r.retryFor)
		}
		r.st.retries.Add(1)
	}
}

// ForClient is the handle a store process serves one client's connection
// with. On a shared engine its operations retry for retryFor (the
// client's lock timeout) after the handle was made or its last operation
// succeeded, whatever the store was opened with: a resident process
// serves commands of every --lock-timeout, and each must have its answer
// within its own. Close it not: it shares s's engine. On a directory,
// where the lock bounds the wait, it is s.
func (s *Store) ForClient(retryFor time.Duration) *Store {
	r, ok := s.eng.(*retryingEngine)
	if s.shared == nil || !ok {
		return s
	}
	c := &Store{dir: s.dir, mode: s.mode, bulk: s.bulk, shared: s.shared, rw: s.rw, segments: s.segments}
	progress := &atomic.Int64{}
	progress.Store(time.Now().UnixNano())
	c.setEngine(&retryingEngine{Engine: r.Engine, st: s.shared, retryFor: retryFor, progress: progress})
	return c
}

// retryable: a conflict, a lost answer, an unavailable engine.
func retryable(err error) bool {
	var u interface{ Unavailable() bool }
	return errors.Is(err, kv.ErrConflict) || errors.Is(err, kv.ErrUnknownResult) || errors.As(err, &u) && u.Unavailable()
}

// busy is the error of an operation that kept failing with err until its
// retry time ran out.
func (st *sharedState) busy(err error, retried time.Duration) error {
	return &store.KindError{Msg: fmt.Sprintf("store %s is busy (%s; retried for %s)", st.name, firstLineOf(err.Error()), retried),
		Kind: ErrBusy, Hints: []string{"raise --lock-timeout or WC_LOCK_TIMEOUT to retry longer"}}
}

// readCounting counts the reads of a transaction that found something.
type readCounting struct {
	kv.Txn
	read int
}

func (t *readCounting) Get(key []byte) ([]byte, error) {
	v, err := t.Txn.Get(key)
	if err == nil || errors.Is(err, kv.ErrNotFound) {
		t.read++
	}
	return v, err
}

func (t *readCounting) Iterate(opt kv.IterOptions) kv.Iterator {
	return &countingIter{Iterator: t.Txn.Iterate(opt), t: t}
}

type countingIter struct {
	kv.Iterator
	t *readCounting
}

func (it *countingIter) Valid() bool {
	ok := it.Iterator.Valid()
	if ok {
		it.t.read++
	}
	return ok
}

// purgeShared is Purge on a shared engine, where a deletion frees its
// value at the engine's own compaction: it deletes what removals and
// interrupted commits left (the ranges of sessions without metadata, the
// nodes past a session's next seq), each session's in transactions that
// check that no commit wrote there meanwhile.
func (s *Store) purgeShared() error {
	live, err := s.liveRanges()
	if err != nil {
		return mapErr("purge", err)
	}
	doomed := map[sid][][]byte{}
	err = s.eng.View(func(txn kv.Txn) error {
		prefix := []byte{tagSession}
		it := txn.Iterate(kv.IterOptions{Prefix: prefix, KeysOnly: true})
		defer it.Close()
		for it.Seek(prefix); it.Valid(); it.Next() {
			k := it.Key()
			if len(k) <= sessionKeyLen || live.keep(k) {
				continue
			}
			var id sid
			copy(id[:], k[1:sessionKeyLen])
			doomed[id] = append(doomed[id], bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return mapErr("purge", err)
	}
	for id, keys := range doomed {
		next, hasMeta := live[id]
		b := &keyBatch{s: s, check: func(txn kv.Txn) error {
			if g, err := getOptional(txn, guardKey(id)); err != nil || g != nil {
				return cmp.Or(err, errSkip)
			}
			cur, err := getOptional(txn, metaKey(id))
			if err != nil || hasMeta != (cur != nil) {
				return cmp.Or(err, errSkip)
			}
			if hasMeta {
				if n, err := nextSeq(txn, id); err != nil || n != next {
					return cmp.Or(err, errSkip)
				}
			}
			return nil
		}}
		for _, k := range keys {
			if err = b.del(k); err != nil {
				break
			}
		}
		if err == nil {
			err = b.flush()
		}
		if err != nil && !errors.Is(err, errSkip) {
			return mapErr("purge", err)
		}
	}
	return nil
}

// errSkip ends a purge's transaction over a session a commit is writing.
var errSkip = errors.New("store: the session is being written")
