package kvstore

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/badgerkv"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// toLegacy makes dir look like a store of an older schema: the metadata
// under its old tag, the listing in the old shards (none for schema 1).
func toLegacy(t *testing.T, dir string, version int) {
	t.Helper()
	s := open(t, dir, Write)
	defer mustClose(t, s)
	err := s.eng.Update(func(txn kv.Txn) error {
		type kv struct{ k, v []byte }
		var metas, entries []kv
		if err := eachMeta(txn, func(id sid, v []byte) error {
			metas = append(metas, kv{bytes.Clone(id[:]), bytes.Clone(v)})
			return nil
		}); err != nil {
			return err
		}
		if err := eachListingKey(txn, func(k []byte) error {
			item, err := txn.Get(k)
			if err != nil {
				return err
			}
			v, err := bytes.Clone(item), nil
			entries = append(entries, kv{bytes.Clone(k), v})
			return err
		}); err != nil {
			return err
		}
		for _, m := range metas {
			var id sid
			copy(id[:], m.k)
			if err := txn.Delete(metaKey(id)); err != nil {
				return err
			}
			if err := txn.Set(legacyMetaKey(id), m.v); err != nil {
				return err
			}
		}
		for _, e := range entries {
			if err := txn.Delete(e.k); err != nil {
				return err
			}
			if version >= 2 {
				old := append(legacyShardPrefix(shardOf(listingKeyID(e.k))), e.k[shardPrefixLen:]...)
				if err := txn.Set(old, e.v); err != nil {
					return err
				}
			}
		}
		return txn.Set(schemaKey, []byte(`{"schema":`+string(rune('0'+version))+`}`))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// legacyKeys counts the keys of the layout before schema 4 left in s.
func legacyKeys(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	if err := s.eng.View(func(txn kv.Txn) error {
		if err := eachShardKey(txn, legacyShardPrefix, func([]byte) error { n++; return nil }); err != nil {
			return err
		}
		return eachRange(txn, []byte{tagSession}, nil, func(id sid, _ kv.Iterator) error {
			if hasKey(txn, legacyMetaKey(id)) {
				n++
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// A store of any older schema is moved to this one by its first command,
// a reader's too, and then reads as it did.
func TestLayoutMigrated(t *testing.T) {
	for _, version := range []int{1, 2, 3} {
		dir := filepath.Join(t.TempDir(), "store")
		w := &listWorld{t: t, rng: rand.New(rand.NewPCG(1, uint64(version))), nodes: map[string][]session.Node{}}
		s := open(t, dir, Write)
		for range 80 {
			w.step(s, s)
		}
		want := listInfo(t, s, ListQuery{})
		mustClose(t, s)
		toLegacy(t, dir, version)

		old := moveBatch
		moveBatch = 7 // several transactions
		r := open(t, dir, Read)
		moveBatch = old
		if !r.rw {
			t.Errorf("schema %d: the reader did not move the store", version)
		}
		if err := r.CheckListing(); err != nil {
			t.Errorf("schema %d: %v", version, err)
		}
		if got := listInfo(t, r, ListQuery{}); !reflect.DeepEqual(got, want) {
			t.Errorf("schema %d: after the move:\n %+v\nnot\n %+v", version, got, want)
		}
		w.verify(r, 30)
		if n := legacyKeys(t, r); n != 0 {
			t.Errorf("schema %d: %d keys of the old layout left", version, n)
		}
		mustClose(t, r)
		if got := schemaOf(t, dir); got != `{"schema":5}` {
			t.Errorf("schema %d: after the move: %s", version, got)
		}
		s = open(t, dir, Write) // and it takes writes
		for range 20 {
			w.step(s, s)
		}
		w.verify(s, 10)
		mustClose(t, s)
	}
}

// legacyWorld is a store of 40 sessions at schema 3, its world and its
// listing.
func legacyWorld(t *testing.T, seed uint64) (string, *listWorld, []session.Info) {
	dir := filepath.Join(t.TempDir(), "store")
	w := &listWorld{t: t, rng: rand.New(rand.NewPCG(seed, seed+1)), nodes: map[string][]session.Node{}}
	s := open(t, dir, Write)
	for len(w.nodes) < 40 {
		w.step(s, s)
	}
	want := listInfo(t, s, ListQuery{})
	mustClose(t, s)
	toLegacy(t, dir, 3)
	return dir, w, want
}

// A move killed while it copies leaves the old layout whole, which a wc
// before it may still change; the next command moves it again from there.
func TestLayoutMigrationKilledCopying(t *testing.T) {
	dir, w, _ := legacyWorld(t, 3)
	runKilledChild(t, "crash-midmove", dir)
	if got := schemaOf(t, dir); got != `{"schema":3}` {
		t.Fatalf("schema after the killed copy: %s", got)
	}

	// What a wc before schema 4 might do now: change every session's
	// metadata, and delete one, under the old keys only.
	db, err := badger.Open(badgerkv.Options(filepath.Join(dir, "db"), false, false))
	if err != nil {
		t.Fatal(err)
	}
	var gone sid
	err = badgerkv.New(db).Update(func(txn kv.Txn) error {
		return eachRange(txn, []byte{tagSession}, nil, func(id sid, _ kv.Iterator) error {
			v, err := valueOf(txn, legacyMetaKey(id))
			if err != nil || v == nil {
				return err
			}
			if gone == (sid{}) {
				gone = id
				delete(w.nodes, id.String())
				return txn.Delete(legacyMetaKey(id))
			}
			m, err := record.DecodeMeta(v)
			if err != nil {
				return err
			}
			m.UpdatedAt = "2027-01-01T00:00:00Z"
			return txn.Set(legacyMetaKey(id), record.EncodeMeta(&m))
		})
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	s := open(t, dir, Write)
	defer mustClose(t, s)
	if err := s.CheckListing(); err != nil {
		t.Fatal(err)
	}
	if n := legacyKeys(t, s); n != 0 {
		t.Errorf("%d keys of the old layout left", n)
	}
	if _, err := s.Meta(gone.String()); err == nil {
		t.Error("a session deleted under the old keys came back")
	}
	for _, info := range listInfo(t, s, ListQuery{}) {
		if info.UpdatedAt != "2027-01-01T00:00:00Z" {
			t.Fatalf("%s lists the metadata from before the old wc's write: %+v", info.ID, info)
		}
	}
	w.verify(s, 20)
}

// A move killed while it deletes the old keys is complete for every
// reader; the next command deletes the rest.
func TestLayoutMigrationKilledDropping(t *testing.T) {
	dir, w, want := legacyWorld(t, 5)
	runKilledChild(t, "crash-middrop", dir)
	if got := schemaOf(t, dir); got != `{"schema":5,"legacy":true}` {
		t.Fatalf("schema after the killed drop: %s", got)
	}
	r := open(t, dir, Read)
	defer mustClose(t, r)
	if n := legacyKeys(t, r); n != 0 {
		t.Errorf("%d keys of the old layout left", n)
	}
	if got := listInfo(t, r, ListQuery{}); !reflect.DeepEqual(got, want) {
		t.Errorf("after the move:\n %+v\nnot\n %+v", got, want)
	}
	w.verify(r, 20)
}

// The keys sort so that a write lands at the end of its session and its
// shard: the metadata after every node and blob of its session, each
// listing shard after every session it lists.
func TestLayoutKeyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 1000 {
		var id sid
		for i := range id {
			id[i] = byte(rng.UintN(256))
		}
		id[6] = id[6]&0x0f | 0x40 // a UUID v4
		id[8] = id[8]&0x3f | 0x80
		seq := rng.Uint64()
		var sum [32]byte
		sum[0] = 0xff
		for _, k := range [][]byte{nodeKey(id, seq), blobKey(id, sum), listingKey(id, [listingTimeLen]byte{})} {
			if bytes.Compare(k, metaKey(id)) >= 0 && !bytes.HasPrefix(k, shardPrefix(shardOf(id))) {
				t.Fatalf("%x sorts after the metadata %x", k, metaKey(id))
			}
		}
		if bytes.Compare(metaKey(id), shardPrefix(shardOf(id))) >= 0 {
			t.Fatalf("session %x sorts after its shard", id)
		}
		if n := shardOf(id); n > 0 && bytes.Compare(metaKey(id), shardPrefix(n-1)) <= 0 {
			t.Fatalf("session %x sorts before the shard before its own", id)
		}
		if reservedID(id) {
			t.Fatalf("a UUID v4 %x is reserved", id)
		}
	}
}

// A session whose metadata is malformed is moved as it is: its damage shows
// when it is read, and every other session reads and lists as before.
func TestLayoutMigrationMalformedMeta(t *testing.T) {
	dir, w, want := legacyWorld(t, 7)
	bad, _ := parseID(want[0].ID)
	db, err := badger.Open(badgerkv.Options(filepath.Join(dir, "db"), false, false))
	if err != nil {
		t.Fatal(err)
	}
	err = badgerkv.New(db).Update(func(txn kv.Txn) error { return txn.Set(legacyMetaKey(bad), []byte("{not json")) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	delete(w.nodes, bad.String())

	r := open(t, dir, Read)
	defer mustClose(t, r)
	if _, err := r.Meta(bad.String()); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("the malformed session: %v", err)
	}
	if got := listInfo(t, r, ListQuery{}); !reflect.DeepEqual(got, want[1:]) {
		t.Errorf("after the move:\n %+v\nnot\n %+v", got, want[1:])
	}
	for _, info := range want[1:] {
		if _, err := r.Meta(info.ID); err != nil {
			t.Errorf("%s: %v", info.ID, err)
		}
	}
	if n := legacyKeys(t, r); n != 0 {
		t.Errorf("%d keys of the old layout left", n)
	}
}

// A session at an id the new layout reserves for a shard (no wc makes
// one) stops the move before anything moved.
func TestLayoutMigrationReservedID(t *testing.T) {
	dir, _, _ := legacyWorld(t, 9)
	db, err := badger.Open(badgerkv.Options(filepath.Join(dir, "db"), false, false))
	if err != nil {
		t.Fatal(err)
	}
	max := shardID(listingShards - 1)
	err = badgerkv.New(db).Update(func(txn kv.Txn) error { return txn.Set(legacyMetaKey(max), []byte(`{}`)) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	want := "session " + max.String() + " has an id wc now reserves"
	for _, mode := range []Mode{Write, Read} {
		// A reader that could write gets no advice to find one that can.
		_, err = Open(Options{Dir: dir}, mode)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "can write there") {
			t.Errorf("open %v: %v", mode, err)
		}
	}
	if got := schemaOf(t, dir); got != `{"schema":3}` {
		t.Errorf("schema after the refusal: %s", got)
	}
}

// summaryV1 is a summary in the layout of schema 4 (summaryVersion 1):
// the v2 one of a meta without source, less its three empty source
// strings.
func summaryV1(t *testing.T, m session.Meta) []byte {
	t.Helper()
	m.Extra = nil
	v := record.EncodeSummary(&m)
	pos := 1
	for range 5 {
		n, k := binary.Uvarint(v[pos:])
		pos += k + int(n)
	}
	if !bytes.Equal(v[pos:pos+3], []byte{0, 0, 0}) {
		t.Fatalf("no empty source strings at %d: %x", pos, v)
	}
	old := append([]byte{1}, v[1:pos]...)
	return append(old, v[pos+3:]...)
}

// A store of schema 4 has its listing rewritten by the first command that
// opens it (a reader takes the lock to do it): the import source of the
// sessions imported before shows in the listing, and the schema is 5.
func TestSchema4Relisted(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Write)
	nodes := chain(3, 20)
	m := metaFor(testID(0xabcd0001, 1), nodes)
	m.Extra = []session.Field{{Key: "imported_from", Value: []byte(`{"format":"codex","id":"th-1"}`)}}
	if err := s.Commit(&m, nodes); err != nil {
		t.Fatal(err)
	}
	id, _ := store.ParseID(m.ID)
	err := s.eng.Update(func(txn kv.Txn) error {
		if err := txn.Set(listingKey(id, updatedTime(m.UpdatedAt)), summaryV1(t, m)); err != nil {
			return err
		}
		return txn.Set(schemaKey, []byte(`{"schema":4}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	r := open(t, dir, Read)
	got := listInfo(t, r, ListQuery{})
	mustClose(t, r)
	if len(got) != 1 || got[0].SourceID != "th-1" || got[0].SourceFormat != "codex" {
		t.Fatalf("listing after the move: %+v", got)
	}
	if v := schemaOf(t, dir); v != `{"schema":5}` {
		t.Errorf("schema after the move: %s", v)
	}
}
