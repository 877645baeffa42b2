// This file holds the journal's committer: writes queued by submit, and
// group commit, many writes to one fsync.

package idem

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// commitReq is one write waiting for the committer: an operation's record
// (key and rec), or any other write (apply).
//
// A record is written compare-and-set: only over a record in the state
// from (stateNone: no record), read again in the write's own transaction,
// so that a move the journal no longer allows (the operation was
// abandoned, expired or purged meanwhile) is not made. Otherwise the
// record is left as it is, and moved reports what it holds.
//
// Requests are pooled with their buffer, which holds the record and its
// key: bbolt keeps a reference to a value put in a transaction until the
// transaction ends, so a request is recycled only once its write is
// settled, by the committer for a lazy write, by the submitter, after it
// has its answer, for a durable one. Channels are not pooled: one made in
// a testing/synctest bubble cannot be used outside it.
type commitReq struct {
	apply   func(*bolt.Tx) error // nil for a record
	key     []byte
	rec     []byte
	pending bool       // rec is pending: its key goes in the pending index
	from    State      // the state the record must be in to be written
	moved   bool       // it was not: the write was not made
	found   State      // the state it was in, when moved
	lazy    *Operation // for a lazy write: the overlay entry to drop once committed
	durable bool       // the submitter waits on done
	done    chan error // for a durable write
	buf     []byte     // backs key and rec
}

var reqPool = sync.Pool{New: func() any { return new(commitReq) }}

// maxPooledBuf is the largest record buffer kept for reuse; a larger one
// (a large body) is left to the garbage collector rather than held.
const maxPooledBuf = 64 << 10

func newCommitReq() *commitReq { return reqPool.Get().(*commitReq) }

func recycle(r *commitReq) {
	buf := r.buf[:0]
	if cap(buf) > maxPooledBuf {
		buf = nil
	}
	*r = commitReq{buf: buf}
	reqPool.Put(r)
}

// run makes r's write in the transaction w.
func (r *commitReq) run(w *writeBatch) error {
	if r.apply != nil {
		return r.apply(w.tx)
	}
	r.moved, r.found = false, stateNone // run may run twice (see submit)
	cur, err := recordState(w.get(r.key))
	if err != nil {
		return fmt.Errorf("%w: record %q: %v", ErrJournalCorrupt, r.key, err)
	}
	if cur != r.from {
		r.moved, r.found = true, cur
		return nil
	}
	if err := w.ops.Put(r.key, r.rec); err != nil {
		return err
	}
	if r.pending { // the pending index follows the state
		return w.pending.Put(r.key, nil)
	}
	return w.pending.Delete(r.key)
}

// A writeBatch is one commit's transaction with what its record writes
// share: the buckets, looked up once, and a cursor on the operations,
// whose Seek reads the record a write compares its state with. bbolt's
// Get makes a cursor, and grows its stack, for every read; one cursor
// repositioned by each Seek makes none after the first, a commit reading
// as many records as it writes. A cursor stays usable across the
// transaction's Puts and Deletes provided each use starts with a Seek:
// one that read on from where it was, or gave the record it was on again,
// would read what a Put or Delete of the batch has since replaced
// (TestBatchWritesToOneKey).
type writeBatch struct {
	tx           *bolt.Tx
	ops, pending *bolt.Bucket
	cur          *bolt.Cursor // on ops; made at the first read
}

func newWriteBatch(tx *bolt.Tx) *writeBatch {
	return &writeBatch{tx: tx, ops: opsBucket(tx), pending: tx.Bucket(bucketPending)}
}

// get returns the record filed under key, nil if there is none, as
// ops.Get would.
func (w *writeBatch) get(key []byte) []byte {
	if w.cur == nil {
		w.cur = w.ops.Cursor()
	}
	k, v := w.cur.Seek(key)
	if !bytes.Equal(k, key) {
		return nil
	}
	return v // nil for a nested bucket, as Get's: the ops bucket has none
}

// submitRecord queues op's record, encoded now, to be written over a
// record in the state from (see commitReq): durably, or lazily with lazy
// as the overlay entry until it is committed. A durable write that finds
// the record in another state returns a *movedError.
func (j *Journal) submitRecord(op *Operation, from State, durable bool, lazy *Operation) error {
	r := newCommitReq()
	buf := r.buf[:0]
	if need := op.recordSize() + len(op.Key); cap(buf) < need {
		buf = make([]byte, 0, need)
	}
	buf = op.encode(buf)
	n := len(buf)
	buf = append(buf, op.Key...)
	r.buf, r.rec, r.key = buf, buf[:n:n], buf[n:]
	r.pending, r.from, r.lazy, r.durable = op.State == Pending, from, lazy, durable
	return j.queue(r)
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
	r := newCommitReq()
	r.apply, r.lazy, r.durable = apply, lazy, durable
	return j.queue(r)
}

// queue hands r to the committer and, for a durable write, waits for it.
func (j *Journal) queue(r *commitReq) error {
	j.mu.RLock()
	if j.closed {
		j.mu.RUnlock()
		recycle(r)
		return ErrJournalClosed
	}
	if r.lazy != nil {
		j.lazyMu.Lock()
		j.lazy[r.lazy.Key] = r.lazy
		j.lazyMu.Unlock()
	}
	if !r.durable {
		j.reqs <- r // r is the committer's now
		j.mu.RUnlock()
		return nil
	}
	done := make(chan error, 1)
	r.done = done
	j.reqs <- r
	j.mu.RUnlock()
	err := <-done
	recycle(r)
	return err
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
		if r.durable {
			return true
		}
	}
	return false
}

// commit writes a batch in one transaction. If it fails, each write is
// tried alone, so one bad write cannot fail its neighbours.
func (j *Journal) commit(batch []*commitReq) {
	j.commits.Add(1)
	began := time.Now()
	o := j.opts.Observer
	err := j.writeTx(func(tx *bolt.Tx) error {
		w := newWriteBatch(tx)
		for _, r := range batch {
			if err := r.run(w); err != nil {
				return err
			}
		}
		return nil
	})
	j.commitTime.Add(int64(time.Since(began)))
	if o != nil && o.Commit != nil {
		// Before the writes are settled: a durable write's submitter
		// returns after the commit it rode on was reported.
		j.observeCommit(o, len(batch), began, err)
	}
	if err == nil || len(batch) == 1 {
		for _, r := range batch {
			j.settle(r, err)
		}
		return
	}
	for _, r := range batch {
		j.settle(r, j.writeTx(func(tx *bolt.Tx) error { return r.run(newWriteBatch(tx)) }))
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

// settle reports r's outcome: to its submitter, waiting, for a durable
// write; else in the lazy overlay and, if it failed, in j.err. Either way
// r is no longer the committer's.
func (j *Journal) settle(r *commitReq, err error) {
	if err != nil && !errors.Is(err, ErrJournalCorrupt) {
		err = fmt.Errorf("idem: journal %s: write failed: %v", j.path, err)
	}
	if err == nil && r.moved {
		err = &movedError{key: string(r.key), from: r.from, state: r.found}
	}
	if r.durable {
		r.done <- err
		return
	}
	if r.lazy != nil {
		j.lazyMu.Lock()
		if j.lazy[r.lazy.Key] == r.lazy {
			delete(j.lazy, r.lazy.Key)
		}
		if err != nil && !r.moved && j.err == nil {
			j.err = err // a write not made because the record moved is no failure
		}
		j.lazyMu.Unlock()
	}
	recycle(r)
}

// recordState returns the state of a record v, stateNone for no record,
// reading as little as it can: a record of the current version is checked
// against its checksum, and its state byte read.
func recordState(v []byte) (State, error) {
	switch {
	case v == nil:
		return stateNone, nil
	case len(v) >= 5 && v[0] == recordVersion:
		if crc32.Checksum(v[:len(v)-4], castagnoli) != binary.BigEndian.Uint32(v[len(v)-4:]) {
			return 0, errChecksum
		}
		if s := State(v[1]); s >= Pending && s <= Abandoned {
			return s, nil
		}
	}
	op, err := decodeOperation(v) // an earlier version, or damage to report
	if err != nil {
		return 0, err
	}
	return op.State, nil
}

// observeCommit reports a commit of n writes that began at began and
// failed with err (or not), with the pending operations the journal holds
// after it, counted in a read transaction of its own.
func (j *Journal) observeCommit(o *JournalObserver, n int, began time.Time, err error) {
	info := CommitInfo{Writes: n, Duration: time.Since(began), Failed: err != nil}
	observe(func() { // bbolt panics on some damage; the commit is not reported then
		_ = j.db.View(func(tx *bolt.Tx) error { // not j.view: Close may hold j.mu, waiting for the committer
			info.Pending = tx.Bucket(bucketPending).Stats().KeyN
			return nil
		})
		o.Commit(info)
	})
}
