package kvstore

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkConcurrentAppendEtcd: 8 writers, each on a connection of its
// own, append to one session through the revision check and the retry
// loop; it prints appends/s and the retries per append (commits refused
// as changed, and transactions the store ran again).
func BenchmarkConcurrentAppendEtcd(b *testing.B) {
	benchAppends(b, 8)
}

// BenchmarkAppendEtcd is one writer appending: the latency of an append.
func BenchmarkAppendEtcd(b *testing.B) {
	benchAppends(b, 1)
}

func benchAppends(b *testing.B, writers int) {
	c := newEtcdCluster(b)
	id := testID(0xbe0c0000, 1)
	stores := make([]*Store, writers)
	for i := range stores {
		stores[i] = c.open(b)
	}
	m := metaFor(id, nil)
	if err := stores[0].Commit(&m, nil); err != nil {
		b.Fatal(err)
	}
	var changed atomic.Int64
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				tries := 0
				err := RetryChanged(time.Now().Add(time.Minute), func() error {
					tries++
					return appendOne(s, id, fmt.Sprintf("w%d", w))
				})
				if err != nil {
					b.Error(err)
					return
				}
				changed.Add(int64(tries - 1))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	var retries int64
	for _, s := range stores {
		retries += s.Retries()
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "appends/s")
	b.ReportMetric(float64(changed.Load())/float64(b.N), "changed/append")
	b.ReportMetric(float64(retries)/float64(b.N), "retries/append")
}
