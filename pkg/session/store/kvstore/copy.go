package kvstore

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"slices"
	"sync"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// What Copy did with a session (CopyItem.Copy).
const (
	CopyCopied   = "copied"   // written into the target, and verified there
	CopyPresent  = "present"  // the target held it already, byte for byte the same
	CopyDiffers  = "differs"  // the target holds another version: left as it is
	CopyDamaged  = "damaged"  // the source's records do not check: not copied
	CopyMismatch = "mismatch" // written, but the target does not read back the same
)

// CopyItem is one session of a copy: wc-store --copy prints one a line.
type CopyItem struct {
	Session string `json:"session"`
	Copy    string `json:"copy"`
	Nodes   int    `json:"nodes"`
	Blobs   int    `json:"blobs"`
	Bytes   int64  `json:"bytes"` // of its backup lines: metadata, nodes and blobs
	Problem string `json:"problem,omitempty"`
}

// CopyReport sums a copy up: wc-store --copy prints it last.
type CopyReport struct {
	From     string `json:"from"`
	To       string `json:"to"`
	OK       bool   `json:"ok"` // every session is in the target, verified
	Sessions int    `json:"sessions"`
	Copied   int    `json:"copied"`
	Present  int    `json:"present"`
	// Differs are sessions the target holds in another version; Damaged
	// and Mismatch sessions were not (or not faithfully) copied.
	Differs  []string  `json:"differs"`
	Damaged  []Problem `json:"damaged"`
	Mismatch []Problem `json:"mismatch"`
	Nodes    int       `json:"nodes"`
	Blobs    int       `json:"blobs"`
	Bytes    int64     `json:"bytes"`
}

// Copy copies every session of s, with its id, its whole tree, its
// branches and the blobs its nodes point at, into to, and verifies them
// there. Each session is read in one transaction (one revision of a
// store being written to), checked as a backup is checked on restore
// (its tree, running totals, metadata counts and blobs' sha256), and
// written as wc-new --restore writes one: blobs, then nodes, then the
// metadata as the commit point, so that a copy killed mid-way leaves only
// invisible leftovers that the next copy overwrites. A session the target
// holds already is compared, not written: the same bytes count as copied
// (so a rerun resumes), other ones are reported and left alone. Once
// every session has been seen, each one written is read back from to and
// compared, byte for byte, with what was read from s. opts.Item, when
// not nil, is called for each session as it is done, in id order, and
// again for one that then does not read back the same (CopyMismatch).
func Copy(s, to *Store, opts CopyOptions) (*CopyReport, error) {
	if err := to.writable(); err != nil {
		return nil, err
	}
	r := &CopyReport{From: s.storeName(), To: to.storeName(), Differs: []string{}, Damaged: []Problem{}, Mismatch: []Problem{}}
	ids, missing, err := s.copyIDs()
	if err != nil {
		return nil, err
	}
	report := func(it *CopyItem) error {
		switch it.Copy {
		case CopyCopied:
			r.Copied++
		case CopyPresent:
			r.Present++
		case CopyDiffers:
			r.Differs = append(r.Differs, it.Session)
		case CopyDamaged:
			r.Damaged = append(r.Damaged, Problem{Session: it.Session, What: it.Problem})
		case CopyMismatch:
			r.Copied--
			r.Mismatch = append(r.Mismatch, Problem{Session: it.Session, What: it.Problem})
		}
		if it.Copy == CopyCopied || it.Copy == CopyPresent {
			r.Nodes += it.Nodes
			r.Blobs += it.Blobs
			r.Bytes += it.Bytes
		}
		if opts.Item != nil {
			return opts.Item(it)
		}
		return nil
	}
	for _, id := range missing {
		r.Sessions++
		if err := report(&CopyItem{Session: id.String(), Copy: CopyDamaged, Problem: "it is listed, but its records are missing"}); err != nil {
			return nil, err
		}
	}
	type written struct {
		id  string
		sum [32]byte
	}
	var check []written
	err = inOrder(len(ids), opts.Workers, func(i int) (copied, error) {
		it, sum, err := s.copyOne(to, ids[i])
		return copied{it, sum}, err
	}, func(c copied, err error) error {
		if errors.Is(err, errCopyGone) {
			return nil // removed since the listing: nothing to copy
		}
		if err != nil {
			return err
		}
		r.Sessions++
		if c.item.Copy == CopyCopied {
			check = append(check, written{c.item.Session, c.sum})
		}
		if err := report(c.item); err != nil {
			return err
		}
		return errors.Join(s.Settle(), to.Settle())
	})
	if err != nil {
		return nil, err
	}
	err = inOrder(len(check), opts.Workers, func(i int) (copied, error) {
		back, err := to.copyOut(check[i].id)
		it := &CopyItem{Session: check[i].id}
		switch {
		case errors.Is(err, ErrDamaged) || errors.Is(err, errCopyGone):
			it.Copy, it.Problem = CopyMismatch, "it does not read back from the target: "+err.Error()
		case err != nil:
			return copied{}, err
		case back.sum != check[i].sum:
			it.Copy, it.Problem = CopyMismatch, "the target reads back other bytes than the source held"
		}
		return copied{item: it}, nil
	}, func(c copied, err error) error {
		if err != nil {
			return err
		}
		if c.item.Copy == CopyMismatch {
			if err := report(c.item); err != nil {
				return err
			}
		}
		return to.Settle()
	})
	if err != nil {
		return nil, err
	}
	r.OK = r.Copied+r.Present == r.Sessions
	return r, nil
}

// CopyOptions tune Copy.
type CopyOptions struct {
	// Workers is how many sessions are copied at a time (0: one). More
	// than one suits an engine whose every transaction waits for the
	// network and a disk (etcd); a handle opened Bulk takes one only.
	Workers int
	// Item, when not nil, is called with each session's CopyItem.
	Item func(*CopyItem) error
}

// copied is what copying a session, or reading it back, came to.
type copied struct {
	item *CopyItem
	sum  [32]byte
}

// inOrder runs work(0..n-1), up to workers at a time, and calls emit
// with each result in index order, on the caller's goroutine. It stops
// starting work at emit's first error, waits for what runs, and returns
// that error.
func inOrder(n, workers int, work func(i int) (copied, error), emit func(copied, error) error) error {
	type result struct {
		c   copied
		err error
	}
	workers = max(workers, 1)
	results := make([]chan result, n)
	for i := range results {
		results[i] = make(chan result, 1)
	}
	stop := make(chan struct{})
	slots := make(chan struct{}, workers)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			select {
			case slots <- struct{}{}:
			case <-stop:
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := work(i)
				results[i] <- result{c, err}
				<-slots
			}()
		}
	}()
	defer wg.Wait()
	defer close(stop)
	for i := range n {
		// Past stop nothing more starts, so each result waited for is
		// one under way.
		r := <-results[i]
		if err := emit(r.c, r.err); err != nil {
			return err
		}
	}
	return nil
}

// storeName names the store in a copy's report: its directory, or the
// name an engine's store was opened with.
func (s *Store) storeName() string {
	if s.shared != nil {
		return s.shared.name
	}
	return s.dir
}

// errCopyGone is a session removed between the listing and its copy.
var errCopyGone = errors.New("store: the session is gone")

// copyIDs returns the ids of the sessions that have metadata, in id
// order, and those the listing names without metadata (damage: their
// records are missing).
func (s *Store) copyIDs() (ids, missing []sid, err error) {
	if s.eng == nil {
		return nil, nil, nil // a reader found no store: nothing to copy
	}
	has := map[sid]bool{}
	err = s.view(func(txn kv.Txn) error {
		ids, missing = ids[:0], missing[:0]
		clear(has)
		err := eachMeta(txn, func(id sid, _ []byte) error {
			if !reservedID(id) {
				ids = append(ids, id)
				has[id] = true
			}
			return nil
		})
		if err != nil {
			return err
		}
		return eachListingKey(txn, func(key []byte) error {
			if len(key) == listingKeyLen && !has[listingKeyID(key)] {
				missing = append(missing, listingKeyID(key))
			}
			return nil
		})
	})
	slices.SortFunc(missing, func(a, b sid) int { return bytes.Compare(a[:], b[:]) })
	return ids, slices.Compact(missing), mapErr("copy", err)
}

// copyOne copies session id into to, unless to holds it already. The
// item's Copy is CopyCopied when it wrote the session (not yet verified);
// sum is what it read.
func (s *Store) copyOne(to *Store, id sid) (*CopyItem, [32]byte, error) {
	it := &CopyItem{Session: id.String()}
	src, err := s.copyOut(it.Session)
	switch {
	case errors.Is(err, ErrDamaged):
		it.Copy, it.Problem = CopyDamaged, err.Error()
		return it, [32]byte{}, nil
	case err != nil:
		return nil, [32]byte{}, err
	}
	it.Nodes, it.Blobs, it.Bytes = len(src.session.Nodes), len(src.session.Blobs), src.size
	dst, err := to.copyOut(it.Session)
	switch {
	case err == nil && dst.sum == src.sum:
		it.Copy = CopyPresent
		return it, src.sum, nil
	case err == nil:
		it.Copy, it.Problem = CopyDiffers, "the target holds another version of it: left as it is"
		return it, src.sum, nil
	case errors.Is(err, ErrDamaged):
		it.Copy, it.Problem = CopyDiffers, "the target holds a damaged version of it: left as it is ("+err.Error()+")"
		return it, src.sum, nil
	case !errors.Is(err, errCopyGone):
		return nil, [32]byte{}, err
	}
	// The blobs first: the metadata makes the session visible.
	for _, b := range src.session.Blobs {
		if err := to.PutBlob(it.Session, b.Sum, b.Data); err != nil {
			return nil, [32]byte{}, err
		}
	}
	if err := to.Commit(&src.session.Meta, src.session.Nodes); err != nil {
		return nil, [32]byte{}, err
	}
	it.Copy = CopyCopied
	return it, src.sum, nil
}

// copiedSession is a session as a copy reads it: its backup lines
// (record.BackupWriter: the metadata, every node as a --format jsonl
// --tree line, every blob its nodes point at), their sha256, and the
// session they restore.
type copiedSession struct {
	size    int64
	sum     [32]byte
	session *record.Restored
}

// copyOut reads session id in one transaction as its backup, and checks
// it as a restore does, and more: each node's running totals must be its
// path's, and the metadata's counts its head's, as stored. A record that
// does not check is ErrDamaged; a session without metadata errCopyGone.
func (s *Store) copyOut(id string) (*copiedSession, error) {
	key, err := parseID(id)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	var meta session.Meta
	var headers []session.NodeHeader
	err = s.view(func(txn kv.Txn) error {
		buf.Reset()
		headers = headers[:0]
		w := record.NewBackupWriter(&buf)
		v, err := txn.Get(metaKey(key))
		if errors.Is(err, kv.ErrNotFound) {
			return errCopyGone
		}
		if err != nil {
			return err
		}
		if meta, err = record.DecodeMeta(v); err != nil {
			return corrupt(key, "its metadata is malformed")
		}
		if err := w.Header(&meta); err != nil {
			return err
		}
		names := meta.BranchNames()
		var blobs [][32]byte
		seen := map[[32]byte]bool{}
		var line []byte
		err = eachStoredNode(txn, key, 1, meta.NextSeq, func(seq uint64, v []byte) error {
			n, err := record.DecodeNode(seq, v)
			if err != nil {
				return corrupt(key, "node %d is malformed: %v", seq, err)
			}
			headers = append(headers, n.Header())
			if bytes.Contains(v, []byte(session.BlobRefPrefix)) {
				for _, sum := range session.BlobRefs([]session.Node{n}) {
					if !seen[sum] {
						seen[sum] = true
						blobs = append(blobs, sum)
					}
				}
			}
			line = session.AppendNodeLine(line[:0], id, &n, seq == meta.Head, names[seq])
			_, err = w.Write(line)
			return err
		})
		if err != nil {
			return err
		}
		for _, sum := range blobs {
			data, err := txn.Get(blobKey(key, sum))
			if errors.Is(err, kv.ErrNotFound) && s.shared != nil {
				data, err = largeBlob(txn, key, sum)
			}
			if errors.Is(err, kv.ErrNotFound) {
				continue // text that only looks like a blob's pointer, as a backup has it
			}
			if err != nil {
				return err
			}
			if sha256.Sum256(data) != sum {
				return corrupt(key, "blob %x does not match its sha256", sum[:6])
			}
			if err := w.Blob(id, data); err != nil {
				return err
			}
		}
		return w.End()
	})
	if errors.Is(err, errNoStore) {
		err = errCopyGone
	}
	if err != nil {
		return nil, mapErr("copy", err)
	}
	if s.bulk {
		s.moved.Add(int64(buf.Len()))
	}
	c := &copiedSession{size: int64(buf.Len()), sum: sha256.Sum256(buf.Bytes())}
	c.session, err = record.NewBackupReader(&buf).Next()
	var inv *session.InvalidError
	if errors.As(err, &inv) {
		return nil, corrupt(key, "%s", inv.Msg)
	}
	if err != nil {
		return nil, mapErr("copy", err)
	}
	for i := range c.session.Nodes {
		n := &c.session.Nodes[i]
		if n.Header() != headers[i] {
			return nil, corrupt(key, "node %d's running totals are not its path's", n.Seq)
		}
	}
	if !bytes.Equal(record.EncodeMeta(&c.session.Meta), record.EncodeMeta(&meta)) {
		return nil, corrupt(key, "its metadata's counts are not its head's")
	}
	return c, nil
}
