// This file holds deadlines, the one queue per middleware and bound that
// cancels work past its start limit or its work limit, so that a request
// pays for neither a timer nor a closure of its own.

package server

import (
	"context"
	"sync"
	"time"
)

// deadlines cancels contexts at fixed durations after they join it: a
// middleware's work past Options.WorkTimeout, or its work that has not
// started within Options.StartTimeout. Every deadline in one queue is the
// same duration after it was armed, so the queue is in the order of its
// deadlines: a deadline joins at the tail in constant time, leaves from
// anywhere in constant time, and only the head can be due. One timer, set
// when a deadline joins and none is set, fires for the earliest deadline
// queued then, cancels every due deadline's context with the queue's
// cause, and sets itself for the next head, or lapses if there is none.
// Each context is cancelled at its own deadline, as with a timer of its
// own, and a request that ends in time touches no timer: the one timer
// fires once per duration at most while requests keep coming.
//
// The timer is made in the goroutine that arms the first deadline, and a
// timer of a testing/synctest bubble runs on the bubble's fake clock,
// dies with the bubble and must not be touched from outside it. So a
// queue made on the real clock (a middleware made outside any bubble,
// as in TestMain or a package-level variable) queues only deadlines read
// on the real clock, and one made in a bubble only those read on a fake
// clock (its own bubble's, the middleware being that test's): any other
// deadline gets a timer of its own, in the goroutine that arms it, as
// without a queue. A clock reading tells which: a fake clock's carries
// no monotonic reading.
//
// A nil *deadlines queues nothing: arm gives each deadline a timer of its
// own (RunOnce, which has no middleware to share a queue with).
//
// A deadlines is safe for concurrent use.
type deadlines struct {
	after  time.Duration // every deadline's distance from its arming
	cause  error         // the cause its contexts are cancelled with
	expire func()        // q.fire, bound once
	fake   bool          // made on a testing/synctest bubble's clock (see monotonic)

	mu         sync.Mutex
	head, tail *deadline
	timer      *time.Timer // set to fire, or firing; nil: none
}

// newDeadlines returns a queue that cancels with cause after d.
func newDeadlines(d time.Duration, cause error) *deadlines {
	q := &deadlines{after: d, cause: cause, fake: !monotonic(time.Now())}
	q.expire = q.fire
	return q
}

// monotonic reports whether t carries a monotonic clock reading, as every
// time.Now does but one on the fake clock of a testing/synctest bubble
// (and the times computed from it: see clockNow).
func monotonic(t time.Time) bool { return t != t.Round(0) }

// deadline is one bound on one context, living in its user (an attempt,
// or the workBase of a claim) to save allocations. Each arm is followed
// by one stop before the next arm.
type deadline struct {
	prev, next *deadline
	at         time.Time
	cancel     context.CancelCauseFunc
	queued     bool        // in the queue, not yet due: guarded by deadlines.mu
	timer      *time.Timer // without a queue, or on the other clock than the queue's; else nil
}

// arm cancels the context behind cancel with the queue's cause once its
// duration has passed since now, a recent reading of the clock, unless
// stop comes first. On a nil q, or for a reading on another clock than
// q's (see deadlines), it does so by a timer of d's own, after and with
// cause.
func (q *deadlines) arm(d *deadline, now time.Time, after time.Duration, cause error, cancel context.CancelCauseFunc) {
	if q == nil || monotonic(now) == q.fake {
		d.timer = time.AfterFunc(after, func() { cancel(cause) })
		return
	}
	d.timer, d.cancel, d.at = nil, cancel, now.Add(q.after)
	q.mu.Lock()
	defer q.mu.Unlock()
	// Requests that read the clock at about the same time may arm in the
	// other order: d goes after the last deadline not later than its own,
	// a step or two from the tail at most.
	prev := q.tail
	for prev != nil && d.at.Before(prev.at) {
		prev = prev.prev
	}
	d.prev, d.queued = prev, true
	if prev != nil {
		d.next, prev.next = prev.next, d
	} else {
		d.next, q.head = q.head, d
	}
	if d.next != nil {
		d.next.prev = d
	} else {
		q.tail = d
	}
	if q.timer == nil {
		// The queue was empty and its timer lapsed: set one for d. (A d
		// that went in before the head is due by as much before the time
		// the timer is set for as the clock readings were apart, and is
		// cancelled then, with the head: the timer is only ever set from
		// its own firing, or made new, so it stays in the goroutines of
		// the testing/synctest bubble it was made in.)
		q.timer = time.AfterFunc(time.Until(d.at), q.expire)
	}
}

// stop disarms d. It reports whether d was disarmed before its deadline:
// false means its context has been cancelled (or, without a queue, is
// being cancelled), as time.Timer.Stop reports for an AfterFunc timer.
func (q *deadlines) stop(d *deadline) bool {
	if q == nil || d.timer != nil {
		return d.timer.Stop()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if !d.queued {
		return false
	}
	q.unlink(d)
	return true
}

// unlink takes d out of the queue. The caller holds q.mu.
func (q *deadlines) unlink(d *deadline) {
	if d.prev != nil {
		d.prev.next = d.next
	} else {
		q.head = d.next
	}
	if d.next != nil {
		d.next.prev = d.prev
	} else {
		q.tail = d.prev
	}
	d.prev, d.next, d.queued = nil, nil, false
}

// fire runs on the queue's timer, at the deadline it was set for (the
// head's when it was set; that deadline may have been stopped since). It
// cancels the due contexts and sets the timer for the next head, a later
// deadline, or lets it lapse. Each firing is at the deadline of one armed
// deadline, so the firings are at most the deadlines armed.
func (q *deadlines) fire() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	for q.head != nil && !now.Before(q.head.at) {
		d := q.head
		q.unlink(d)
		// Cancelled under the lock, so that a stop that finds d gone
		// knows its context is cancelled. Cancelling runs no code of the
		// work's (context.AfterFunc runs its own goroutine).
		d.cancel(q.cause)
		d.cancel = nil
	}
	if q.head == nil {
		q.timer = nil
		return
	}
	q.timer.Reset(q.head.at.Sub(now))
}
