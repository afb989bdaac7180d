package kvstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// copySource writes n sessions into s: each with a named branch off its
// second node, a compaction-like repeat of a message (stored as a
// reference), and a spilled blob; every fifth one with a blob of 2 MiB and
// a message of 1.6 MiB, beyond an etcd value. It returns their ids.
func copySource(t testing.TB, s *Store, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id := testID(uint32(i)*0x01000193+0x10000000, i)
		blob := []byte(fmt.Sprintf("spilled output %d\n", i))
		text := fmt.Sprintf("message of session %d", i)
		if i%5 == 0 {
			blob = bytes.Repeat([]byte(fmt.Sprintf("big spilled output %d\n", i)), 100_000) // > 2 MiB
			text = strings.Repeat("long message ", 130_000)                                 // 1.6 MiB
		}
		sum := sha256.Sum256(blob)
		if err := s.PutBlob(id, sum, blob); err != nil {
			t.Fatal(err)
		}
		nodes := chain(4, 40)
		nodes[1] = session.Child(&nodes[0], 2, userMsg(text))
		nodes[2] = session.Child(&nodes[1], 3, userMsg("see "+session.BlobRefPrefix+hex.EncodeToString(sum[:])))
		nodes[3] = session.Child(&nodes[2], 4, nodes[0].Msg) // repeats node 1
		nodes[3].Same = 1
		alt := session.Child(&nodes[1], 5, userMsg(fmt.Sprintf("the other branch of %d", i)))
		nodes = append(nodes, alt)
		m := metaFor(id, nodes[:4])
		m.NextSeq = 6
		m.Branches = []session.NamedBranch{{Name: "alt", Seq: 5}, {Name: "", Seq: 3}}
		m.SetSystemPrompt("be brief")
		m.SetHead(&nodes[3])
		if err := s.Commit(&m, nodes); err != nil {
			t.Fatalf("commit %s: %v", id, err)
		}
		ids = append(ids, id)
	}
	return ids
}

// backupOf is the session's backup lines, as wc-export --format backup
// prints them: the metadata, every node's --format jsonl --tree line, the
// blobs. It reads through the Handle, as commands do.
func backupOf(t testing.TB, s Handle, id string) []byte {
	t.Helper()
	m, err := s.Meta(id)
	if err != nil {
		t.Fatalf("meta of %s: %v", id, err)
	}
	var buf bytes.Buffer
	w := record.NewBackupWriter(&buf)
	if err := w.Header(&m); err != nil {
		t.Fatal(err)
	}
	names := m.BranchNames()
	var nodes []session.Node
	err = s.Nodes(id, func(seq uint64, raw []byte) error {
		n, err := record.DecodeNode(seq, raw)
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
		_, err = w.Write(session.AppendNodeLine(nil, id, &n, seq == m.Head, names[seq]))
		return err
	})
	if err != nil {
		t.Fatalf("nodes of %s: %v", id, err)
	}
	for _, sum := range session.BlobRefs(nodes) {
		data, err := s.Blob(id, sum)
		if err != nil {
			t.Fatalf("blob %x of %s: %v", sum[:4], id, err)
		}
		if err := w.Blob(id, data); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// sameSessions fails t unless b holds exactly the sessions ids, byte for
// byte as a holds them.
func sameSessions(t testing.TB, a, b *Store, ids []string) {
	t.Helper()
	for _, s := range []*Store{b} {
		var got []string
		if err := s.List(func(m *session.Meta) error { got = append(got, m.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		if want := slices.Sorted(slices.Values(ids)); !slices.Equal(got, want) {
			t.Fatalf("%s holds %d sessions, want %d", s.storeName(), len(got), len(want))
		}
		if err := s.CheckListing(); err != nil {
			t.Errorf("%s: %v", s.storeName(), err)
		}
	}
	for _, id := range ids {
		if x, y := backupOf(t, a, id), backupOf(t, b, id); !bytes.Equal(x, y) {
			t.Errorf("session %s differs after the copy:\n%.300s\n%.300s", id, x, y)
		}
	}
}

func copyAll(t testing.TB, from, to *Store) *CopyReport {
	t.Helper()
	r, err := Copy(from, to, CopyOptions{Workers: 4})
	if err != nil {
		t.Fatalf("copy %s → %s: %v", from.storeName(), to.storeName(), err)
	}
	return r
}

func wantReport(t testing.TB, r *CopyReport, sessions, copied, present int) {
	t.Helper()
	if !r.OK || r.Sessions != sessions || r.Copied != copied || r.Present != present ||
		len(r.Differs)+len(r.Damaged)+len(r.Mismatch) != 0 {
		t.Fatalf("report %+v, want %d sessions, %d copied, %d present, ok", r, sessions, copied, present)
	}
}

func TestCopyDirToDir(t *testing.T) {
	src := open(t, t.TempDir(), Write)
	ids := copySource(t, src, 6)
	dst := open(t, filepath.Join(t.TempDir(), "new"), Write)
	var items []string
	r, err := Copy(src, dst, CopyOptions{Item: func(it *CopyItem) error {
		items = append(items, it.Session+" "+it.Copy)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	wantReport(t, r, 6, 6, 0)
	if len(items) != 6 || r.Blobs != 6 || r.Nodes != 30 {
		t.Errorf("items %q, %d blobs, %d nodes", items, r.Blobs, r.Nodes)
	}
	sameSessions(t, src, dst, ids)
	for _, id := range ids {
		checkSession(t, dst, id)
	}
	// Again: everything is there already, and nothing is written.
	wantReport(t, copyAll(t, src, dst), 6, 0, 6)
	if dst.lastTxns.Load() != 1 { // the last commit of the first copy
		t.Errorf("the second copy committed")
	}
}

// dir → etcd → dir: the sessions come back byte for byte, the big
// messages and blobs stored in pieces on etcd.
func TestCopyThroughEtcd(t *testing.T) {
	c := newEtcdCluster(t)
	src := open(t, t.TempDir(), Write)
	ids := copySource(t, src, 6)
	mid := c.open(t)
	wantReport(t, copyAll(t, src, mid), 6, 6, 0)
	if n := chunkCount(t, mid, ids[0]); n < 4 {
		t.Errorf("the 1.6 MiB message and the 2 MiB blob are in %d pieces on etcd", n)
	}
	back := open(t, t.TempDir(), Write)
	wantReport(t, copyAll(t, mid, back), 6, 6, 0)
	sameSessions(t, src, mid, ids)
	sameSessions(t, src, back, ids)
	// etcd → etcd, another prefix.
	other := newEtcdCluster(t).open(t)
	wantReport(t, copyAll(t, mid, other), 6, 6, 0)
	sameSessions(t, src, other, ids)
	wantReport(t, copyAll(t, back, other), 6, 0, 6)
}

// A session the target holds in another version is left as it is, and
// reported; the others are copied.
func TestCopyDiffers(t *testing.T) {
	src := open(t, t.TempDir(), Write)
	ids := copySource(t, src, 3)
	dst := open(t, t.TempDir(), Write)
	wantReport(t, copyAll(t, src, dst), 3, 3, 0)
	if err := appendCounted(dst, ids[1], "written in the target"); err != nil {
		t.Fatal(err)
	}
	if err := appendCounted(src, ids[2], "written in the source after the copy"); err != nil {
		t.Fatal(err)
	}
	before := [][]byte{backupOf(t, dst, ids[1]), backupOf(t, dst, ids[2])}
	r := copyAll(t, src, dst)
	if r.OK || r.Present != 1 || !slices.Equal(r.Differs, ids[1:]) {
		t.Fatalf("report %+v, want %s present and the others differing", r, ids[0])
	}
	if !bytes.Equal(before[0], backupOf(t, dst, ids[1])) || !bytes.Equal(before[1], backupOf(t, dst, ids[2])) {
		t.Errorf("a differing session was overwritten")
	}
}

// A damaged record of the source is reported, and its session not
// copied; the other sessions are.
func TestCopyDamagedSource(t *testing.T) {
	src := open(t, t.TempDir(), Write)
	ids := copySource(t, src, 4)
	id1, _ := parseID(ids[1])
	id2, _ := parseID(ids[2])
	id3, _ := parseID(ids[3])
	m2, err := src.Meta(ids[2])
	if err != nil {
		t.Fatal(err)
	}
	m2.Tokens++
	err = src.eng.Update(func(txn kv.Txn) error {
		// A node whose running totals are not its path's.
		n, _, err := getNode(txn, id1, 2)
		if err != nil {
			return err
		}
		n.Tokens += 7
		if err := txn.Set(nodeKey(id1, 2), record.EncodeNode(&n)); err != nil {
			return err
		}
		// Metadata whose counts are not its head's.
		if err := txn.Set(metaKey(id2), record.EncodeMeta(&m2)); err != nil {
			return err
		}
		// A node that is no JSON.
		return txn.Set(nodeKey(id3, 4), []byte("{not json"))
	})
	if err != nil {
		t.Fatal(err)
	}
	dst := open(t, t.TempDir(), Write)
	r := copyAll(t, src, dst)
	if r.OK || r.Copied != 1 || len(r.Damaged) != 3 {
		t.Fatalf("report %+v, want 1 copied and 3 damaged", r)
	}
	for i, want := range []string{"node 2's running totals", "metadata's counts", "node 4 is malformed"} {
		if p := r.Damaged[i]; p.Session != ids[i+1] || !strings.Contains(p.What, want) {
			t.Errorf("damaged %d: %+v, want %s: %s", i, p, ids[i+1], want)
		}
	}
	for _, id := range ids[1:] {
		if _, err := dst.Meta(id); err == nil {
			t.Errorf("damaged session %s was copied", id)
		}
	}
	sameSessions(t, src, dst, ids[:1])
}

// A blob whose bytes no longer match its sha256 is damage too.
func TestCopyDamagedBlob(t *testing.T) {
	src := open(t, t.TempDir(), Write)
	ids := copySource(t, src, 2)
	key, _ := parseID(ids[1])
	var sum [32]byte
	err := src.eng.Update(func(txn kv.Txn) error {
		it := txn.Iterate(kv.IterOptions{Prefix: append(sessionPrefix(key), tagBlob)})
		defer it.Close()
		it.Seek(append(sessionPrefix(key), tagBlob))
		copy(sum[:], it.Key()[sessionKeyLen+1:])
		return txn.Set(blobKey(key, sum), []byte("not what was spilled"))
	})
	if err != nil {
		t.Fatal(err)
	}
	r := copyAll(t, src, open(t, t.TempDir(), Write))
	if r.Copied != 1 || len(r.Damaged) != 1 || r.Damaged[0].Session != ids[1] || !strings.Contains(r.Damaged[0].What, "sha256") {
		t.Fatalf("report %+v, want %s damaged for its blob", r, ids[1])
	}
}

// appendCounted appends a user message at the head of session id as
// wc-append does, the metadata's counts included.
func appendCounted(s Handle, id, text string) error {
	m, err := s.Meta(id)
	if err != nil {
		return err
	}
	head, err := s.Node(id, m.Head)
	if err != nil {
		return err
	}
	n := session.Child(&head, m.NextSeq, userMsg(text))
	m.NextSeq = n.Seq + 1
	m.SetHead(&n)
	return s.Commit(&m, []session.Node{n})
}

// garbling is an engine that changes what it is given to keep: "session
// 1" becomes "session 7" in every value it sets.
type garbling struct{ kv.Engine }

type garblingTxn struct{ kv.Txn }

func (g garbling) Update(fn func(kv.Txn) error) error {
	return g.Engine.Update(func(txn kv.Txn) error { return fn(garblingTxn{txn}) })
}

func (t garblingTxn) Set(key, value []byte) error {
	return t.Txn.Set(key, bytes.ReplaceAll(value, []byte("session 1"), []byte("session 7")))
}

// A target that does not keep what it was given is found out by the
// verification: the session is reported, and the copy is not ok.
func TestCopyVerifies(t *testing.T) {
	src := open(t, t.TempDir(), Write)
	ids := copySource(t, src, 3)
	dst := openOn(t, garbling{badgerEngine(t)}, "garbling")
	var lines []string
	r, err := Copy(src, dst, CopyOptions{Workers: 3, Item: func(it *CopyItem) error {
		lines = append(lines, it.Copy+" "+it.Session)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"copied " + ids[0], "copied " + ids[1], "copied " + ids[2], "mismatch " + ids[1]}
	if r.OK || r.Copied != 2 || len(r.Mismatch) != 1 || r.Mismatch[0].Session != ids[1] || !slices.Equal(lines, want) {
		t.Fatalf("report %+v, lines %q; want %s not read back the same", r, lines, ids[1])
	}
}
