package memstore

import (
	"container/heap"
	"time"
)

// sweepLimit bounds the expired records one new key forgets in passing,
// when the store has room, so no Claim pays for a long sweep. A new key
// that does not fit forgets as many expired records as it needs of those
// that can make room for it (see Store.admit).
const sweepLimit = 64

// Records are kept in two levels of heaps, so that both the store and each
// scope find their first expired record in O(log n):
//
//   - each scope's usage holds its records in an expiryHeap, the one that
//     expires first in front;
//   - Store.fronts holds every scope that holds records, the scope whose
//     first record expires first in front.
//
// The record that expires first in the store is the front of the front
// scope's heap. A claim refused by its scope's share reclaims from its
// scope's heap only, since no other scope's record can make room in the
// share; one refused by the store's bounds reclaims from the front scope.
//
// Heaps are ordered by expiry as a duration since Store.epoch, read with
// time.Time.Sub: the monotonic clock when both times carry its reading (as
// time.Now's do), else the wall clock, which is what time.Time.Before
// compares when Store.reclaim decides that a record has expired. Ordering by
// wall time instead would disagree with Before after the wall clock stepped
// back: a record claimed after the step would sit in front of earlier
// records that expire first, and stall their reclaiming until it expired.
// Sub saturates about 292 years from the epoch, so a retention of centuries
// puts its record at the back of the heap, not in front.

// expiryHeap holds one scope's records, running and completed, as a
// min-heap by expiry: the front is the record that expires first, whatever
// retention, lease or Options.Abandon set its expiry. Each record knows its
// index, so a record whose expiry changes (renewed, completed) moves in
// place and a forgotten one leaves at once: the heaps hold exactly the
// records of the map, and never a stale entry. Each entry carries its
// record's expiry, so ordering reads the heap's own array rather than the
// records scattered over memory. It is guarded by Store.mu.
type expiryHeap []expiring

// expiring is a record in its scope's heap, with its expiry as the heap
// orders it (see Store.at).
type expiring struct {
	at int64
	r  *record
}

// minShrink is the capacity under which an expiryHeap's array is not
// shrunk: a scope's small array is kept for the records it will hold next.
const minShrink = 64

func (h *expiryHeap) push(r *record, at int64) {
	r.index = len(*h)
	*h = append(*h, expiring{at, r})
	h.up(r.index)
}

// remove takes the record at index i out of the heap. When the heap holds
// less than a quarter of its array, it moves to an array half the size, so
// a scope's array shrinks back after a peak.
func (h *expiryHeap) remove(i int) {
	q := *h
	n := len(q) - 1
	r := q[i].r
	if i != n {
		q.swap(i, n)
	}
	q[n] = expiring{}
	q = q[:n]
	if i != n {
		q.fix(i)
	}
	if c := cap(q); c > minShrink && n < c/4 {
		q = append(make(expiryHeap, 0, c/2), q...)
	}
	*h = q
	r.index = -1
}

// update sets the expiry of the record at index i to at and restores the
// order.
func (h expiryHeap) update(i int, at int64) {
	h[i].at = at
	h.fix(i)
}

func (h expiryHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h expiryHeap) less(i, j int) bool { return h[i].at < h[j].at }

func (h expiryHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].r.index, h[j].r.index = i, j
}

func (h expiryHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

// down moves the record at index i towards the leaves and reports whether
// it moved.
func (h expiryHeap) down(i int) bool {
	start, n := i, len(h)
	for {
		least := i
		if l := 2*i + 1; l < n && h.less(l, least) {
			least = l
		}
		if r := 2*i + 2; r < n && h.less(r, least) {
			least = r
		}
		if least == i {
			return i != start
		}
		h.swap(i, least)
		i = least
	}
}

// frontHeap holds the scopes that hold records, as a min-heap by the expiry
// of each scope's first record; it implements heap.Interface. Every usage
// in it holds at least one record.
type frontHeap []*usage

func (h frontHeap) Len() int           { return len(h) }
func (h frontHeap) Less(i, j int) bool { return h[i].expiry[0].at < h[j].expiry[0].at }

func (h frontHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *frontHeap) Push(x any) {
	u := x.(*usage)
	u.index = len(*h)
	*h = append(*h, u)
}

func (h *frontHeap) Pop() any {
	q := *h
	n := len(q) - 1
	u := q[n]
	q[n] = nil
	*h = q[:n]
	u.index = -1
	return u
}

// at is the expiry t as the heaps order it: the time from the store's epoch,
// saturated about 292 years away.
func (s *Store) at(t time.Time) int64 { return int64(t.Sub(s.epoch)) }

// place puts the new record r, whose expiry is set, in its scope's heap,
// and its scope in s.fronts if r is its first record.
func (s *Store) place(r *record) {
	u := r.use
	if len(u.expiry) == 0 {
		u.expiry.push(r, s.at(r.expiresAt))
		heap.Push(&s.fronts, u)
		return
	}
	front := u.expiry[0].at
	u.expiry.push(r, s.at(r.expiresAt))
	s.refront(u, front)
}

// reorder moves the record r in its scope's heap after its expiry changed.
func (s *Store) reorder(r *record) {
	u := r.use
	front := u.expiry[0].at
	u.expiry.update(r.index, s.at(r.expiresAt))
	s.refront(u, front)
}

// unplace takes the record r out of its scope's heap, and its scope out of
// s.fronts if r was its last record.
func (s *Store) unplace(r *record) {
	u := r.use
	front := u.expiry[0].at
	u.expiry.remove(r.index)
	if len(u.expiry) == 0 {
		heap.Remove(&s.fronts, u.index)
		return
	}
	s.refront(u, front)
}

// refront moves the scope u in s.fronts if the expiry of its first record
// is no longer front.
func (s *Store) refront(u *usage, front int64) {
	if u.expiry[0].at != front {
		heap.Fix(&s.fronts, u.index)
	}
}

// reclaim forgets the record of the scope u that expires first if it has
// expired, and reports whether it did. Running records whose lease lapsed
// more than Options.Abandon ago are reclaimed like expired completed ones.
func (s *Store) reclaim(u *usage, now time.Time) bool {
	if u == nil || len(u.expiry) == 0 {
		return false
	}
	r := u.expiry[0].r
	if now.Before(r.expiresAt) {
		return false
	}
	s.forget(r)
	return true
}

// reclaimFirst forgets the record of the store that expires first if it
// has expired, and reports whether it did.
func (s *Store) reclaimFirst(now time.Time) bool {
	if len(s.fronts) == 0 {
		return false
	}
	return s.reclaim(s.fronts[0], now)
}

// sweep forgets up to limit expired records, those that expired first
// first.
func (s *Store) sweep(now time.Time, limit int) {
	for range limit {
		if !s.reclaimFirst(now) {
			return
		}
	}
}
