// This file holds the journal's committer: writes queued by submit, and
// group commit, many writes to one fsync.

package idem

import (
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// commitReq is one write waiting for the committer.
type commitReq struct {
	apply func(*bolt.Tx) error
	lazy  *Operation // for a lazy write: the overlay entry to drop once committed
	done  chan error // nil for a lazy write
}

// submit queues a write. A durable one waits until it is on disk.
//
// apply may run more than once, as a function given to bbolt's DB.Batch
// may: the committer runs a batch's writes in one transaction, and if that
// transaction fails it runs each write again alone, in a transaction of
// its own (see commit), so that one bad write cannot fail its neighbours.
// apply must therefore be idempotent, and must reset anything it reports
// to its caller (a count, a record read) at each run, not add to it. Only
// the last run's effects are committed.
func (j *Journal) submit(durable bool, lazy *Operation, apply func(*bolt.Tx) error) error {
	r := &commitReq{apply: apply, lazy: lazy}
	if durable {
		r.done = make(chan error, 1)
	}
	j.mu.RLock()
	if j.closed {
		j.mu.RUnlock()
		return ErrJournalClosed
	}
	if lazy != nil {
		j.lazyMu.Lock()
		j.lazy[lazy.Key] = lazy
		j.lazyMu.Unlock()
	}
	j.reqs <- r
	j.mu.RUnlock()
	if !durable {
		return nil
	}
	return <-r.done
}

// run is the committer: it takes every queued write and commits them in
// one bbolt transaction, one fsync for all. Lazy writes alone wait up to
// lazyFlushDelay for a durable one to share a commit with.
func (j *Journal) run() {
	defer close(j.done)
	var (
		batch   []*commitReq
		timer   *time.Timer
		flushBy time.Time // when a batch of lazy writes alone is committed
		closing bool
	)
	for !closing {
		if len(batch) == 0 {
			r, ok := <-j.reqs
			if !ok {
				return
			}
			batch = append(batch, r)
			flushBy = time.Now().Add(lazyFlushDelay)
		}
		batch, closing = j.drain(batch)
		if !closing && !hasDurable(batch) {
			// The delay counts from the batch's first write: a steady
			// stream of lazy writes must not put the commit off.
			if timer == nil {
				timer = time.NewTimer(time.Until(flushBy))
			} else {
				timer.Reset(time.Until(flushBy))
			}
			select {
			case r, ok := <-j.reqs:
				timer.Stop()
				if !ok {
					closing = true
				} else {
					batch = append(batch, r)
					continue
				}
			case <-timer.C:
			}
		}
		j.commit(batch)
		clear(batch)
		batch = batch[:0]
	}
}

func (j *Journal) drain(batch []*commitReq) ([]*commitReq, bool) {
	for {
		select {
		case r, ok := <-j.reqs:
			if !ok {
				return batch, true
			}
			batch = append(batch, r)
		default:
			return batch, false
		}
	}
}

func hasDurable(batch []*commitReq) bool {
	for _, r := range batch {
		if r.done != nil {
			return true
		}
	}
	return false
}

// commit writes a batch in one transaction. If it fails, each write is
// tried alone, so one bad write cannot fail its neighbours.
func (j *Journal) commit(batch []*commitReq) {
	j.commits.Add(1)
	err := j.writeTx(func(tx *bolt.Tx) error {
		for _, r := range batch {
			if err := r.apply(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || len(batch) == 1 {
		for _, r := range batch {
			j.settle(r, err)
		}
		return
	}
	for _, r := range batch {
		j.settle(r, j.writeTx(r.apply))
	}
}

// writeTx runs fn in a bbolt write transaction. bbolt panics on some damage
// it meets while writing (a page it cannot place); that is an error here,
// ErrJournalCorrupt, not a crash of the process. bbolt rolls the
// transaction back as the panic passes.
func (j *Journal) writeTx(fn func(*bolt.Tx) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s: %v", ErrJournalCorrupt, j.path, p)
		}
	}()
	return j.db.Update(fn)
}

func (j *Journal) settle(r *commitReq, err error) {
	if err != nil && !errors.Is(err, ErrJournalCorrupt) {
		err = fmt.Errorf("idem: journal %s: write failed: %v", j.path, err)
	}
	if r.done != nil {
		r.done <- err
		return
	}
	j.lazyMu.Lock()
	if j.lazy[r.lazy.Key] == r.lazy {
		delete(j.lazy, r.lazy.Key)
	}
	if err != nil && j.err == nil {
		j.err = err
	}
	j.lazyMu.Unlock()
}
