package kvstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
	"github.com/wctoolkit/wc/pkg/session/store/storedir"
)

// CheckReport is what Check found: wc-store --check prints it.
type CheckReport struct {
	Store     string      `json:"store"`
	OK        bool        `json:"ok"`
	Sessions  int         `json:"sessions"`
	Nodes     int         `json:"nodes"`
	Blobs     int         `json:"blobs"`
	Tables    int         `json:"tables"`
	ValueLogs int         `json:"value_logs"`
	Index     *IndexStats `json:"index,omitempty"` // the search index (textsearch.go)
	Problems  []Problem   `json:"problems"`
}

// Problem is one thing Check found wrong; Session is empty for the
// store's files.
type Problem struct {
	Session string `json:"session,omitempty"`
	What    string `json:"problem"`
}

func (r *CheckReport) add(session, format string, args ...any) {
	r.Problems = append(r.Problems, Problem{Session: session, What: fmt.Sprintf(format, args...)})
}

// Check verifies a whole store, reading every file Badger keeps and every
// record wc wrote: the MANIFEST and every table it lists (their index and
// every block against its checksum), every value log entry, then every
// session (every node decodes, every parent and running total, the head,
// every branch and checkpoint, the counts of the metadata, every blob
// against its sha256) and the listing against the metadata. It reads the
// store as a reader does (recovering first what a killed writer left) and
// changes nothing else. The error is for a store it could not read at all.
func Check(opts Options) (*CheckReport, error) {
	dir := filepath.Clean(opts.Dir)
	r := &CheckReport{Store: dir, Problems: []Problem{}}
	owner, err := storedir.CheckStore(dir, storedir.Trust{OtherOwner: opts.OtherOwner})
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "db")); err == nil {
		// Under the shared lock, so that no writer changes the files meanwhile.
		lock, err := sharedLock(dir, opts)
		if err != nil {
			return nil, err
		}
		fatal := checkFiles(dir, owner, r)
		checkRecorded(filepath.Join(dir, "db"), readVerified(lock).files, r)
		storedir.Unlock(lock)
		if fatal {
			return r, nil
		}
	}
	st, err := Open(opts, Read)
	if err != nil {
		if errors.Is(err, ErrDamaged) {
			r.add("", "%s", err.Error())
			return r, nil
		}
		return nil, err
	}
	defer st.Close()
	if st.eng == nil {
		r.OK = true
		return r, nil
	}
	if d := st.maint(); d == nil {
		r.add("", "the store's engine cannot check its tables")
	} else if err := d.VerifyChecksum(); err != nil {
		r.add("", "a table fails its checksums: %s", firstLineOf(err.Error()))
	}
	st.checkSessions(r)
	st.checkIndex(r)
	if err := st.CheckListing(); err != nil {
		r.add("", "%s", err.Error())
	}
	r.OK = len(r.Problems) == 0
	return r, nil
}

// sharedLock takes Dir/lock shared, as a reader does (see Store.openLock).
func sharedLock(dir string, opts Options) (*os.File, error) {
	return flockPath(dir, filepath.Join(dir, "lock"), noFollow, syscall.LOCK_SH, time.Now().Add(opts.LockTimeout))
}

// checkFiles checks db/'s files; it reports whether they are too damaged
// for Badger to open.
func checkFiles(dir string, owner int, r *CheckReport) (fatal bool) {
	dbDir := filepath.Join(dir, "db")
	files, err := listDB(dbDir, owner)
	if err != nil {
		r.add("", "%s", err.Error())
		return true
	}
	r.Tables, r.ValueLogs = len(files.tables), len(files.vlogs)
	if _, err := inspectDB(dir, owner, false, nil); err != nil {
		r.add("", "%s", err.Error())
		return true
	}
	if files.manifest {
		m, err := readManifest(dir)
		if err != nil {
			r.add("", "%s", err.Error())
			return true
		}
		for _, id := range slices.Sorted(maps.Keys(m)) {
			if _, err := badgerkv.TableMaxVersion(filepath.Join(dbDir, fmt.Sprintf("%06d.sst", id))); err != nil {
				r.add("", "table db/%06d.sst is damaged (%v)", id, err)
				fatal = true
			}
		}
	}
	if len(files.vlogs) > 0 {
		last := slices.Max(slices.Collect(maps.Keys(files.vlogs)))
		for _, fid := range slices.Sorted(maps.Keys(files.vlogs)) {
			// Only the last log may end in what a killed writer left.
			if off, err := scanValueLog(filepath.Join(dbDir, fmt.Sprintf("%06d.vlog", fid)), fid == last); err != nil {
				r.add("", "value log db/%06d.vlog is damaged at byte %d (%v)", fid, off, err)
			}
		}
	}
	return fatal
}

// checkRecorded compares the bytes no checksum of Badger's covers with
// what the last writer recorded (see verifiedRecord).
func checkRecorded(dbDir string, recorded map[string]uint32, r *CheckReport) {
	now := unverifiedBytes(dbDir)
	for _, name := range slices.Sorted(maps.Keys(recorded)) {
		crc, ok := now[name]
		switch {
		case !ok && name == "KEYREGISTRY":
			r.add("", "db/KEYREGISTRY is missing")
		case ok && crc != recorded[name] && name == "KEYREGISTRY":
			r.add("", "db/KEYREGISTRY has changed since the store was last closed")
		case ok && crc != recorded[name]:
			r.add("", "the header of value log db/%s has changed since the store was last closed", name)
		}
	}
}

// checkSessions checks every session's records.
func (s *Store) checkSessions(r *CheckReport) {
	err := s.view(func(txn kv.Txn) error {
		return eachRange(txn, []byte{tagSession}, nil, func(id sid, it kv.Iterator) error {
			if reservedID(id) {
				return nil // a listing shard: CheckListing's
			}
			c, problems := checkSessionRange(txn, id)
			r.Nodes += c.nodes
			r.Blobs += c.blobs
			if c.meta {
				r.Sessions++
			}
			for _, p := range problems {
				r.add(id.String(), "%s", p)
			}
			it.Seek(append(sessionPrefix(id), 0xff))
			return nil
		})
	})
	if err != nil {
		r.add("", "reading the sessions: %s", err.Error())
	}
}

// sessionCounts is what one session's range holds.
type sessionCounts struct {
	meta         bool
	nodes, blobs int
}

// checkedNode is what checking a node keeps of it.
type checkedNode struct {
	h      session.NodeHeader
	tokens uint64 // its own message's
	user   bool
	blobs  [][32]byte // blobs its message points at
}

// checkSessionRange reads every record of session id (blobs, nodes, the
// metadata) and returns what is wrong with them.
func checkSessionRange(txn kv.Txn, id sid) (sessionCounts, []string) {
	var c sessionCounts
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	blobs := map[[32]byte]bool{}
	nodes := map[uint64]*checkedNode{}
	var meta *session.Meta
	prefix := sessionPrefix(id)
	it := txn.Iterate(kv.IterOptions{Prefix: prefix})
	defer it.Close()
	for it.Seek(prefix); it.Valid(); it.Next() {
		key := it.Key()
		err := iterValue(it, func(v []byte) error {
			switch {
			case len(key) == sessionKeyLen+1+32 && key[sessionKeyLen] == tagBlob:
				c.blobs++
				var sum [32]byte
				copy(sum[:], key[sessionKeyLen+1:])
				if sha256.Sum256(v) != sum {
					bad("blob %x does not match its sha256", sum[:6])
					return nil
				}
				blobs[sum] = true
			case len(key) == sessionKeyLen+1+32 && key[sessionKeyLen] == tagLargeBlob:
				c.blobs++
				sum := [32]byte(key[sessionKeyLen+1:])
				if _, err := largeBlob(txn, id, sum); err != nil {
					bad("blob %x: %v", sum[:6], err)
					return nil
				}
				blobs[sum] = true
			case len(key) == sessionKeyLen+1+32 && key[sessionKeyLen] == tagChunk:
				if sha256.Sum256(v) != [32]byte(key[sessionKeyLen+1:]) {
					bad("a piece of a large node does not match its sha256")
				}
			case len(key) == sessionKeyLen+1+8 && key[sessionKeyLen] == tagNode:
				c.nodes++
				seq, _ := keySeq(key)
				if record.IsChunked(v) {
					full, err := joinChunks(txn, id, seq, v, nil)
					if err != nil {
						bad("node %d: %v", seq, err)
						return nil
					}
					v = full
				}
				n, err := checkNode(nodes, seq, v)
				if err != nil {
					bad("node %d: %v", seq, err)
					return nil
				}
				nodes[seq] = n
			case bytes.Equal(key, metaKey(id)):
				c.meta = true
				m, err := record.DecodeMeta(v)
				if err != nil {
					bad("its metadata does not decode: %v", err)
					return nil
				}
				meta = &m
			case bytes.Equal(key, legacyMetaKey(id)):
				// Kept until a move to schema 4 finishes: checkSchema's.
			case bytes.Equal(key, tokenKey(id)) || bytes.Equal(key, guardKey(id)):
				// A shared store's marks of its commits (shared.go).
			default:
				bad("key %x is not one wc writes", key)
			}
			return nil
		})
		if err != nil {
			bad("%s", mapErr("read", err).Error())
		}
	}
	if meta == nil {
		if c.nodes > 0 || c.blobs > 0 {
			// What a killed commit of a new session leaves: invisible.
			return c, nil
		}
		return c, problems
	}
	return c, append(problems, checkTree(meta, nodes, blobs)...)
}

// checkNode decodes a stored node and checks its running totals against
// its parent's (nodes holds those below it).
func checkNode(nodes map[uint64]*checkedNode, seq uint64, v []byte) (*checkedNode, error) {
	h, raw, err := record.DecodeNodeHeader(v)
	if err != nil {
		return nil, err
	}
	n := &checkedNode{h: h}
	if h.Same != 0 {
		target := nodes[h.Same]
		if target == nil || h.Same >= seq || target.h.Same != 0 {
			return nil, fmt.Errorf("refers to node %d, which holds no message", h.Same)
		}
		n.tokens, n.user, n.blobs = target.tokens, target.user, target.blobs
	} else {
		full, err := record.DecodeNode(seq, v)
		if err != nil {
			return nil, err
		}
		n.tokens = session.MessageTokens(&full.Msg)
		n.user = full.Msg.Role == session.RoleUser
		for rest := raw; ; {
			i := bytes.Index(rest, []byte(session.BlobRefPrefix))
			if i < 0 || len(rest) < i+len(session.BlobRefPrefix)+64 {
				break
			}
			var sum [32]byte
			if _, err := hex.Decode(sum[:], rest[i+len(session.BlobRefPrefix):i+len(session.BlobRefPrefix)+64]); err == nil {
				n.blobs = append(n.blobs, sum)
			}
			rest = rest[i+len(session.BlobRefPrefix):]
		}
	}
	want := session.NodeHeader{Parent: h.Parent, Depth: 1, Tokens: n.tokens}
	if n.user {
		want.Users = 1
	}
	if h.Parent != 0 {
		p := nodes[h.Parent]
		if p == nil || h.Parent >= seq {
			return nil, fmt.Errorf("its parent %d is not stored below it", h.Parent)
		}
		want.Depth += p.h.Depth
		want.Tokens += p.h.Tokens
		want.Users += p.h.Users
	}
	if h.Depth != want.Depth || h.Tokens != want.Tokens || h.Users != want.Users {
		return nil, fmt.Errorf("its running totals (%d messages, %d tokens, %d users) are not its parent's and its own (%d, %d, %d)",
			h.Depth, h.Tokens, h.Users, want.Depth, want.Tokens, want.Users)
	}
	return n, nil
}

// checkTree checks the metadata against the nodes: the head and every
// branch and checkpoint exist, the counts are the head's, and every blob
// the active path points at is there.
func checkTree(m *session.Meta, nodes map[uint64]*checkedNode, blobs map[[32]byte]bool) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	visible := func(seq uint64) bool { return seq != 0 && seq < m.NextSeq && nodes[seq] != nil }
	if m.Head != 0 && !visible(m.Head) {
		bad("its head, node %d, is missing", m.Head)
		return problems
	}
	for _, b := range m.Branches {
		if b.Seq != 0 && !visible(b.Seq) {
			bad("branch %q points at node %d, which is missing", b.Name, b.Seq)
		}
	}
	if cp := m.Checkpoint; cp != nil && cp.Seq != 0 && !visible(cp.Seq) {
		bad("its checkpoint points at node %d, which is missing", cp.Seq)
	}
	var head session.NodeHeader
	if m.Head != 0 {
		head = nodes[m.Head].h
	}
	if m.SystemTokens != session.EstimateTokens(m.SystemPrompt) {
		bad("its system_tokens %d are not its system prompt's %d", m.SystemTokens, session.EstimateTokens(m.SystemPrompt))
	}
	if m.MessageCount != head.Depth || m.UserMessageCount != head.Users || m.Tokens != m.SystemTokens+head.Tokens {
		bad("its metadata counts %d messages, %d user messages and %d tokens; its head's totals say %d, %d and %d",
			m.MessageCount, m.UserMessageCount, m.Tokens, head.Depth, head.Users, m.SystemTokens+head.Tokens)
	}
	for seq := m.Head; seq != 0; {
		n := nodes[seq]
		if n == nil {
			bad("node %d on its active path is missing", seq)
			break
		}
		for _, sum := range n.blobs {
			if !blobs[sum] {
				bad("node %d points at blob %x, which is missing", seq, sum[:6])
			}
		}
		seq = n.h.Parent
	}
	return problems
}
