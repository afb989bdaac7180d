package etcdkv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wctoolkit/wc/pkg/session/store/etcdkv"
	"github.com/wctoolkit/wc/pkg/session/store/etcdkv/etcdtest"
	"github.com/wctoolkit/wc/pkg/session/store/kv"
)

// Sizes of the store's records in a typical append (wc-append of one
// message): the node, the session's metadata, its listing entry.
var (
	nodeValue    = bytes.Repeat([]byte("n"), 1200)
	metaValue    = bytes.Repeat([]byte("m"), 700)
	listingValue = bytes.Repeat([]byte("l"), 300)
)

// appendTx is the store's append: read the metadata (the compare), write
// the next node, the metadata and the listing entry.
func appendTx(session int) func(kv.Txn) error {
	return func(tx kv.Txn) error {
		meta := fmt.Appendf(nil, "s/%04d/meta", session)
		n := 0
		v, err := tx.Get(meta)
		if err == nil {
			n, _ = strconv.Atoi(string(v[:bytes.IndexByte(v, ' ')]))
		} else if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		n++
		if err := tx.Set(fmt.Appendf(nil, "s/%04d/n/%08d", session, n), nodeValue); err != nil {
			return err
		}
		if err := tx.Set(meta, append(fmt.Appendf(nil, "%d ", n), metaValue...)); err != nil {
			return err
		}
		return tx.Set(fmt.Appendf(nil, "l/%04d", session), listingValue)
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func percentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkSmallUpdate: one append after another, on the shared cluster.
func BenchmarkSmallUpdate(b *testing.B) {
	e := etcdtest.Open(b)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := e.Update(appendTx(0)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	percentiles(b, lat)
}

// BenchmarkViewGets: a View of 100 Gets of node-sized values, as a
// reader that follows a session's nodes one by one does.
func BenchmarkViewGets(b *testing.B) {
	e := etcdtest.Open(b)
	for i := 0; i < 100; i++ {
		if err := e.Update(appendTx(0)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := e.View(func(tx kv.Txn) error {
			for n := 1; n <= 100; n++ {
				if _, err := tx.Get(fmt.Appendf(nil, "s/0000/n/%08d", n)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConcurrentUpdaters: 8 updaters appending, retrying on
// conflicts, to one session (one key range, one compared key) or each to
// its own.
func BenchmarkConcurrentUpdaters(b *testing.B) {
	for _, sessions := range []int{1, 8} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			e := etcdtest.Open(b)
			const updaters = 8
			var next, conflicts atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for w := 0; w < updaters; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						for {
							err := e.Update(appendTx(w % sessions))
							if errors.Is(err, kv.ErrConflict) {
								conflicts.Add(1)
								continue
							}
							if err != nil {
								b.Error(err)
								return
							}
							break
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "commits/s")
			b.ReportMetric(float64(conflicts.Load())/float64(b.N), "retries/commit")
		})
	}
}

// BenchmarkIterate: a scan of 10,000 listing-sized entries, both ways,
// with values and keys only; and the first key of a reverse scan, which
// etcd 3.4 answers by sorting the whole range.
func BenchmarkIterate(b *testing.B) {
	e := etcdtest.Open(b)
	const n = 10000
	for i := 0; i < n; {
		if err := e.Update(func(tx kv.Txn) error {
			for j := 0; j < 100 && i < n; j, i = j+1, i+1 {
				if err := tx.Set(fmt.Appendf(nil, "l/%06d", i), listingValue); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		opt   kv.IterOptions
		first bool
	}{
		{"forward", kv.IterOptions{Prefix: []byte("l/")}, false},
		{"reverse", kv.IterOptions{Prefix: []byte("l/"), Reverse: true}, false},
		{"forward-keys", kv.IterOptions{Prefix: []byte("l/"), KeysOnly: true}, false},
		{"reverse-keys", kv.IterOptions{Prefix: []byte("l/"), Reverse: true, KeysOnly: true}, false},
		{"forward-first", kv.IterOptions{Prefix: []byte("l/")}, true},
		{"reverse-first", kv.IterOptions{Prefix: []byte("l/"), Reverse: true}, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			keys := 0
			for i := 0; i < b.N; i++ {
				if err := e.View(func(tx kv.Txn) error {
					it := tx.Iterate(c.opt)
					defer it.Close()
					for it.Seek(nil); it.Valid(); it.Next() {
						keys++
						if !c.opt.KeysOnly {
							if _, err := it.Value(); err != nil {
								return err
							}
						}
						if c.first {
							break
						}
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
			}
			if !c.first && keys != n*b.N {
				b.Fatalf("%d keys, want %d", keys, n*b.N)
			}
			b.ReportMetric(float64(keys)/b.Elapsed().Seconds(), "keys/s")
		})
	}
}

// BenchmarkSpace measures the database a cluster of its own needs for
// appends to sessions (each append rewrites the metadata and the listing
// entry), per byte of live data: as written, after a compaction, and
// after defragmenting every member. It reports ratios, not time, from one
// measurement however many times the framework runs it.
func BenchmarkSpace(b *testing.B) {
	spaceOnce.Do(func() { spaceFigures = measureSpace(b) })
	if spaceFigures == nil {
		b.Fatal("the measurement failed")
	}
	for _, f := range spaceFigures {
		b.ReportMetric(f.value, f.unit)
	}
}

type figure struct {
	value float64
	unit  string
}

var (
	spaceOnce    sync.Once
	spaceFigures []figure
)

func measureSpace(b *testing.B) []figure {
	c := etcdtest.StartCluster(b)
	cfg := etcdtest.Config(b, c.Endpoints)
	e, err := etcdkv.Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	cli := etcdtest.Client(b, c.Endpoints)
	ctx := context.Background()
	size := func() (db, inUse int64) {
		for _, ep := range c.Endpoints {
			st, err := cli.Status(ctx, ep)
			if err != nil {
				b.Fatal(err)
			}
			db = max(db, st.DbSize)
			inUse = max(inUse, st.DbSizeInUse)
		}
		return db, inUse
	}
	const sessions, appends = 200, 150 // 30,000 appends, 36 MiB live
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := w; s < sessions; s += 4 {
				for a := 0; a < appends; a++ {
					if err := e.Update(appendTx(s)); err != nil {
						b.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	var live int64
	resp, err := cli.Get(ctx, "/"+cfg.Prefix+"/", clientv3.WithPrefix())
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range resp.Kvs {
		live += int64(len(p.Key) + len(p.Value))
	}
	written, writtenInUse := size()
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		b.Fatal(err)
	}
	compacted, compactedInUse := size()
	for _, ep := range c.Endpoints {
		if _, err := cli.Defragment(ctx, ep); err != nil {
			b.Fatal(err)
		}
	}
	defragged, defraggedInUse := size()
	b.Logf("live %.1f MiB; database file (in use) %.1f (%.1f) MiB as written, %.1f (%.1f) compacted, %.1f (%.1f) defragmented",
		mib(live), mib(written), mib(writtenInUse), mib(compacted), mib(compactedInUse), mib(defragged), mib(defraggedInUse))
	ratio := func(n int64) float64 { return float64(n) / float64(live) }
	return []figure{
		{mib(live), "live-MiB"},
		{ratio(written), "db/live-written"},
		{ratio(compactedInUse), "inuse/live-compacted"},
		{ratio(defragged), "db/live-defragmented"},
		{ratio(defraggedInUse), "inuse/live-defragmented"},
	}
}
