package store

import "testing"

// TestShardNumberPinned: the parts are those the man page's function gives
// (1 + first 8 bytes of sha256 of the canonical id, big endian, mod N), as
// another tool computes them (these were computed with Python's hashlib),
// so that machines of different builds split a batch the same way.
func TestShardNumberPinned(t *testing.T) {
	ns := []int{1, 2, 3, 4, 7, 1000}
	for _, c := range []struct {
		id   string
		want []int
	}{
		{"00000000-0000-0000-0000-000000000000", []int{1, 1, 3, 1, 2, 869}},
		{"3F2A0000-1111-4222-8333-444455556666", []int{1, 2, 3, 4, 5, 540}},
		{"ffffffffffffffffffffffffffffffff", []int{1, 1, 3, 3, 4, 147}},
	} {
		id, err := ParseID(c.id)
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range ns {
			if got := ShardNumber(id, n); got != c.want[i] {
				t.Errorf("ShardNumber(%s, %d) = %d, want %d", c.id, n, got, c.want[i])
			}
		}
	}
}

// TestShardPartition: for each N the parts hold every id exactly once, and
// the zero Shard holds all.
func TestShardPartition(t *testing.T) {
	for n := 1; n <= 5; n++ {
		for k := range 200 {
			var id ID
			id[0], id[15] = byte(k), byte(k*7)
			in := 0
			for i := 1; i <= n; i++ {
				if (Shard{Index: i, Count: n}).Holds(id) {
					in++
				}
			}
			if in != 1 || !(Shard{}).Holds(id) {
				t.Fatalf("id %s is in %d of %d parts", id, in, n)
			}
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, v := range []string{"0/2", "3/2", "1/0", "a/b", "1", "", "/", "1/2/3", "-1/2", "1/-2", " 1/2"} {
		if s, err := ParseShard(v); err == nil {
			t.Errorf("ParseShard(%q) = %+v, want an error", v, s)
		}
	}
	for v, want := range map[string]Shard{"1/1": {1, 1}, "2/4": {2, 4}, "4/4": {4, 4}} {
		if s, err := ParseShard(v); err != nil || s != want {
			t.Errorf("ParseShard(%q) = %+v, %v; want %+v", v, s, err, want)
		}
	}
}
