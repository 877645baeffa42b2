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

// completion is a completed record in the order of completions. The entry
// is stale once r is forgotten.
type completion struct {
	key server.Key
	r   *record
}

// completions is a FIFO of completed records, oldest first: the order in
// which they expire when retention is uniform, as it is under one
// middleware. It is guarded by Store.mu.
type completions struct {
	items []completion
	head  int
}

func (q *completions) push(c completion) { q.items = append(q.items, c) }

func (q *completions) len() int { return len(q.items) - q.head }

func (q *completions) front() (completion, bool) {
	if q.head == len(q.items) {
		return completion{}, false
	}
	return q.items[q.head], true
}

func (q *completions) pop() {
	q.items[q.head] = completion{}
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	} else if q.head >= 1024 && q.head*2 >= len(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
}

// makeRoom runs before a new key is added, with s.mu held. It forgets
// expired completed records from the front of the completions, a few at a
// time; when the store is still full it evicts the oldest completed record
// or, if none is left, abandoned running records from a sample; failing
// that it returns ErrFull.
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

// sweep forgets up to sweepLimit completed records, oldest first, that
// have expired, dropping stale entries on the way. If stale entries make
// up over half of a queue longer than twice MaxKeys (retention varies a
// lot), it compacts the queue.
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
		for _, c := range s.completed.items[s.completed.head:] {
			if !c.r.forgotten {
				kept = append(kept, c)
			}
		}
		clear(s.completed.items[len(kept):])
		s.completed.items, s.completed.head = kept, 0
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
