package kvstore

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// rangeKeys counts the keys of a session's range.
func rangeKeys(t *testing.T, s *Store, id string) int {
	t.Helper()
	key, _ := parseID(id)
	n := 0
	err := s.eng.View(func(txn kv.Txn) error {
		it := txn.Iterate(kv.IterOptions{Prefix: sessionPrefix(key)})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// storeHolds reports whether any file under dir contains b.
func storeHolds(t *testing.T, dir string, b []byte) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		found = found || bytes.Contains(data, b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// A purge leaves out what a removal killed midway left (a range without
// metadata) and what an interrupted commit left past a session's next
// seq, keeps every live key, and leaves the handle usable.
func TestPurge(t *testing.T) {
	dir := t.TempDir()
	keep, half := testID(1, 1), testID(2, 2)
	create(t, dir, map[string][]session.Node{keep: chain(4, 10), half: chain(4, 10)})
	w := open(t, dir, Write)
	secret := []byte("QZXJVKWPYBFGMH in a blob")
	if err := w.PutBlob(half, sha256.Sum256(secret), secret); err != nil {
		t.Fatal(err)
	}
	keptBlob := []byte("the kept session's blob")
	if err := w.PutBlob(keep, sha256.Sum256(keptBlob), keptBlob); err != nil {
		t.Fatal(err)
	}
	hk, _ := parseID(half)
	kk, _ := parseID(keep)
	err := w.eng.Update(func(txn kv.Txn) error {
		listing, err := storedListingKey(txn, hk)
		if err == nil {
			err = txn.Delete(listing)
		}
		if err == nil {
			err = txn.Delete(metaKey(hk)) // killed here, before the nodes and blobs
		}
		if err == nil {
			err = txn.Set(nodeKey(kk, 99), []byte("an interrupted commit's node"))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	mustClose(t, w)
	if !storeHolds(t, dir, []byte("QZXJVKWPYBFGMH")) {
		t.Fatal("the secret is not in the store's files before the purge")
	}

	w = open(t, dir, Write)
	before := rangeKeys(t, w, keep)
	if err := w.Purge(); err != nil {
		t.Fatal(err)
	}
	if n := rangeKeys(t, w, half); n != 0 {
		t.Errorf("%d keys of the half-removed session are left", n)
	}
	if n := rangeKeys(t, w, keep); n != before-1 {
		t.Errorf("the kept session has %d keys, want %d (all but the orphan node)", n, before-1)
	}
	if got := pathSeqsOf(t, w, keep, 4); len(got) != 4 {
		t.Errorf("kept path = %v", got)
	}
	if got, err := w.Blob(keep, sha256.Sum256(keptBlob)); err != nil || !bytes.Equal(got, keptBlob) {
		t.Errorf("kept blob = %q, %v", got, err)
	}
	if err := appendOne(w, keep, "after the purge"); err != nil {
		t.Errorf("append after the purge: %v", err)
	}
	mustClose(t, w)
	if storeHolds(t, dir, []byte("QZXJVKWPYBFGMH")) {
		t.Error("the secret is still in the store's files after the purge")
	}

	r := open(t, dir, Read)
	defer mustClose(t, r)
	if err := r.CheckListing(); err != nil {
		t.Error(err)
	}
	if err := r.Purge(); err == nil {
		t.Error("a reader purged")
	}
}
