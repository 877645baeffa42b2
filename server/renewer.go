// This file holds renewer, the one goroutine per middleware that renews
// the leases of its running attempts.

package server

import (
	"sync"
	"time"
)

// renewer renews the leases of one middleware's running attempts, so a
// request pays for neither a timer nor a goroutine of its own: an attempt
// joins a list in constant time and leaves it when it ends. One goroutine,
// started when the list gains an attempt and gone at the first tick that
// finds it empty, ticks every half renewal interval and renews each
// attempt that has run for two ticks since its last renewal (between half
// an interval and a whole one), each in a goroutine of its own so a slow
// store does not hold up the others. Only requests that outlive half a
// renewal interval (5 s by default) are ever renewed.
//
// The goroutine runs in the testing/synctest bubble of the request that
// starts it, on that bubble's clock, as the deadlines' timer does (see
// deadlines): a renewer made on the real clock renews only attempts that
// began on it, one made in a bubble only those that began on a fake
// clock, and any other attempt renews on a timer of its own (see on).
//
// A renewer is safe for concurrent use.
type renewer struct {
	every time.Duration
	fake  bool // made on a testing/synctest bubble's clock

	mu      sync.Mutex
	head    *attempt
	tick    uint64
	running bool
	due     []*attempt // reused by run
}

func newRenewer(every time.Duration) *renewer {
	return &renewer{every: every, fake: !monotonic(time.Now())}
}

// on returns r if an attempt that began at now, a reading of the clock
// of the goroutine that runs it, is r's to renew, or nil: the attempt
// renews on a timer of its own.
func (r *renewer) on(now time.Time) *renewer {
	if r == nil || monotonic(now) == r.fake {
		return nil
	}
	return r
}

// add starts renewing a.
func (r *renewer) add(a *attempt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a.since = r.tick
	a.prev, a.next = nil, r.head
	if r.head != nil {
		r.head.prev = a
	}
	r.head = a
	if !r.running {
		r.running = true
		go r.run()
	}
}

// remove stops renewing a. It may be called more than once.
func (r *renewer) remove(a *attempt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case a.prev != nil:
		a.prev.next = a.next
	case r.head == a:
		r.head = a.next
	default:
		return // not in the list
	}
	if a.next != nil {
		a.next.prev = a.prev
	}
	a.prev, a.next = nil, nil
}

func (r *renewer) run() {
	t := time.NewTicker(max(r.every/2, time.Millisecond))
	defer t.Stop()
	for range t.C {
		r.mu.Lock()
		if r.head == nil {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.tick++
		due := r.due[:0]
		for a := r.head; a != nil; a = a.next {
			if r.tick-a.since >= 2 {
				a.since = r.tick
				due = append(due, a)
			}
		}
		r.mu.Unlock()
		for _, a := range due {
			go a.renew()
		}
		clear(due)
		r.due = due
	}
}
