package kvstore

import (
	"encoding/binary"

	"github.com/wctoolkit/wc/pkg/session/store"
)

// Key layout (DESIGN §3): every key of a session shares the prefix
// "s"+id16, so one session is one contiguous range. The listing (listing.go)
// is kept in shards, one per leading bits of the ids, each in the range of
// the highest id of its shard (never a UUID v4, refused by Commit) under
// the tag 'L'.
//
// A write lands at the end of its session (a new node, then the metadata,
// which sorts last) and at the end of its shard (the listing entry), so
// the table it leaves overlaps little beyond it (a spilled blob, and gc's
// rewriting of a reference, land inside the session): merging it into the store
// rewrites the session's last table and those of the sessions after it in
// the shard, not the whole session. Before schema 4 the metadata ('A')
// sorted first and the shard before its sessions, so that every eighth
// command merged a session's every table, 101 MB of heap for a 45 MB
// session (layout.go moves the keys of such a store).
const (
	tagSession = 's'
	tagBlob    = 'B'
	tagNode    = 'N'
	tagListing = 'L'
	tagMeta    = 'Z'
	// Where schemas before 4 kept the metadata.
	legacyTagMeta = 'A'

	idLen          = store.IDLen
	sessionKeyLen  = 1 + idLen // "s"+id
	listingTimeLen = 12        // seconds and nanoseconds, see listingTime
	shardPrefixLen = sessionKeyLen + 1
	listingKeyLen  = shardPrefixLen + listingTimeLen + idLen
	shardBits      = 6 // 64 listing shards, by the ids' leading bits (see listing.go)
	listingShards  = 1 << shardBits
)

var schemaKey = []byte("\x00v")

// sid is a session id as keys hold it.
type sid = store.ID

func parseID(ref string) (sid, error) { return store.ParseID(ref) }

func sessionPrefix(id sid) []byte {
	k := make([]byte, sessionKeyLen, sessionKeyLen+1+32)
	k[0] = tagSession
	copy(k[1:], id[:])
	return k
}

func metaKey(id sid) []byte { return append(sessionPrefix(id), tagMeta) }

func legacyMetaKey(id sid) []byte { return append(sessionPrefix(id), legacyTagMeta) }

func nodePrefix(id sid) []byte { return append(sessionPrefix(id), tagNode) }

func nodeKey(id sid, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(nodePrefix(id), seq)
}

func blobKey(id sid, sum [32]byte) []byte {
	return append(append(sessionPrefix(id), tagBlob), sum[:]...)
}

// shardOf is the listing shard of a session: its id's leading bits.
func shardOf(id sid) int { return int(id[0]) >> (8 - shardBits) }

// shardID is the reserved id whose range holds listing shard n: the highest
// id of the shard, so that the shard sorts right after its sessions.
func shardID(n int) (id sid) {
	for i := range id {
		id[i] = 0xff
	}
	id[0] = byte(n<<(8-shardBits)) | (1<<(8-shardBits) - 1)
	return id
}

// legacyShardID is where schemas before 4 kept shard n: the lowest id.
func legacyShardID(n int) (id sid) {
	id[0] = byte(n << (8 - shardBits))
	return id
}

// reservedID reports an id whose range holds, or held, a listing shard.
func reservedID(id sid) bool {
	n := shardOf(id)
	return id == shardID(n) || id == legacyShardID(n)
}

func shardPrefix(n int) []byte { return listingPrefix(shardID(n)) }

func legacyShardPrefix(n int) []byte { return listingPrefix(legacyShardID(n)) }

func listingPrefix(id sid) []byte {
	k := make([]byte, shardPrefixLen, listingKeyLen)
	k[0] = tagSession
	copy(k[1:], id[:])
	k[sessionKeyLen] = tagListing
	return k
}

// listingKey is the shard prefix of the id, the update time inverted so
// that the newest sorts first, and the id, which orders sessions updated at
// the same instant.
func listingKey(id sid, updated [listingTimeLen]byte) []byte {
	k := shardPrefix(shardOf(id))
	for _, b := range updated {
		k = append(k, ^b)
	}
	return append(k, id[:]...)
}

// listingKeyTime returns the update time of a listing key, uninverted.
func listingKeyTime(key []byte) (t [listingTimeLen]byte) {
	for i := range t {
		t[i] = ^key[shardPrefixLen+i]
	}
	return t
}

func listingKeyID(key []byte) (id sid) {
	copy(id[:], key[shardPrefixLen+listingTimeLen:])
	return id
}

// keySeq reads the seq from a node key ("s"+id+"N"+seq8).
func keySeq(key []byte) (uint64, bool) {
	const n = sessionKeyLen + 1
	if len(key) != n+8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(key[n:]), true
}
