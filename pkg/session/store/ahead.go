package store

import (
	"errors"
	"fmt"

	"github.com/wctoolkit/wc/pkg/session"
	"github.com/wctoolkit/wc/pkg/session/store/record"
)

// Damaged is the error of a session whose stored form is malformed.
func Damaged(id ID, what string, args ...any) error {
	return &KindError{Msg: fmt.Sprintf("store: session %s is damaged: %s", id, fmt.Sprintf(what, args...)), Kind: ErrDamaged}
}

// DamagedStore is the error of a store whose files are damaged: what says
// which and how.
func DamagedStore(dir, what string) error {
	return &KindError{Msg: fmt.Sprintf("store %s is damaged: %s", dir, what), Kind: ErrDamaged}
}

// DecodeAhead runs read, which emits stored nodes, on a goroutine of its
// own that decodes them in batches while fn works through the ones before,
// on the caller's goroutine. It returns fn's error, else read's. fn must
// not use the handle: read may be using it.
func DecodeAhead(key ID, read func(emit func(seq uint64, raw []byte) error) error, fn func(*session.Node) error) error {
	batches := make(chan []session.Node, 2)
	stop := make(chan struct{})
	readErr := make(chan error, 1)
	go func() {
		defer close(batches)
		var batch []session.Node
		size := 0
		send := func() bool {
			select {
			case batches <- batch:
				batch, size = nil, 0
				return true
			case <-stop:
				return false
			}
		}
		err := read(func(seq uint64, raw []byte) error {
			n, derr := record.DecodeNode(seq, raw)
			if derr != nil {
				return Damaged(key, "node %d is malformed: %v", seq, derr)
			}
			batch = append(batch, n)
			if size += len(raw); size >= pathBatchBytes && !send() {
				return errPathStopped
			}
			return nil
		})
		if err != errPathStopped && len(batch) > 0 {
			send() // what was read before an error is still passed on
		}
		readErr <- err
	}()
	var fnErr error
	for batch := range batches {
		for i := 0; i < len(batch) && fnErr == nil; i++ {
			fnErr = fn(&batch[i])
		}
		if fnErr != nil {
			close(stop)
			for range batches { // let the reader finish its transaction
			}
		}
	}
	err := <-readErr
	if fnErr != nil {
		return fnErr
	}
	return err
}

// pathBatchBytes is how much stored JSON the reader of Path decodes ahead of
// fn, per batch; two batches may wait.
const pathBatchBytes = 256 << 10

var errPathStopped = errors.New("store: path reading stopped")
