package kvstore

import (
	"errors"
	"time"

	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/wire"
)

var _ store.Remover = (*Store)(nil)

// Purge rewrites the store so that the bytes of what was removed leave its
// files. A deletion in Badger only adds a tombstone: the values stay in
// the tables (until a merge happens to reach them) and in the value log
// (until it is collected), so removed transcripts could still be read
// from the store's files. Purge streams what is live into a new store
// beside it and swaps it in, as rebuild does, leaving out the ranges of
// sessions without metadata (what a removal killed midway left) and the
// nodes a session no longer counts (an interrupted commit's). The handle
// is open again afterwards. It costs a copy of the store.
func (s *Store) Purge() error {
	if err := s.writable(); err != nil {
		return err
	}
	if s.eng == nil {
		return nil
	}
	if s.shared != nil {
		return s.purgeShared()
	}
	live, err := s.liveRanges()
	if err != nil {
		return mapErr("purge", err)
	}
	if err := s.rebuildKeeping(live.keepUnindexed); err != nil {
		return err
	}
	db, err := s.openBadger(false, time.Now())
	if err != nil {
		return err
	}
	s.setEngine(db)
	s.wrote.Store(false)
	return nil
}

// liveSet is what a purge keeps: every key outside the sessions' ranges
// (the schema), the listing shards, and each session that has metadata up
// to its next seq.
type liveSet map[sid]uint64 // next seq; 0 for a listing shard

func (s *Store) liveRanges() (liveSet, error) {
	live := liveSet{}
	err := s.eng.View(func(txn kv.Txn) error {
		return eachRange(txn, []byte{tagSession}, nil, func(id sid, it kv.Iterator) error {
			if reservedID(id) {
				live[id] = 0
				return nil
			}
			if !seekMeta(it, id) {
				return nil
			}
			next, err := nextSeq(txn, id)
			live[id] = next
			return err
		})
	})
	return live, err
}

func (live liveSet) keep(key []byte) bool {
	if len(key) <= sessionKeyLen || key[0] != tagSession {
		return true
	}
	var id sid
	copy(id[:], key[1:sessionKeyLen])
	next, ok := live[id]
	switch {
	case !ok:
		return false
	case next == 0 || key[sessionKeyLen] != tagNode:
		return true
	}
	seq, ok := keySeq(key)
	return !ok || seq < next
}

// remove answers a delete request.
func (s *client) remove(req *wire.Delete) error {
	if err := s.st.DeleteSession(req.ID); err != nil {
		return err
	}
	if req.Defer {
		return nil
	}
	return s.sync() // what the client prints next must be on disk
}

// purge answers a purge request. A purge closes and reopens the store,
// which the resident process shares with what it does between requests
// (filling its listing cache): only a private store process does it.
func (s *client) purge() error {
	if !s.private {
		return errPurgeShared
	}
	return s.st.Purge()
}

var errPurgeShared = errors.New("store: a purge needs the store to itself, not through the resident store process")
