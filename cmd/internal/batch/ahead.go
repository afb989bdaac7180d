package batch

import (
	"runtime"
	"sync"
)

// Ahead runs work over a batch's sessions on goroutines of its own, ahead
// of the caller, who takes the results in order: reading, decoding and
// compacting are most of a batch's work and sessions are independent,
// while commits stay on the caller's goroutine, one at a time (they share
// listing keys). It holds at most window sessions, taken or not, until the
// caller is done with them. A session is read only when it is the one the
// caller waits for or the next, or when its token estimate fits
// Tokens beside those of the sessions held: a batch of sessions over
// that size holds two at a time, as one reading a single session ahead
// would. In a writing batch, a session that comes twice in a row is read
// again only after the caller is done with the first.
type Ahead[T any] struct {
	results []chan T
	slots   chan struct{}
	after   map[int]chan struct{} // closed by Done(i) where ids[i+1] == ids[i]
	quit    chan struct{}
	running sync.WaitGroup

	mu      sync.Mutex
	room    *sync.Cond // signalled by Done and Stop
	next    int        // the index the caller takes next
	held    uint64     // the sizes reserved by sessions not done
	sizes   []uint64
	stopped bool
}

// Window is how many sessions a batch holds at once: one per core to
// read and compact, and one more being committed.
func Window() int { return min(runtime.GOMAXPROCS(0), 4) + 1 }

// Tokens bounds the token estimates of the sessions held besides the
// two the caller takes next: some 16 MB of English text. (An image counts
// as 100 tokens whatever its size.)
const Tokens = 4 << 20

// Start runs work over ids: parallel (up to Window at once) or one at a
// time; writing holds back a session that comes twice in a row until the
// caller is done with the first.
func Start[T any](ids []string, parallel, writing bool, work func(id string, reserve func(tokens uint64) bool) T) *Ahead[T] {
	window := 1
	if parallel {
		window = Window()
	}
	a := &Ahead[T]{results: make([]chan T, len(ids)), slots: make(chan struct{}, window),
		after: map[int]chan struct{}{}, quit: make(chan struct{}), sizes: make([]uint64, len(ids))}
	a.room = sync.NewCond(&a.mu)
	for i := range ids {
		a.results[i] = make(chan T, 1)
		if writing && i+1 < len(ids) && ids[i+1] == ids[i] {
			a.after[i] = make(chan struct{})
		}
	}
	a.running.Add(1)
	go func() {
		defer a.running.Done()
		for i, id := range ids {
			select {
			case a.slots <- struct{}{}:
			case <-a.quit:
				return
			}
			if wait, ok := a.after[i-1]; ok {
				select {
				case <-wait:
				case <-a.quit:
					return
				}
			}
			a.running.Add(1)
			go func() {
				defer a.running.Done()
				a.results[i] <- work(id, func(tokens uint64) bool { return a.reserve(i, tokens) })
			}()
		}
	}()
	return a
}

// reserve waits until session i may be read: it is the one the caller
// waits for or the next, or its size fits beside those held. It returns
// false once the batch stopped: nothing more is to be read.
func (a *Ahead[T]) reserve(i int, tokens uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i > a.next+1 && a.held+tokens > Tokens && !a.stopped {
		a.room.Wait()
	}
	if a.stopped {
		return false
	}
	a.held += tokens
	a.sizes[i] = tokens
	return true
}

// Take waits for the session at i.
func (a *Ahead[T]) Take(i int) T { return <-a.results[i] }

// Done frees what the session at i held, taken and finished.
func (a *Ahead[T]) Done(i int) {
	a.mu.Lock()
	a.held -= a.sizes[i]
	a.next = i + 1
	a.room.Broadcast()
	a.mu.Unlock()
	<-a.slots
	if ch, ok := a.after[i]; ok {
		close(ch)
	}
}

// Stop starts no more work, stops work waiting to read, and waits for the
// work in flight, so that nothing reads a closed store.
func (a *Ahead[T]) Stop() {
	close(a.quit)
	a.mu.Lock()
	a.stopped = true
	a.room.Broadcast()
	a.mu.Unlock()
	a.running.Wait()
}
