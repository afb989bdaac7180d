package kvstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wctoolkit/wc/pkg/session/store/kv"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// schemaRecordJSON is the store's schema record. Legacy marks a store
// whose keys were moved to this layout and whose old keys are still to
// delete.
type schemaRecordJSON struct {
	Schema int  `json:"schema"`
	Legacy bool `json:"legacy,omitempty"`
}

func schemaRecord(legacy bool) []byte {
	b, _ := json.Marshal(schemaRecordJSON{Schema: schemaVersion, Legacy: legacy})
	return b
}

func (s *Store) stampSchema(legacy bool) error {
	err := s.eng.Update(func(txn kv.Txn) error {
		return txn.Set(schemaKey, schemaRecord(legacy))
	})
	if err == nil {
		s.wrote.Store(true)
	}
	return err
}

// migrate brings a store of an older schema to this one, under the
// exclusive lock, in bounded transactions (see keys.go for why the keys
// moved). Until the schema record says the new layout is complete, the old
// keys are the store and everything written under the new ones is redone
// from them: a migration killed midway, or a wc before it writing to the
// store since, loses nothing. Schema 1 had no listing; 2 and 3 kept it in
// the legacy shards.
func (s *Store) migrate() error {
	b := &keyBatch{s: s, hook: testHookMoveBatch}
	// A session of an id this layout reserves would become a shard. No wc
	// makes one (its ids are UUID v4); refuse before anything moves.
	err := s.eng.View(func(txn kv.Txn) error {
		for n := range listingShards {
			if hasKey(txn, legacyMetaKey(shardID(n))) {
				return fmt.Errorf("store: session %s has an id wc now reserves; export it with the wc that wrote it", shardID(n))
			}
		}
		// What a killed migration left under the new keys goes first.
		return eachListingKey(txn, func(key []byte) error { return b.del(key) })
	})
	if err == nil {
		err = s.eng.View(func(txn kv.Txn) error {
			return eachRange(txn, []byte{tagSession}, nil, func(id sid, _ kv.Iterator) error {
				old, err := valueOf(txn, legacyMetaKey(id))
				if err != nil || old == nil {
					if err == nil && hasKey(txn, metaKey(id)) {
						err = b.del(metaKey(id)) // a copy of a session deleted since
					}
					return err
				}
				if err := b.set(metaKey(id), old); err != nil {
					return err
				}
				m, err := record.DecodeMeta(old)
				if err != nil {
					// Moved as it is: reading that session reports the
					// damage, as before; it has no listing entry to show.
					return nil
				}
				return b.set(listingKey(id, updatedTime(m.UpdatedAt)), record.EncodeSummary(&m))
			})
		})
	}
	if err == nil {
		err = b.flush()
	}
	if err == nil {
		err = s.stampSchema(true)
	}
	if err == nil {
		err = s.dropLegacy()
	}
	return mapErr("move the store to schema 4", err)
}

// relist rewrites every listing entry from its session's metadata, in the
// summary layout of this build, under the exclusive lock, in bounded
// transactions. The keys do not change, so a killed relist is redone whole
// by the next writer: the schema record moves on only after it.
func (s *Store) relist() error {
	b := &keyBatch{s: s}
	err := s.eng.View(func(txn kv.Txn) error {
		return eachMeta(txn, func(id sid, v []byte) error {
			m, err := record.DecodeMeta(v)
			if err != nil {
				return nil // reading that session reports the damage
			}
			return b.set(listingKey(id, updatedTime(m.UpdatedAt)), record.EncodeSummary(&m))
		})
	})
	if err == nil {
		err = b.flush()
	}
	return err
}

// dropLegacy deletes the keys the layout before schema 4 used, then marks
// the store as holding none.
func (s *Store) dropLegacy() error {
	b := &keyBatch{s: s, hook: testHookDropBatch}
	err := s.eng.View(func(txn kv.Txn) error {
		if err := eachShardKey(txn, legacyShardPrefix, func(key []byte) error { return b.del(key) }); err != nil {
			return err
		}
		return eachRange(txn, []byte{tagSession}, nil, func(id sid, _ kv.Iterator) error {
			if hasKey(txn, legacyMetaKey(id)) {
				return b.del(legacyMetaKey(id))
			}
			return nil
		})
	})
	if err == nil {
		err = b.flush()
	}
	if err == nil {
		err = s.stampSchema(false)
	}
	return err
}

// valueOf is a copy of key's value, nil when there is none.
func valueOf(txn kv.Txn, key []byte) ([]byte, error) {
	v, err := txn.Get(key)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return copyValue(v)
}

func hasKey(txn kv.Txn, key []byte) bool {
	_, err := txn.Get(key)
	return err == nil
}

// moveBatch and moveBatchBytes bound what one transaction of a move to
// schema 4 writes, far below what Badger's transactions hold. A variable
// so that tests can lower it.
var moveBatch = 1024

const moveBatchBytes = 256 << 10

// testHookMoveBatch lets the crash test die between the transactions of a
// move's copying.
var testHookMoveBatch func(n int)

// keyBatch writes sets and deletes in transactions of at most moveBatch
// keys and moveBatchBytes, and within the engine's Limits. Its users are
// the store's operations whose every step stands alone (a move between
// schemas, gc's deletions, a removal's after its commit point), never one
// that must be atomic.
type keyBatch struct {
	s       *Store
	keys    [][]byte
	vals    [][]byte // nil: delete
	size    int
	batches int
	hook    func(batches int)  // tests: a kill between transactions
	check   func(kv.Txn) error // run first in each transaction (shared.go)
}

// testHookDropBatch lets the crash test die while a move deletes old keys.
var testHookDropBatch func(n int)

func (b *keyBatch) set(key, val []byte) error { return b.add(bytes.Clone(key), val) }

func (b *keyBatch) del(key []byte) error { return b.add(bytes.Clone(key), nil) }

func (b *keyBatch) add(key, val []byte) error {
	lim := b.s.eng.Limits()
	size := len(key) + len(val)
	if len(b.keys) > 0 && (lim.MaxTxnOps > 0 && len(b.keys) >= lim.MaxTxnOps ||
		lim.MaxTxnBytes > 0 && int64(b.size+size) > lim.MaxTxnBytes) {
		if err := b.flush(); err != nil {
			return err
		}
	}
	b.keys, b.vals = append(b.keys, key), append(b.vals, val)
	if b.size += size; len(b.keys) < moveBatch && b.size < moveBatchBytes {
		return nil
	}
	return b.flush()
}

func (b *keyBatch) flush() error {
	if len(b.keys) == 0 {
		return nil
	}
	err := b.s.eng.Update(func(txn kv.Txn) error {
		if b.check != nil {
			if err := b.check(txn); err != nil {
				return err
			}
		}
		for i, k := range b.keys {
			var err error
			if b.vals[i] == nil {
				err = txn.Delete(k)
			} else {
				err = txn.Set(k, b.vals[i])
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	b.s.wrote.Store(true)
	b.keys, b.vals, b.size = b.keys[:0], b.vals[:0], 0
	b.batches++
	if b.hook != nil {
		b.hook(b.batches)
	}
	return nil
}
