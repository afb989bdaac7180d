package gen

import (
	"errors"
	"os"
	"sync"
	"time"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/etcdstore"
	"github.com/wctoolkit/wc/pkg/session/store/kvstore"
)

// etcdSink writes each session to every store of its URLs, through
// writers goroutines that each hold a handle per store. Sessions are
// independent, so their commits may land in any order.
type etcdSink struct {
	work chan etcdJob
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
}

type etcdJob struct {
	meta  session.Meta
	nodes []session.Node
}

func newEtcdSink(urls []string, writers int) (*etcdSink, error) {
	s := &etcdSink{work: make(chan etcdJob, 4*writers)}
	var handles [][]*kvstore.Store
	for range writers {
		var hs []*kvstore.Store
		for _, u := range urls {
			st, err := etcdstore.Open(u, os.Getenv, kvstore.Options{LockTimeout: time.Minute}, kvstore.Write)
			if err != nil {
				for _, hs := range append(handles, hs) {
					for _, h := range hs {
						h.Close()
					}
				}
				return nil, err
			}
			hs = append(hs, st)
		}
		handles = append(handles, hs)
	}
	for _, hs := range handles {
		s.wg.Add(1)
		go s.write(hs)
	}
	return s, nil
}

func (s *etcdSink) write(handles []*kvstore.Store) {
	defer s.wg.Done()
	for job := range s.work {
		for _, h := range handles {
			if s.failed() {
				break
			}
			m := job.meta
			if err := h.Commit(&m, job.nodes); err != nil {
				s.fail(err)
			}
		}
	}
	for _, h := range handles {
		if err := h.Close(); err != nil {
			s.fail(err)
		}
	}
}

func (s *etcdSink) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = errors.Join(s.err, err)
}

func (s *etcdSink) failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err != nil
}

func (s *etcdSink) add(meta *session.Meta, nodes []session.Node, _ [][]byte) error {
	if s.failed() {
		return s.close()
	}
	s.work <- etcdJob{meta: *meta, nodes: nodes}
	return nil
}

// close waits for the writers; it reports the first commits that failed.
func (s *etcdSink) close() error {
	if s.work != nil {
		close(s.work)
		s.work = nil
		s.wg.Wait()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
