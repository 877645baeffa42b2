package memstore

import (
	"time"

	"github.com/idemhq/idem/server"
)

// makeRoom runs before a new key is added, with s.mu held. Every
// sweepEvery new keys it sweeps expired records; when the store is full it
// evicts until there is room, or returns ErrFull if every record is
// running.
func (s *Store) makeRoom(now time.Time) error {
	if s.untilScan--; s.untilScan <= 0 {
		s.untilScan = sweepEvery
		s.sweep(now)
	}
	for len(s.records) >= s.maxKeys {
		if s.running >= len(s.records) {
			return ErrFull
		}
		s.evict(now)
	}
	return nil
}

// sweep forgets the expired records among samples of sweepSample records,
// each from a random place in the map (Go randomises where iteration
// starts). Like Redis's active expiry, it samples again while a quarter or
// more of a sample had expired, up to 16 samples, so the cost per new key
// stays small and expired records stay a minority.
func (s *Store) sweep(now time.Time) {
	for range 16 {
		seen, expired := 0, 0
		for k, r := range s.records {
			if !now.Before(r.expiresAt) {
				s.forget(k, r)
				expired++
			}
			if seen++; seen == sweepSample {
				break
			}
		}
		if expired*4 < sweepSample {
			return
		}
	}
}

// evict forgets the expired records among a sample or, if there are none,
// the sampled completed record that expires soonest. The sample grows
// until it holds one of either; the caller has checked that a completed
// record exists.
func (s *Store) evict(now time.Time) {
	var victimKey server.Key
	var victim *record
	seen, freed := 0, false
	for k, r := range s.records {
		switch {
		case !now.Before(r.expiresAt):
			s.forget(k, r)
			freed = true
		case r.completed && (victim == nil || r.expiresAt.Before(victim.expiresAt)):
			victimKey, victim = k, r
		}
		if seen++; seen >= sweepSample && (freed || victim != nil) {
			break
		}
	}
	if !freed && victim != nil {
		s.forget(victimKey, victim)
	}
}
