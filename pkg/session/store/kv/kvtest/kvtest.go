package kvtest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// Allowance is a behaviour the contract leaves to the engine. Run checks
// the strict one (etcd's) unless the engine declares the other.
type Allowance int

const (
	// ScansConflict: an Update also conflicts on the keys its iterators
	// visited (Badger tracks them as reads): a retry more, never a check
	// less.
	ScansConflict Allowance = iota + 1
	// RewritesCount: writing a key the transaction already wrote counts
	// as one more write against Limits.MaxTxnOps (Badger counts every
	// write).
	RewritesCount
)

// Run runs the suite. open returns an empty engine for one subtest and
// closes it when that subtest ends (t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) kv.Engine, allow ...Allowance) {
	tests := []struct {
		name string
		fn   func(*testing.T, kv.Engine)
	}{
		{"GetSetDelete", testGetSetDelete},
		{"ErrorFromFnPassesThrough", testErrorPassesThrough},
		{"ViewIsReadOnly", testViewReadOnly},
		{"ReadYourWrites", testReadYourWrites},
		{"ViewSnapshot", testViewSnapshot},
		{"UpdateSnapshot", testUpdateSnapshot},
		{"IterateForward", testIterateForward},
		{"IterateReverse", testIterateReverse},
		{"IterateWholeStore", testIterateWhole},
		{"IterateKeysOnly", testIterateKeysOnly},
		{"IterateMany", testIterateMany},
		{"IterateLargeValues", testIterateLargeValues},
		{"IterateSeesWritesBefore", testIterateSeesWrites},
		{"Conflict", testConflict},
		{"ConflictOnAbsentKey", testConflictAbsent},
		{"NoConflictForScans", func(t *testing.T, e kv.Engine) {
			testNoConflictForScans(t, e, slices.Contains(allow, ScansConflict))
		}},
		{"NoConflictForOtherKeys", testNoConflictOtherKeys},
		{"FailedUpdateWritesNothing", testAtomicity},
		{"LimitValue", testLimitValue},
		{"LimitOps", func(t *testing.T, e kv.Engine) { testLimitOps(t, e, slices.Contains(allow, RewritesCount)) }},
		{"LimitBytes", testLimitBytes},
		{"ConcurrentUpdates", testConcurrentUpdates},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// Updaters and rounds of ConcurrentUpdates.
const (
	concurrentUpdaters = 8
	concurrentRounds   = 25
)

func set(t *testing.T, e kv.Engine, kvs ...string) {
	t.Helper()
	if err := e.Update(func(tx kv.Txn) error {
		for i := 0; i < len(kvs); i += 2 {
			if err := tx.Set([]byte(kvs[i]), []byte(kvs[i+1])); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("update: %v", err)
	}
}

// get reads a key in a View of its own: its value, or "" and false.
func get(t *testing.T, e kv.Engine, key string) (string, bool) {
	t.Helper()
	var v string
	var found bool
	if err := e.View(func(tx kv.Txn) error {
		b, err := tx.Get([]byte(key))
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		v, found = string(b), true
		return nil
	}); err != nil {
		t.Fatalf("view: %v", err)
	}
	return v, found
}

func wantValue(t *testing.T, e kv.Engine, key, want string) {
	t.Helper()
	if v, ok := get(t, e, key); !ok || v != want {
		t.Fatalf("get %q = %q, %v; want %q", key, v, ok, want)
	}
}

func wantAbsent(t *testing.T, e kv.Engine, key string) {
	t.Helper()
	if v, ok := get(t, e, key); ok {
		t.Fatalf("get %q = %q; want not found", key, v)
	}
}

func testGetSetDelete(t *testing.T, e kv.Engine) {
	wantAbsent(t, e, "a")
	set(t, e, "a", "1", "b", "2", "\x00bin\xff", "\x01\x02")
	wantValue(t, e, "a", "1")
	wantValue(t, e, "b", "2")
	wantValue(t, e, "\x00bin\xff", "\x01\x02")
	set(t, e, "a", "one")
	wantValue(t, e, "a", "one")
	if err := e.Update(func(tx kv.Txn) error {
		if err := tx.Delete([]byte("a")); err != nil {
			return err
		}
		return tx.Delete([]byte("never-there"))
	}); err != nil {
		t.Fatal(err)
	}
	wantAbsent(t, e, "a")
	wantAbsent(t, e, "never-there")
	wantValue(t, e, "b", "2")
	if err := e.View(func(tx kv.Txn) error {
		_, err := tx.Get([]byte("a"))
		if !errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("Get of a deleted key: %v, want ErrNotFound", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

var errMine = errors.New("the caller's own error")

func testErrorPassesThrough(t *testing.T, e kv.Engine) {
	if err := e.View(func(kv.Txn) error { return errMine }); !errors.Is(err, errMine) {
		t.Fatalf("View returned %v, want fn's error", err)
	}
	if err := e.Update(func(kv.Txn) error { return errMine }); !errors.Is(err, errMine) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
}

func testViewReadOnly(t *testing.T, e kv.Engine) {
	err := e.View(func(tx kv.Txn) error {
		if tx.Set([]byte("a"), []byte("1")) == nil {
			return errors.New("Set in a View succeeded")
		}
		if tx.Delete([]byte("a")) == nil {
			return errors.New("Delete in a View succeeded")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantAbsent(t, e, "a")
}

func testReadYourWrites(t *testing.T, e kv.Engine) {
	set(t, e, "old", "o", "gone", "g")
	err := e.Update(func(tx kv.Txn) error {
		if err := tx.Set([]byte("new"), []byte("n1")); err != nil {
			return err
		}
		if err := tx.Set([]byte("new"), []byte("n2")); err != nil {
			return err
		}
		if err := tx.Set([]byte("old"), []byte("o2")); err != nil {
			return err
		}
		if err := tx.Delete([]byte("gone")); err != nil {
			return err
		}
		for k, want := range map[string]string{"new": "n2", "old": "o2"} {
			v, err := tx.Get([]byte(k))
			if err != nil || string(v) != want {
				return fmt.Errorf("Get %q after Set = %q, %v; want %q", k, v, err, want)
			}
		}
		if _, err := tx.Get([]byte("gone")); !errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("Get after Delete: %v, want ErrNotFound", err)
		}
		// Set after Delete brings the key back.
		if err := tx.Delete([]byte("new")); err != nil {
			return err
		}
		if _, err := tx.Get([]byte("new")); !errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("Get after Set then Delete: %v, want ErrNotFound", err)
		}
		return tx.Set([]byte("new"), []byte("n3"))
	})
	if err != nil {
		t.Fatal(err)
	}
	wantValue(t, e, "new", "n3")
	wantValue(t, e, "old", "o2")
	wantAbsent(t, e, "gone")
}

// collect reads an iterator from a Seek to its end: "key=value" pairs
// (keys alone with keysOnly).
func collect(it kv.Iterator, seek string, keysOnly bool) ([]string, error) {
	var out []string
	for it.Seek([]byte(seek)); it.Valid(); it.Next() {
		if keysOnly {
			out = append(out, string(it.Key()))
			continue
		}
		v, err := it.Value()
		if err != nil {
			return nil, err
		}
		out = append(out, string(it.Key())+"="+string(v))
	}
	return out, nil
}

func scan(t *testing.T, e kv.Engine, opt kv.IterOptions, seek string) []string {
	t.Helper()
	var out []string
	if err := e.View(func(tx kv.Txn) error {
		it := tx.Iterate(opt)
		defer it.Close()
		var err error
		out, err = collect(it, seek, opt.KeysOnly)
		return err
	}); err != nil {
		t.Fatalf("view: %v", err)
	}
	return out
}

func wantScan(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("iterated %q, want %q", got, want)
	}
}

// iterFixture: a prefix p/ with four keys, and keys around it that sort
// just before and just after it (p, p.x, p0, o/z, q/a).
func iterFixture(t *testing.T, e kv.Engine) {
	set(t, e, "p/b", "2", "p/a", "1", "p/d", "4", "p/c", "3",
		"p", "P", "p.x", "px", "p0", "p0", "o/z", "oz", "q/a", "qa")
}

func testIterateForward(t *testing.T, e kv.Engine) {
	iterFixture(t, e)
	fwd := kv.IterOptions{Prefix: []byte("p/")}
	all := []string{"p/a=1", "p/b=2", "p/c=3", "p/d=4"}
	for _, c := range []struct {
		seek string
		want []string
	}{
		{"", all},                   // the start of the prefix
		{"p/", all},                 // the prefix itself
		{"p/a", all},                // the first key
		{"p/b", all[1:]},            // a key in the middle
		{"p/bb", all[2:]},           // between two keys
		{"p/d", all[3:]},            // the last key
		{"p/e", nil},                // past the end
		{"p/d\x00", nil},            // just past the last key
		{"a", all},                  // before the prefix: its start
		{"p.", all},                 // just before the prefix
		{"p0", nil},                 // just after the prefix
		{"z", nil},                  // after the prefix
		{"p/\x00", all},             // the smallest key inside the prefix
		{"p/\xff\xff", nil},         // the largest
		{"p/c\xff", all[3:]},        // a byte past a key
		{"p/a\x00", all[1:]},        // just after the first key
		{"p/\x00\x00\x00\x00", all}, // several zero bytes
	} {
		if got := scan(t, e, fwd, c.seek); !slices.Equal(got, c.want) {
			t.Errorf("forward from %q: %q, want %q", c.seek, got, c.want)
		}
	}
}

func testIterateReverse(t *testing.T, e kv.Engine) {
	iterFixture(t, e)
	rev := kv.IterOptions{Prefix: []byte("p/"), Reverse: true}
	all := []string{"p/d=4", "p/c=3", "p/b=2", "p/a=1"}
	for _, c := range []struct {
		seek string
		want []string
	}{
		{"", all},            // the end of the prefix
		{"p/d", all},         // the last key
		{"p/c", all[1:]},     // a key in the middle
		{"p/bb", all[2:]},    // between two keys: the one before
		{"p/a", all[3:]},     // the first key
		{"p/a\x00", all[3:]}, // just after the first key
		{"p/0", nil},         // before the first key, inside the prefix
		{"p/", nil},          // the prefix itself, which holds no key
		{"z", all},           // after the prefix: its end
		{"p0", all},          // just after the prefix
		{"p/\xff\xff", all},  // the largest key inside it
		{"a", nil},           // before the prefix
		{"p.x", nil},         // a key just before the prefix
		{"p/c\xff", all[1:]}, // a byte past a key
		{"p/d\x00", all},     // just past the last key
		{"p/b\x00\x00", all[2:]},
	} {
		if got := scan(t, e, rev, c.seek); !slices.Equal(got, c.want) {
			t.Errorf("reverse from %q: %q, want %q", c.seek, got, c.want)
		}
	}
	// One iterator, seeking again and again.
	if err := e.View(func(tx kv.Txn) error {
		it := tx.Iterate(rev)
		defer it.Close()
		for _, seek := range []string{"p/c", "", "p/a", "z", "p/0", "p/bb"} {
			it.Seek([]byte(seek))
			var want string
			switch seek {
			case "p/c":
				want = "p/c"
			case "", "z":
				want = "p/d"
			case "p/a":
				want = "p/a"
			case "p/bb":
				want = "p/b"
			}
			got := ""
			if it.Valid() {
				got = string(it.Key())
			}
			if got != want {
				return fmt.Errorf("reseek to %q: at %q, want %q", seek, got, want)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func testIterateWhole(t *testing.T, e kv.Engine) {
	iterFixture(t, e)
	all := []string{"o/z=oz", "p=P", "p.x=px", "p/a=1", "p/b=2", "p/c=3", "p/d=4", "p0=p0", "q/a=qa"}
	wantScan(t, scan(t, e, kv.IterOptions{}, ""), all...)
	wantScan(t, scan(t, e, kv.IterOptions{}, "p/b"), all[4:]...)
	reversed := slices.Clone(all)
	slices.Reverse(reversed)
	wantScan(t, scan(t, e, kv.IterOptions{Reverse: true}, ""), reversed...)
	wantScan(t, scan(t, e, kv.IterOptions{Reverse: true}, "p/b"), reversed[4:]...)
	// A prefix that is a whole key and more.
	wantScan(t, scan(t, e, kv.IterOptions{Prefix: []byte("p")}, ""), all[1:8]...)
}

func testIterateKeysOnly(t *testing.T, e kv.Engine) {
	iterFixture(t, e)
	wantScan(t, scan(t, e, kv.IterOptions{Prefix: []byte("p/"), KeysOnly: true}, "p/b"), "p/b", "p/c", "p/d")
	wantScan(t, scan(t, e, kv.IterOptions{Prefix: []byte("p/"), KeysOnly: true, Reverse: true}, ""), "p/d", "p/c", "p/b", "p/a")
}

// manyKeys writes n keys k/00000… under prefix in transactions within the
// engine's limits, with values of valueSize bytes that name their key.
func manyKeys(t *testing.T, e kv.Engine, prefix string, n, valueSize int) []string {
	t.Helper()
	lim := e.Limits()
	var want []string
	for i := 0; i < n; {
		err := e.Update(func(tx kv.Txn) error {
			var size int64
			j := i
			for ; j < n; j++ {
				k := fmt.Sprintf("%s%05d", prefix, j)
				v := bytes.Repeat([]byte{byte('a' + j%26)}, valueSize)
				copy(v, k)
				if lim.MaxTxnOps > 0 && j-i >= lim.MaxTxnOps || lim.MaxTxnBytes > 0 && size+int64(len(k)+len(v)) > lim.MaxTxnBytes {
					break
				}
				size += int64(len(k) + len(v))
				if err := tx.Set([]byte(k), v); err != nil {
					return err
				}
			}
			i = j
			return nil
		})
		if err != nil {
			t.Fatalf("write keys: %v", err)
		}
	}
	for j := 0; j < n; j++ {
		want = append(want, fmt.Sprintf("%s%05d", prefix, j))
	}
	return want
}

func testIterateMany(t *testing.T, e kv.Engine) {
	const n = 3000
	want := manyKeys(t, e, "m/", n, 40)
	set(t, e, "l", "before", "n", "after")
	got := scan(t, e, kv.IterOptions{Prefix: []byte("m/"), KeysOnly: true}, "")
	wantScan(t, got, want...)
	if err := e.View(func(tx kv.Txn) error {
		for _, rev := range []bool{false, true} {
			it := tx.Iterate(kv.IterOptions{Prefix: []byte("m/"), Reverse: rev})
			i, step := 0, 1
			if rev {
				i, step = n-1, -1
			}
			count := 0
			for it.Seek(nil); it.Valid(); it.Next() {
				v, err := it.Value()
				if err != nil {
					it.Close()
					return err
				}
				if string(it.Key()) != want[i] || !bytes.HasPrefix(v, it.Key()) || len(v) != 40 {
					it.Close()
					return fmt.Errorf("reverse=%v: at %q (value %.10q), want %q", rev, it.Key(), v, want[i])
				}
				i += step
				count++
			}
			it.Close()
			if count != n {
				return fmt.Errorf("reverse=%v: %d keys, want %d", rev, count, n)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// From the middle, both ways.
	wantScan(t, scan(t, e, kv.IterOptions{Prefix: []byte("m/"), KeysOnly: true}, want[1234]), want[1234:]...)
	back := slices.Clone(want[:1235])
	slices.Reverse(back)
	wantScan(t, scan(t, e, kv.IterOptions{Prefix: []byte("m/"), KeysOnly: true, Reverse: true}, want[1234]), back...)
}

func testIterateLargeValues(t *testing.T, e kv.Engine) {
	size := 300 << 10
	if lim := e.Limits().MaxValueBytes; lim > 0 && lim < size {
		size = lim
	}
	const n = 12
	want := manyKeys(t, e, "big/", n, size)
	for _, rev := range []bool{false, true} {
		got := scan(t, e, kv.IterOptions{Prefix: []byte("big/"), Reverse: rev}, "")
		if len(got) != n {
			t.Fatalf("reverse=%v: %d values, want %d", rev, len(got), n)
		}
		for i, kvp := range got {
			k := want[i]
			if rev {
				k = want[n-1-i]
			}
			if len(kvp) != len(k)+1+size || kvp[:len(k)] != k || kvp[len(k)+1:len(k)+1+len(k)] != k {
				t.Fatalf("reverse=%v: entry %d is not %s's value", rev, i, k)
			}
		}
	}
}

func testIterateSeesWrites(t *testing.T, e kv.Engine) {
	set(t, e, "p/a", "1", "p/b", "2", "p/c", "3")
	err := e.Update(func(tx kv.Txn) error {
		before := tx.Iterate(kv.IterOptions{Prefix: []byte("p/")})
		before.Close()
		for _, w := range [][2]string{{"p/b", ""}, {"p/bb", "new"}, {"p/c", "three"}, {"p/0", "zero"}, {"q", "out"}} {
			var err error
			if w[1] == "" {
				err = tx.Delete([]byte(w[0]))
			} else {
				err = tx.Set([]byte(w[0]), []byte(w[1]))
			}
			if err != nil {
				return err
			}
		}
		for _, c := range []struct {
			opt  kv.IterOptions
			seek string
			want []string
		}{
			{kv.IterOptions{Prefix: []byte("p/")}, "", []string{"p/0=zero", "p/a=1", "p/bb=new", "p/c=three"}},
			{kv.IterOptions{Prefix: []byte("p/")}, "p/b", []string{"p/bb=new", "p/c=three"}},
			{kv.IterOptions{Prefix: []byte("p/"), Reverse: true}, "", []string{"p/c=three", "p/bb=new", "p/a=1", "p/0=zero"}},
			{kv.IterOptions{Prefix: []byte("p/"), Reverse: true}, "p/b", []string{"p/a=1", "p/0=zero"}},
			{kv.IterOptions{Prefix: []byte("p/"), KeysOnly: true}, "", []string{"p/0", "p/a", "p/bb", "p/c"}},
		} {
			it := tx.Iterate(c.opt)
			got, err := collect(it, c.seek, c.opt.KeysOnly)
			it.Close()
			if err != nil {
				return err
			}
			if !slices.Equal(got, c.want) {
				return fmt.Errorf("iterator (%+v from %q) opened after the writes: %q, want %q", c.opt, c.seek, got, c.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantScan(t, scan(t, e, kv.IterOptions{Prefix: []byte("p/")}, ""), "p/0=zero", "p/a=1", "p/bb=new", "p/c=three")
}

func testViewSnapshot(t *testing.T, e kv.Engine) {
	set(t, e, "a", "1", "b", "1", "s/1", "x")
	err := e.View(func(tx kv.Txn) error {
		if v, err := tx.Get([]byte("a")); err != nil || string(v) != "1" {
			return fmt.Errorf("get a: %q, %v", v, err)
		}
		set(t, e, "a", "2", "b", "2", "c", "2", "s/2", "y")
		for k, want := range map[string]string{"a": "1", "b": "1"} {
			if v, err := tx.Get([]byte(k)); err != nil || string(v) != want {
				return fmt.Errorf("get %s after another commit: %q, %v; want the snapshot's %q", k, v, err, want)
			}
		}
		if _, err := tx.Get([]byte("c")); !errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("a key committed after the snapshot is seen: %v", err)
		}
		it := tx.Iterate(kv.IterOptions{Prefix: []byte("s/")})
		defer it.Close()
		got, err := collect(it, "", false)
		if err != nil {
			return err
		}
		if !slices.Equal(got, []string{"s/1=x"}) {
			return fmt.Errorf("an iterator sees another commit: %q", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantValue(t, e, "a", "2")
}

func testUpdateSnapshot(t *testing.T, e kv.Engine) {
	set(t, e, "a", "1", "b", "1", "s/1", "x")
	err := e.Update(func(tx kv.Txn) error {
		if _, err := tx.Get([]byte("a")); err != nil {
			return err
		}
		set(t, e, "b", "2", "s/2", "y")
		if v, err := tx.Get([]byte("b")); err != nil || string(v) != "1" {
			return fmt.Errorf("get b after another commit: %q, %v; want the snapshot's 1", v, err)
		}
		it := tx.Iterate(kv.IterOptions{Prefix: []byte("s/"), KeysOnly: true})
		defer it.Close()
		got, _ := collect(it, "", true)
		if !slices.Equal(got, []string{"s/1"}) {
			return fmt.Errorf("an iterator sees another commit: %q", got)
		}
		return errMine
	})
	if !errors.Is(err, errMine) {
		t.Fatal(err)
	}
}

// conflictWith runs an Update that reads with read, lets another commit
// write other, then writes its own key; it returns the Update's error.
func conflictWith(t *testing.T, e kv.Engine, read func(kv.Txn) error, other ...string) error {
	t.Helper()
	return e.Update(func(tx kv.Txn) error {
		if err := read(tx); err != nil {
			return err
		}
		set(t, e, other...)
		return tx.Set([]byte("mine"), []byte("written"))
	})
}

func getKey(k string) func(kv.Txn) error {
	return func(tx kv.Txn) error {
		_, err := tx.Get([]byte(k))
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		return err
	}
}

func testConflict(t *testing.T, e kv.Engine) {
	set(t, e, "meta", "1")
	err := conflictWith(t, e, getKey("meta"), "meta", "2")
	if !errors.Is(err, kv.ErrConflict) {
		t.Fatalf("update over a changed key: %v, want ErrConflict", err)
	}
	wantAbsent(t, e, "mine")
	wantValue(t, e, "meta", "2")
	// A key read, then written by the transaction, then changed by another.
	err = e.Update(func(tx kv.Txn) error {
		if _, err := tx.Get([]byte("meta")); err != nil {
			return err
		}
		if err := tx.Set([]byte("meta"), []byte("mine")); err != nil {
			return err
		}
		set(t, e, "meta", "3")
		return nil
	})
	if !errors.Is(err, kv.ErrConflict) {
		t.Fatalf("update over a key it read and wrote, changed by another: %v, want ErrConflict", err)
	}
	wantValue(t, e, "meta", "3")
	// Deleted by another.
	err = conflictWith(t, e, getKey("meta"), "x", "x")
	if err != nil {
		t.Fatalf("update with no conflict: %v", err)
	}
	err = e.Update(func(tx kv.Txn) error {
		if _, err := tx.Get([]byte("meta")); err != nil {
			return err
		}
		if err := e.Update(func(tx kv.Txn) error { return tx.Delete([]byte("meta")) }); err != nil {
			return err
		}
		return tx.Set([]byte("after-delete"), []byte("1"))
	})
	if !errors.Is(err, kv.ErrConflict) {
		t.Fatalf("update over a key deleted by another: %v, want ErrConflict", err)
	}
	wantAbsent(t, e, "after-delete")
}

func testConflictAbsent(t *testing.T, e kv.Engine) {
	err := conflictWith(t, e, getKey("meta"), "meta", "created")
	if !errors.Is(err, kv.ErrConflict) {
		t.Fatalf("update over a key created since it read it absent: %v, want ErrConflict", err)
	}
	wantAbsent(t, e, "mine")
}

// testNoConflictForScans: with scansConflict, the same update must fail
// with ErrConflict and write nothing.
func testNoConflictForScans(t *testing.T, e kv.Engine, scansConflict bool) {
	set(t, e, "s/1", "a", "s/2", "b")
	scanAll := func(tx kv.Txn) error {
		it := tx.Iterate(kv.IterOptions{Prefix: []byte("s/")})
		defer it.Close()
		_, err := collect(it, "", false)
		return err
	}
	err := conflictWith(t, e, scanAll, "s/1", "changed", "s/3", "new")
	if scansConflict {
		if !errors.Is(err, kv.ErrConflict) {
			t.Fatalf("update over scanned keys changed by another: %v, want ErrConflict (ScansConflict)", err)
		}
		wantAbsent(t, e, "mine")
	} else {
		if err != nil {
			t.Fatalf("update over scanned keys changed by another: %v, want no conflict", err)
		}
		wantValue(t, e, "mine", "written")
	}
	wantValue(t, e, "s/1", "changed")
}

func testNoConflictOtherKeys(t *testing.T, e kv.Engine) {
	set(t, e, "meta", "1", "other", "1")
	if err := conflictWith(t, e, getKey("meta"), "other", "2"); err != nil {
		t.Fatalf("update whose read key no one changed: %v", err)
	}
	wantValue(t, e, "mine", "written")
	// Blind writes check nothing.
	if err := e.Update(func(tx kv.Txn) error {
		set(t, e, "meta", "2")
		return tx.Set([]byte("meta"), []byte("blind"))
	}); err != nil {
		t.Fatalf("blind write: %v", err)
	}
	wantValue(t, e, "meta", "blind")
}

func testAtomicity(t *testing.T, e kv.Engine) {
	set(t, e, "keep", "1")
	err := e.Update(func(tx kv.Txn) error {
		for _, k := range []string{"x1", "x2", "x3"} {
			if err := tx.Set([]byte(k), []byte("v")); err != nil {
				return err
			}
		}
		if err := tx.Delete([]byte("keep")); err != nil {
			return err
		}
		return errMine
	})
	if !errors.Is(err, errMine) {
		t.Fatalf("update: %v, want fn's error", err)
	}
	wantValue(t, e, "keep", "1")
	for _, k := range []string{"x1", "x2", "x3"} {
		wantAbsent(t, e, k)
	}
	// A conflicting update with many writes leaves none of them.
	set(t, e, "meta", "1")
	n := 50
	if lim := e.Limits().MaxTxnOps; lim > 0 && lim < n {
		n = lim
	}
	err = e.Update(func(tx kv.Txn) error {
		if _, err := tx.Get([]byte("meta")); err != nil {
			return err
		}
		for i := 0; i < n-1; i++ {
			if err := tx.Set(fmt.Appendf(nil, "w/%03d", i), []byte("v")); err != nil {
				return err
			}
		}
		if err := tx.Delete([]byte("keep")); err != nil {
			return err
		}
		set(t, e, "meta", "2")
		return nil
	})
	if !errors.Is(err, kv.ErrConflict) {
		t.Fatalf("update: %v, want ErrConflict", err)
	}
	wantValue(t, e, "keep", "1")
	wantScan(t, scan(t, e, kv.IterOptions{Prefix: []byte("w/"), KeysOnly: true}, ""))
}

func testLimitValue(t *testing.T, e kv.Engine) {
	lim := e.Limits()
	if lim.MaxValueBytes == 0 {
		t.Skip("the engine has no value limit")
	}
	biggest := bytes.Repeat([]byte("v"), lim.MaxValueBytes)
	err := e.Update(func(tx kv.Txn) error {
		if err := tx.Set([]byte("small"), []byte("1")); err != nil {
			return err
		}
		if err := tx.Set([]byte("over"), append(biggest, 'x')); !errors.Is(err, kv.ErrTooBig) {
			return fmt.Errorf("Set of %d bytes: %v, want ErrTooBig", lim.MaxValueBytes+1, err)
		}
		if _, err := tx.Get([]byte("over")); !errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("a refused Set is seen: %v", err)
		}
		if lim.MaxTxnBytes == 0 || int64(lim.MaxValueBytes)+100 <= lim.MaxTxnBytes {
			if err := tx.Set([]byte("biggest"), biggest); err != nil {
				return fmt.Errorf("Set of MaxValueBytes: %v", err)
			}
		}
		return tx.Set([]byte("after"), []byte("2"))
	})
	if err != nil {
		t.Fatal(err)
	}
	wantValue(t, e, "small", "1")
	wantValue(t, e, "after", "2")
	wantAbsent(t, e, "over")
	if lim.MaxTxnBytes == 0 || int64(lim.MaxValueBytes)+100 <= lim.MaxTxnBytes {
		if v, ok := get(t, e, "biggest"); !ok || v != string(biggest) {
			t.Fatalf("the largest value did not come back whole (%d bytes)", len(v))
		}
	}
}

// testLimitOps: with rewritesCount, writing a key again past the limit is
// refused as any other write.
func testLimitOps(t *testing.T, e kv.Engine, rewritesCount bool) {
	lim := e.Limits()
	if lim.MaxTxnOps == 0 {
		t.Skip("the engine has no limit on a transaction's writes")
	}
	err := e.Update(func(tx kv.Txn) error {
		for i := 0; i < lim.MaxTxnOps; i++ {
			if err := tx.Set(fmt.Appendf(nil, "o/%05d", i), []byte("v")); err != nil {
				return fmt.Errorf("write %d of %d: %v", i+1, lim.MaxTxnOps, err)
			}
		}
		if err := tx.Set([]byte("o/over"), []byte("v")); !errors.Is(err, kv.ErrTooBig) {
			return fmt.Errorf("write %d: %v, want ErrTooBig", lim.MaxTxnOps+1, err)
		}
		if err := tx.Delete([]byte("o/over-delete")); !errors.Is(err, kv.ErrTooBig) {
			return fmt.Errorf("delete past the limit: %v, want ErrTooBig", err)
		}
		err := tx.Set([]byte("o/00000"), []byte("again"))
		if rewritesCount {
			if !errors.Is(err, kv.ErrTooBig) {
				return fmt.Errorf("rewrite past the limit: %v, want ErrTooBig (RewritesCount)", err)
			}
			return nil
		}
		// Writing a key it already writes takes no more room.
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got := scan(t, e, kv.IterOptions{Prefix: []byte("o/"), KeysOnly: true}, "")
	if len(got) != lim.MaxTxnOps || slices.Contains(got, "o/over") {
		t.Fatalf("%d keys written (over: %v), want %d", len(got), slices.Contains(got, "o/over"), lim.MaxTxnOps)
	}
	if rewritesCount {
		wantValue(t, e, "o/00000", "v")
	} else {
		wantValue(t, e, "o/00000", "again")
	}
}

func testLimitBytes(t *testing.T, e kv.Engine) {
	lim := e.Limits()
	if lim.MaxTxnBytes == 0 {
		t.Skip("the engine has no limit on a transaction's bytes")
	}
	chunk := int(lim.MaxTxnBytes / 5)
	if lim.MaxValueBytes > 0 && chunk > lim.MaxValueBytes {
		chunk = lim.MaxValueBytes
	}
	var written []string
	err := e.Update(func(tx kv.Txn) error {
		var size int64
		for i := 0; ; i++ {
			k := fmt.Sprintf("b/%03d", i)
			err := tx.Set([]byte(k), bytes.Repeat([]byte{'v'}, chunk))
			if errors.Is(err, kv.ErrTooBig) {
				if size+int64(len(k)+chunk) <= lim.MaxTxnBytes {
					return fmt.Errorf("refused at %d bytes, under the limit of %d", size, lim.MaxTxnBytes)
				}
				break
			}
			if err != nil {
				return err
			}
			size += int64(len(k) + chunk)
			written = append(written, k)
			if size > lim.MaxTxnBytes {
				return fmt.Errorf("took %d bytes, over the limit of %d", size, lim.MaxTxnBytes)
			}
		}
		return tx.Set([]byte("b/small"), []byte("1"))
	})
	if errors.Is(err, kv.ErrTooBig) {
		// The last small write may not fit either: commit without it.
		written = written[:0]
		err = e.Update(func(tx kv.Txn) error {
			for i := 0; ; i++ {
				k := fmt.Sprintf("b/%03d", i)
				if err := tx.Set([]byte(k), bytes.Repeat([]byte{'v'}, chunk)); err != nil {
					if errors.Is(err, kv.ErrTooBig) {
						return nil
					}
					return err
				}
				written = append(written, k)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	got := scan(t, e, kv.IterOptions{Prefix: []byte("b/"), KeysOnly: true}, "")
	if len(got) < len(written) || !slices.Equal(got[:len(written)], written) {
		t.Fatalf("committed %q, want %q", got, written)
	}
}

// testConcurrentUpdates: updaters increment one counter, each also
// appending a key of its own per increment, retrying on ErrConflict; the
// counter ends at the number of increments and every key is there.
func testConcurrentUpdates(t *testing.T, e kv.Engine) {
	set(t, e, "counter", "0")
	var wg sync.WaitGroup
	var mu sync.Mutex
	conflicts := 0
	errs := make(chan error, concurrentUpdaters)
	for w := 0; w < concurrentUpdaters; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < concurrentRounds; r++ {
				for {
					err := e.Update(func(tx kv.Txn) error {
						v, err := tx.Get([]byte("counter"))
						if err != nil {
							return err
						}
						var n int
						fmt.Sscan(string(v), &n)
						if err := tx.Set([]byte("counter"), fmt.Append(nil, n+1)); err != nil {
							return err
						}
						return tx.Set(fmt.Appendf(nil, "log/%d/%03d", w, r), fmt.Append(nil, n+1))
					})
					if errors.Is(err, kv.ErrConflict) {
						mu.Lock()
						conflicts++
						mu.Unlock()
						continue
					}
					if err != nil {
						errs <- fmt.Errorf("updater %d round %d: %v", w, r, err)
						return
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := concurrentUpdaters * concurrentRounds
	wantValue(t, e, "counter", fmt.Sprint(total))
	// Every increment's log entry holds a distinct count from 1 to total.
	got := scan(t, e, kv.IterOptions{Prefix: []byte("log/")}, "")
	if len(got) != total {
		t.Fatalf("%d log entries, want %d", len(got), total)
	}
	seen := map[string]bool{}
	for _, kvp := range got {
		_, n, _ := bytes.Cut([]byte(kvp), []byte("="))
		if seen[string(n)] {
			t.Fatalf("count %s given twice", n)
		}
		seen[string(n)] = true
	}
	t.Logf("%d updates by %d updaters, %d conflicts retried", total, concurrentUpdaters, conflicts)
}
