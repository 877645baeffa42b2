// This file holds the etcd leases records are written under: one lease
// per window of expiry times, shared by every record that expires in it.

package etcdstore

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// leases hands out the etcd leases records are attached to, so that etcd
// deletes a record by itself once it may be forgotten: a running record
// Options.Abandon after its lease lapsed, a completed one after its
// retention. Granting a lease is a write through consensus, so records
// share them: a record that must live until t gets the lease of the
// window t falls in, which expires at the window's end. A window is a
// power of two seconds long, at least 1 s and at most 1/32 of the time
// left until t (2048 s for a day), so a record outlives its expiry by at
// most 1/32 of its lifetime. The store never relies on etcd's expiry to
// decide anything: Claim compares the times in the record. The leases only
// keep forgotten records from piling up, and etcd's leases can be late
// (they are checked every 500 ms and revoked through consensus), never
// early.
//
// leases is safe for concurrent use; concurrent callers that need the
// same window wait for one grant.
type leases struct {
	lessor  clientv3.Lease
	timeout time.Duration // bounds a grant

	mu     sync.Mutex
	byEnd  map[window]*grant
	pruned time.Time
}

// window is a span of expiry times sharing a lease: its end, in Unix
// seconds, and its length in seconds.
type window struct{ end, width int64 }

// grant is a lease granted, or being granted, for a window.
type grant struct {
	done chan struct{} // closed once id and err are set
	id   clientv3.LeaseID
	err  error
}

func newLeases(lessor clientv3.Lease, timeout time.Duration) *leases {
	return &leases{lessor: lessor, timeout: timeout, byEnd: map[window]*grant{}}
}

// windowFor returns the window of an expiry at, as seen at now.
func windowFor(now, at time.Time) window {
	left := max(at.Sub(now)/32, time.Second)
	width := int64(1)
	for time.Duration(width*2)*time.Second <= left && width < 1<<40 {
		width *= 2
	}
	sec := at.Unix()
	if at.After(time.Unix(sec, 0)) {
		sec++
	}
	end := (sec + width - 1) / width * width
	return window{end: end, width: width}
}

// forExpiry returns a lease that etcd keeps at least until at. The lease
// was granted with a TTL reaching the end of at's window, measured from
// before the grant was sent, so it cannot expire before at.
func (l *leases) forExpiry(ctx context.Context, now, at time.Time) (clientv3.LeaseID, error) {
	w := windowFor(now, at)
	l.mu.Lock()
	l.prune(now)
	g, ok := l.byEnd[w]
	if !ok {
		g = &grant{done: make(chan struct{})}
		l.byEnd[w] = g
		go l.grant(w, g)
	}
	l.mu.Unlock()
	select {
	case <-g.done:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if g.err != nil {
		return 0, g.err
	}
	return g.id, nil
}

// grant asks etcd for w's lease, on a context of its own so that one
// caller giving up does not fail the others waiting for it. A failed
// grant is forgotten, so the next caller asks again.
func (l *leases) grant(w window, g *grant) {
	start := time.Now()
	ttl := w.end - start.Unix() + 1
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	resp, err := l.lessor.Grant(ctx, ttl)
	if err != nil {
		g.err = err
		l.forget(w, g)
	} else {
		g.id = resp.ID
	}
	close(g.done)
}

// forget drops g as w's lease, if it still is: a grant that failed, or a
// lease etcd no longer knows.
func (l *leases) forget(w window, g *grant) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byEnd[w] == g {
		delete(l.byEnd, w)
	}
}

// forgetID drops the lease id, which etcd answered it does not know (it
// was revoked behind the store's back).
func (l *leases) forgetID(id clientv3.LeaseID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for w, g := range l.byEnd {
		select {
		case <-g.done:
			if g.id == id {
				delete(l.byEnd, w)
			}
		default:
		}
	}
}

// prune drops the windows that have ended, at most once a second. The
// caller holds l.mu.
func (l *leases) prune(now time.Time) {
	if now.Sub(l.pruned) < time.Second {
		return
	}
	l.pruned = now
	for w := range l.byEnd {
		if w.end < now.Unix() {
			delete(l.byEnd, w)
		}
	}
}
