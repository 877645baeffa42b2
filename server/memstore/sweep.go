package memstore

import (
	"time"

	"github.com/idemhq/idem/server"
)

// sweepLimit bounds the records one new key forgets in passing, so no
// Claim pays for a long sweep; sampleSize is how many records a store full
// of running keys looks at for abandoned ones.
const (
	sweepLimit = 64
	sampleSize = 64
)

// completion is a completed record in the queue of completions. The entry
// is stale once r is forgotten.
type completion struct {
	key server.Key
	r   *record
}

// completions is a min-heap of completed records by expiry, so the front
// is the record that expires first, whatever retention each record was
// completed with. A completed record's expiry never changes. It is
// guarded by Store.mu.
type completions struct {
	items []completion
}

func (q *completions) len() int { return len(q.items) }

func (q *completions) less(i, j int) bool {
	return q.items[i].r.expiresAt.Before(q.items[j].r.expiresAt)
}

func (q *completions) push(c completion) {
	q.items = append(q.items, c)
	q.up(len(q.items) - 1)
}

func (q *completions) front() (completion, bool) {
	if len(q.items) == 0 {
		return completion{}, false
	}
	return q.items[0], true
}

func (q *completions) pop() {
	n := len(q.items) - 1
	q.items[0] = q.items[n]
	q.items[n] = completion{}
	q.items = q.items[:n]
	q.down(0)
}

func (q *completions) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			return
		}
		q.items[i], q.items[parent] = q.items[parent], q.items[i]
		i = parent
	}
}

func (q *completions) down(i int) {
	n := len(q.items)
	for {
		least := i
		if l := 2*i + 1; l < n && q.less(l, least) {
			least = l
		}
		if r := 2*i + 2; r < n && q.less(r, least) {
			least = r
		}
		if least == i {
			return
		}
		q.items[i], q.items[least] = q.items[least], q.items[i]
		i = least
	}
}

// init restores the heap order after items was rewritten.
func (q *completions) init() {
	for i := len(q.items)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

// makeRoom runs before a new key is added, with s.mu held. It forgets
// expired completed records, soonest expired first, a few at a time; when
// the store is still full it evicts the completed record that expires
// first or, if none is left, abandoned running records from a sample;
// failing that it returns ErrFull.
func (s *Store) makeRoom(now time.Time) error {
	s.sweep(now)
	if len(s.records) < s.maxKeys {
		return nil
	}
	for {
		c, ok := s.completed.front()
		if !ok {
			break
		}
		s.completed.pop()
		if !c.r.forgotten {
			s.forget(c.key, c.r)
			return nil
		}
	}
	s.sweepAbandoned(now)
	if len(s.records) < s.maxKeys {
		return nil
	}
	return ErrFull
}

// sweep forgets up to sweepLimit completed records that have expired,
// soonest expired first, dropping stale entries on the way. If the queue
// grows past twice MaxKeys with stale entries (records forgotten by other
// paths), it compacts it.
func (s *Store) sweep(now time.Time) {
	for range sweepLimit {
		c, ok := s.completed.front()
		if !ok {
			return
		}
		live := !c.r.forgotten
		if live && now.Before(c.r.expiresAt) {
			break
		}
		s.completed.pop()
		if live {
			s.forget(c.key, c.r)
		}
	}
	if s.completed.len() > 2*s.maxKeys {
		kept := s.completed.items[:0]
		for _, c := range s.completed.items {
			if !c.r.forgotten {
				kept = append(kept, c)
			}
		}
		clear(s.completed.items[len(kept):])
		s.completed.items = kept
		s.completed.init()
	}
}

// sweepAbandoned forgets expired records among a sample of sampleSize from
// a random place in the map (Go randomises where iteration starts): running
// records abandoned past Options.Abandon, and completed ones the queue has
// not reached.
func (s *Store) sweepAbandoned(now time.Time) {
	seen := 0
	for k, r := range s.records {
		if !now.Before(r.expiresAt) {
			s.forget(k, r)
		}
		if seen++; seen == sampleSize {
			return
		}
	}
}
