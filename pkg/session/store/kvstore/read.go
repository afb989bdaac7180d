package kvstore

import (
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// minPrefix is the fewest hex digits a session prefix may have.
const minPrefix = store.MinPrefix

// Resolve turns a full id (any case, dashes optional) or a unique prefix of
// at least 4 hex digits into the canonical lowercase id.
func (s *Store) Resolve(ref string) (string, error) {
	digits, ok := store.RefDigits(ref)
	if !ok || len(digits) < minPrefix || len(digits) > 2*idLen {
		return "", &RefError{Ref: ref}
	}
	if len(digits) == 2*idLen {
		id, _ := parseID(digits)
		err := s.view(func(txn kv.Txn) error {
			_, err := txn.Get(metaKey(id))
			return err
		})
		if errors.Is(err, errNoStore) || errors.Is(err, kv.ErrNotFound) {
			return "", sessionNotFound(ref)
		}
		if err != nil {
			return "", mapErr("read", err)
		}
		return id.String(), nil
	}

	// Whole bytes go in the seek prefix; an odd last digit filters the
	// next byte's high nibble.
	pre, _ := hex.DecodeString(digits[:len(digits)&^1])
	prefix := append([]byte{tagSession}, pre...)
	seek := prefix
	odd := len(digits)%2 == 1
	var nibble byte
	if odd {
		b, _ := hex.DecodeString(digits[len(digits)-1:] + "0")
		nibble = b[0] >> 4
		seek = append(append([]byte(nil), prefix...), b[0])
	}
	var match sid
	n := 0
	err := s.view(func(txn kv.Txn) error {
		return eachRange(txn, prefix, seek, func(id sid, it kv.Iterator) error {
			if odd && id[len(prefix)-1]>>4 != nibble {
				return errPast // keys are sorted: past the nibble
			}
			if seekMeta(it, id) { // orphans without metadata are invisible
				if n == 0 {
					match = id
				}
				n++
			}
			return nil
		})
	})
	if errors.Is(err, errPast) {
		err = nil
	}
	switch {
	case errors.Is(err, errNoStore):
		return "", sessionNotFound(ref)
	case err != nil:
		return "", mapErr("read", err)
	case n == 0:
		return "", sessionNotFound(ref)
	case n > 1:
		return "", &store.KindError{Msg: fmt.Sprintf("session prefix %s is ambiguous (%d sessions match)", ref, n), Kind: ErrAmbiguous}
	}
	return match.String(), nil
}

// errPast ends Resolve's walk once the ranges no longer match.
var errPast = errors.New("past the prefix")

// Meta returns a session's metadata.
func (s *Store) Meta(id string) (session.Meta, error) {
	key, err := parseID(id)
	if err != nil {
		return session.Meta{}, err
	}
	var m session.Meta
	err = s.view(func(txn kv.Txn) error {
		item, err := txn.Get(metaKey(key))
		if err != nil {
			return err
		}
		return useValue(item, func(v []byte) error {
			var derr error
			if m, derr = record.DecodeMeta(v); derr != nil {
				return corrupt(key, "its metadata is malformed")
			}
			s.noteRead(&m, v)
			return nil
		})
	})
	if errors.Is(err, errNoStore) || errors.Is(err, kv.ErrNotFound) {
		return session.Meta{}, sessionNotFound(id)
	}
	return m, mapErr("read", err)
}

func corrupt(id sid, what string, args ...any) error { return store.Damaged(id, what, args...) }

// nextSeq reads the session's next_seq without decoding the metadata:
// nodes at or above it are orphans of an interrupted commit and invisible.
func nextSeq(txn kv.Txn, id sid) (uint64, error) {
	item, err := txn.Get(metaKey(id))
	if errors.Is(err, kv.ErrNotFound) {
		return 0, sessionNotFound(id.String())
	}
	if err != nil {
		return 0, err
	}
	var next uint64
	err = useValue(item, func(v []byte) error {
		r := gjson.GetBytes(v, "next_seq")
		if r.Type != gjson.Number {
			return corrupt(id, "its metadata has no next_seq")
		}
		next = r.Uint()
		return nil
	})
	return next, err
}

func nodeNotFound(id sid, seq uint64) error {
	return notFoundf("node %d not found in session %s", seq, id)
}

// getNode reads one visible node; ok is false when it is not stored.
func getNode(txn kv.Txn, id sid, seq uint64) (n session.Node, ok bool, err error) {
	item, err := txn.Get(nodeKey(id, seq))
	if errors.Is(err, kv.ErrNotFound) {
		return n, false, nil
	}
	if err != nil {
		return n, false, err
	}
	err = useValue(item, func(v []byte) error {
		v, err := resolveRef(txn, id, seq, v)
		if err != nil {
			return err
		}
		var derr error
		if n, derr = record.DecodeNode(seq, v); derr != nil {
			return corrupt(id, "node %d is malformed: %v", seq, derr)
		}
		return nil
	})
	return n, err == nil, err
}

// Node returns one node of a session.
func (s *Store) Node(id string, seq uint64) (session.Node, error) {
	key, err := parseID(id)
	if err != nil {
		return session.Node{}, err
	}
	var n session.Node
	err = s.view(func(txn kv.Txn) error {
		next, err := nextSeq(txn, key)
		if err != nil {
			return err
		}
		var ok bool
		if seq != 0 && seq < next {
			n, ok, err = getNode(txn, key, seq)
		}
		if err == nil && !ok {
			err = nodeNotFound(key, seq)
		}
		return err
	})
	if errors.Is(err, errNoStore) {
		return session.Node{}, sessionNotFound(id)
	}
	return n, mapErr("read", err)
}

// Walk calls fn for node from and then its ancestors, at most max nodes
// (max <= 0: no limit), until fn returns false or the root has been visited.
func (s *Store) Walk(id string, from uint64, max int, fn func(*session.Node) bool) error {
	key, err := parseID(id)
	if err != nil {
		return err
	}
	err = s.view(func(txn kv.Txn) error {
		next, err := nextSeq(txn, key)
		if err != nil {
			return err
		}
		for count := 0; from != 0 && (max <= 0 || count < max); count++ {
			var n session.Node
			ok := false
			if from < next {
				if n, ok, err = getNode(txn, key, from); err != nil {
					return err
				}
			}
			if !ok {
				if count == 0 {
					return nodeNotFound(key, from)
				}
				return corrupt(key, "node %d on a path is missing", from)
			}
			if !fn(&n) {
				return nil
			}
			if n.Parent >= n.Seq {
				return corrupt(key, "node %d has parent %d", n.Seq, n.Parent) // would loop
			}
			from = n.Parent
		}
		return nil
	})
	if errors.Is(err, errNoStore) {
		return sessionNotFound(id)
	}
	return mapErr("read", err)
}

// Nodes calls fn for every visible node of the session in seq order. raw is
// the stored value and valid only during fn; fn's error is returned as is.
func (s *Store) Nodes(id string, fn func(seq uint64, raw []byte) error) error {
	key, err := parseID(id)
	if err != nil {
		return err
	}
	var fnErr error
	err = s.view(func(txn kv.Txn) error {
		next, err := nextSeq(txn, key)
		if err != nil {
			return err
		}
		return eachStoredNode(txn, key, 1, next, func(seq uint64, v []byte) error {
			fnErr = fn(seq, v)
			return fnErr
		})
	})
	if fnErr != nil {
		return fnErr
	}
	if errors.Is(err, errNoStore) {
		return sessionNotFound(id)
	}
	return mapErr("read", err)
}

// eachStoredNode calls fn with the stored value of every node of session
// id from seq from up to next, references resolved; the value is valid
// only during fn.
func eachStoredNode(txn kv.Txn, id sid, from, next uint64, fn func(seq uint64, v []byte) error) error {
	it := txn.Iterate(kv.IterOptions{Prefix: nodePrefix(id)})
	defer it.Close()
	refs := refResolver{txn: txn, id: id}
	defer refs.close()
	for it.Seek(nodeKey(id, max(from, 1))); it.Valid(); it.Next() {
		seq, ok := keySeq(it.Key())
		if !ok {
			continue
		}
		if seq >= next {
			break
		}
		err := iterValue(it, func(v []byte) error {
			v, err := refs.resolve(seq, v)
			if err != nil {
				return err
			}
			return fn(seq, v)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Path calls fn for each node from the root to head, in order. The store is
// read and the nodes decoded on a goroutine of their own, a batch ahead of
// fn, so that a long export uses a second core. fn's error is returned as
// is.
func (s *Store) Path(id string, head uint64, fn func(*session.Node) error) error {
	key, err := parseID(id)
	if err != nil {
		return err
	}
	return store.DecodeAhead(key, func(emit func(uint64, []byte) error) error { return s.pathRaw(id, head, emit) }, fn)
}

// pathRaw calls fn with the stored value of each node from the root to
// head, in order; raw is valid only during fn, and fn's error is returned
// as is. A session whose head has depth head has never branched nor lost a
// node: its path is every node 1..head, read in one ordered scan. Any
// other finds its path in a first pass over the node headers.
func (s *Store) pathRaw(id string, head uint64, fn func(seq uint64, raw []byte) error) error {
	key, err := parseID(id)
	if err != nil {
		return err
	}
	var fnErr error
	err = s.view(func(txn kv.Txn) error {
		next, err := nextSeq(txn, key)
		if err != nil {
			return err
		}
		if head == 0 {
			return nil // an empty path
		}
		if head >= next {
			return nodeNotFound(key, head)
		}
		linear, err := isLinear(txn, key, head)
		if err != nil {
			return err
		}
		var path []uint64
		if !linear {
			if path, err = s.pathSeqs(txn, key, head); err != nil {
				return err
			}
		}
		count, seqAt := uint64(len(path)), func(i uint64) uint64 { return path[i] }
		if linear {
			count, seqAt = head, func(i uint64) uint64 { return i + 1 }
		}
		it := txn.Iterate(kv.IterOptions{Prefix: nodePrefix(key)})
		defer it.Close()
		refs := refResolver{txn: txn, id: key}
		defer refs.close()
		var prev uint64
		read := 0
		for i := uint64(0); i < count; i++ {
			seq := seqAt(i)
			if i == 0 || seq != prev+1 {
				it.Seek(nodeKey(key, seq)) // the root, or over other branches
			}
			if !it.Valid() {
				return corrupt(key, "node %d vanished", seq)
			}
			if got, _ := keySeq(it.Key()); got != seq {
				return corrupt(key, "node %d vanished", seq)
			}
			err := iterValue(it, func(v []byte) error {
				if linear {
					// The depth said so; the parents must agree.
					if h, _, err := record.DecodeNodeHeader(v); err == nil && h.Parent != prev {
						return corrupt(key, "node %d has parent %d, not %d as its depths say", seq, h.Parent, prev)
					}
				}
				v, err := refs.resolve(seq, v)
				if err != nil {
					return err
				}
				if s.bulk {
					s.moved.Add(int64(len(v)))
				}
				if read += len(v); read >= releaseEvery {
					s.releasePages()
					read = 0
				}
				fnErr = fn(seq, v)
				return fnErr
			})
			if err != nil {
				return err
			}
			prev = seq
			it.Next()
		}
		return nil
	})
	if fnErr != nil {
		return fnErr
	}
	if errors.Is(err, errNoStore) {
		return sessionNotFound(id)
	}
	return mapErr("read", err)
}

// isLinear reports whether the path to head holds every node 1..head: it
// does when head's depth is head, as the path has depth nodes, all at or
// below head.
func isLinear(txn kv.Txn, id sid, head uint64) (bool, error) {
	item, err := txn.Get(nodeKey(id, head))
	if errors.Is(err, kv.ErrNotFound) {
		return false, nodeNotFound(id, head)
	}
	if err != nil {
		return false, err
	}
	var depth uint64
	err = useValue(item, func(v []byte) error {
		h, _, derr := record.DecodeNodeHeader(v)
		if derr != nil {
			return corrupt(id, "node %d is malformed", head)
		}
		depth = h.Depth
		return nil
	})
	return depth == head, err
}

// pathSeqs returns the seqs root..head. Parents sort before children, so
// nodes after head cannot be on the path and are never read.
func (s *Store) pathSeqs(txn kv.Txn, id sid, head uint64) ([]uint64, error) {
	const absent = ^uint64(0)
	parents := make([]uint64, 0, 64) // indexed by seq
	read := 0
	it := txn.Iterate(kv.IterOptions{Prefix: nodePrefix(id)})
	for it.Seek(nodeKey(id, 1)); it.Valid(); it.Next() {
		seq, ok := keySeq(it.Key())
		if !ok {
			continue
		}
		if seq > head {
			break
		}
		var parent uint64
		err := iterValue(it, func(v []byte) error {
			h, _, derr := record.DecodeNodeHeader(v)
			if derr != nil {
				return corrupt(id, "node %d is malformed", seq)
			}
			parent = h.Parent
			if read += len(v); read >= releaseEvery {
				s.releasePages()
				read = 0
			}
			return nil
		})
		if err != nil {
			it.Close()
			return nil, err
		}
		for uint64(len(parents)) < seq {
			parents = append(parents, absent)
		}
		parents = append(parents, parent)
	}
	it.Close()

	var path []uint64
	for seq := head; seq != 0; {
		if seq >= uint64(len(parents)) || parents[seq] == absent {
			if seq == head {
				return nil, nodeNotFound(id, head)
			}
			return nil, corrupt(id, "node %d on the path to %d is missing", seq, head)
		}
		path = append(path, seq)
		p := parents[seq]
		if p >= seq {
			return nil, corrupt(id, "node %d has parent %d", seq, p)
		}
		seq = p
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path, nil
}

// List calls fn with every session's metadata, in key order. It reads one
// metadata record per session and seeks past the session's nodes: the
// commands list through ListInfo, and List is what checks of the listing
// compare it with. fn's error is returned as is.
func (s *Store) List(fn func(*session.Meta) error) error {
	var fnErr error
	listed := 0
	err := s.view(func(txn kv.Txn) error {
		return eachMeta(txn, func(id sid, v []byte) error {
			// Each seek maps pages of every table it passes: a scan of
			// 1,000 sessions of a 600 MB store mapped 400 MB.
			if listed++; listed%listReleaseEvery == 0 {
				s.releasePages()
			}
			m, err := record.DecodeMeta(v)
			if err != nil {
				return corrupt(id, "its metadata is malformed")
			}
			s.noteRead(&m, v)
			fnErr = fn(&m)
			return fnErr
		})
	})
	if fnErr != nil {
		return fnErr
	}
	if errors.Is(err, errNoStore) {
		return nil
	}
	return mapErr("list", err)
}

// Blob returns spilled content by its sha256.
func (s *Store) Blob(id string, sum [32]byte) ([]byte, error) {
	key, err := parseID(id)
	if err != nil {
		return nil, err
	}
	var data []byte
	err = s.view(func(txn kv.Txn) error {
		item, err := txn.Get(blobKey(key, sum))
		if errors.Is(err, kv.ErrNotFound) && s.shared != nil {
			data, err = largeBlob(txn, key, sum)
			return err
		}
		if err != nil {
			return err
		}
		data, err = copyValue(item)
		return err
	})
	if errors.Is(err, errNoStore) || errors.Is(err, kv.ErrNotFound) {
		return nil, notFoundf("blob %x not found in session %s", sum[:6], key)
	}
	return data, mapErr("read", err)
}
