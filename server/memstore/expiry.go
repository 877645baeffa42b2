package memstore

import (
	"math"
	"time"
)

// sweepLimit bounds the expired records one new key forgets in passing,
// when the store has room, so no Claim pays for a long sweep. A new key
// that does not fit forgets as many expired records as it needs.
const sweepLimit = 64

// expiryHeap holds every record, running and completed, as a min-heap by
// expiry: the front is the record that expires first, whatever retention,
// lease or Options.Abandon set its expiry. Each record knows its index, so
// a record whose expiry changes (renewed, completed) moves in place and a
// forgotten one leaves at once: the heap holds exactly the records of the
// map, and never a stale entry. Each entry carries its record's expiry, so
// ordering reads the heap's own array rather than the records scattered
// over memory. It is guarded by Store.mu.
type expiryHeap []expiring

// expiring is a record in the heap, with the Unix nanoseconds of its
// expiresAt.
type expiring struct {
	at int64
	r  *record
}

// front returns the record that expires first, or nil.
func (h expiryHeap) front() *record {
	if len(h) == 0 {
		return nil
	}
	return h[0].r
}

func (h *expiryHeap) push(r *record) {
	r.index = len(*h)
	*h = append(*h, expiring{unixNano(r.expiresAt), r})
	h.up(r.index)
}

// remove takes the record at index i out of the heap.
func (h *expiryHeap) remove(i int) {
	q := *h
	n := len(q) - 1
	r := q[i].r
	if i != n {
		q.swap(i, n)
	}
	q[n] = expiring{}
	*h = q[:n]
	if i != n {
		h.fix(i)
	}
	r.index = -1
}

// update restores the order after the expiry of the record at index i
// changed.
func (h expiryHeap) update(i int) {
	h[i].at = unixNano(h[i].r.expiresAt)
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

// unixNano is t in Unix nanoseconds, saturated outside the years 1678 to
// 2262 (a retention of centuries), where UnixNano is undefined: a wrapped
// value would put a record that never expires in front of the heap, and
// stop every expired record behind it from being reclaimed.
func unixNano(t time.Time) int64 {
	switch sec := t.Unix(); {
	case sec >= math.MaxInt64/int64(time.Second):
		return math.MaxInt64
	case sec <= math.MinInt64/int64(time.Second):
		return math.MinInt64
	}
	return t.UnixNano()
}

// reclaim forgets the record that expires first if it has expired, and
// reports whether it did. Running records whose lease lapsed more than
// Options.Abandon ago are reclaimed like expired completed ones.
func (s *Store) reclaim(now time.Time) bool {
	r := s.expiry.front()
	if r == nil || now.Before(r.expiresAt) {
		return false
	}
	s.forget(r)
	return true
}

// sweep forgets up to limit expired records, those that expired first
// first.
func (s *Store) sweep(now time.Time, limit int) {
	for range limit {
		if !s.reclaim(now) {
			return
		}
	}
}
