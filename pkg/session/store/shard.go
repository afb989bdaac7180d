package store

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Shard is part Index of Count of the store's sessions (wc-ls --shard,
// wc-compact --all --shard): a session is in part ShardNumber(id, Count).
// The zero Shard is every session.
type Shard struct {
	Index int // 1 to Count
	Count int // 0: no sharding
}

// ShardNumber is the part, 1 to n, that the session id is in: 1 plus the
// first 8 bytes of the sha256 of the id's canonical string (lowercase,
// dashed), big endian, modulo n. A hash, not the id's leading bits: ids
// restored or imported from elsewhere need not spread evenly.
func ShardNumber(id ID, n int) int {
	sum := sha256.Sum256([]byte(id.String()))
	return 1 + int(binary.BigEndian.Uint64(sum[:8])%uint64(n))
}

// Holds reports whether the session id is in s.
func (s Shard) Holds(id ID) bool {
	return s.Count <= 0 || ShardNumber(id, s.Count) == s.Index
}

// ParseShard reads "I/N", 1 ≤ I ≤ N.
func ParseShard(v string) (Shard, error) {
	is, ns, ok := strings.Cut(v, "/")
	i, ierr := strconv.Atoi(is)
	n, nerr := strconv.Atoi(ns)
	if !ok || ierr != nil || nerr != nil || n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("%q is not I/N with 1 <= I <= N", v)
	}
	return Shard{Index: i, Count: n}, nil
}
