package writers

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store"
	"github.com/wctoolkit/wc/pkg/session/store/etcdstore"
	"github.com/wctoolkit/wc/pkg/session/store/kvstore"
)

// Result is what a run of the writers did.
type Result struct {
	Writers int     `json:"writers"`
	Appends int     `json:"appends"`
	Seconds float64 `json:"seconds"`
	PerSec  float64 `json:"appends_per_second"`
	Changed int64   `json:"changed"` // commits refused as changed, then applied again
	Retries int64   `json:"retries"` // transactions the store ran again
	Before  uint64  `json:"messages_before"`
	After   uint64  `json:"messages_after"`
}

// Main is `wcbench writers`; it returns the exit status.
func Main(args []string) int {
	fs := flag.NewFlagSet("wcbench writers", flag.ContinueOnError)
	url := fs.String("store", "", "the store on etcd, `URL` (etcd://HOST:PORT,.../PREFIX)")
	id := fs.String("id", "", "the session's full `ID`")
	writers := fs.Int("writers", 8, "writers appending at once")
	appends := fs.Int("appends", 200, "appends in all")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *url == "" || *id == "" || *writers < 1 || *appends < 1 || fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: wcbench writers -store URL -id ID [-writers N] [-appends N]")
		return 2
	}
	res, err := Run(*url, *id, *writers, *appends)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wcbench writers:", err)
		return 1
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	return 0
}

// Run appends appends user messages to session id in the store at url,
// from writers goroutines at once, each with its own handle.
func Run(url, id string, writers, appends int) (*Result, error) {
	handles := make([]*kvstore.Store, writers)
	defer func() {
		for _, h := range handles {
			if h != nil {
				h.Close()
			}
		}
	}()
	for i := range handles {
		h, err := etcdstore.Open(url, os.Getenv, kvstore.Options{LockTimeout: time.Minute}, kvstore.Write)
		if err != nil {
			return nil, err
		}
		handles[i] = h
	}
	before, err := handles[0].Meta(id)
	if err != nil {
		return nil, err
	}
	var next, changed atomic.Int64
	errs := make([]error, writers)
	var wg sync.WaitGroup
	began := time.Now()
	for w, h := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := next.Add(1); n <= int64(appends); n = next.Add(1) {
				tries := 0
				err := store.RetryChanged(time.Now().Add(time.Minute), func() error {
					tries++
					return appendOne(h, id, fmt.Sprintf("writer %d, append %d", w, n))
				})
				if err != nil {
					errs[w] = err
					return
				}
				changed.Add(int64(tries - 1))
			}
		}()
	}
	wg.Wait()
	took := time.Since(began)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	after, err := handles[0].Meta(id)
	if err != nil {
		return nil, err
	}
	res := &Result{Writers: writers, Appends: appends, Seconds: took.Seconds(), PerSec: float64(appends) / took.Seconds(),
		Changed: changed.Load(), Before: before.MessageCount, After: after.MessageCount}
	for _, h := range handles {
		res.Retries += h.Retries()
	}
	return res, nil
}

// appendOne reads the session and commits one user message after its
// head: a commit that finds the session changed fails with
// store.ErrChanged.
func appendOne(h *kvstore.Store, id, text string) error {
	m, err := h.Meta(id)
	if err != nil {
		return err
	}
	var parent *session.Node
	if m.Head != 0 {
		head, err := h.Node(id, m.Head)
		if err != nil {
			return err
		}
		parent = &head
	}
	now := time.Now()
	msg := session.Message{Role: session.RoleUser, Content: session.TextContent(text), CreatedAt: session.FormatTime(now)}
	res := session.Append(&m, parent, []session.Message{msg}, now, nil, session.AppendOptions{})
	return h.Commit(&m, res.Nodes)
}
