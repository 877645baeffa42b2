package memstore

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/idemhq/idem/server"
)

// Defaults of [Options].
const (
	DefaultMaxKeys = 100_000
	DefaultAbandon = 24 * time.Hour
)

// ErrFull is returned by [Store.Claim] when the store holds MaxKeys records
// and every one of them is running, so none can be forgotten to make room.
// The middleware answers it 503 with Retry-After.
var ErrFull = errors.New("idem/memstore: store full of running keys")

// Options configures [New]. The zero value means the defaults.
type Options struct {
	// MaxKeys bounds how many records the store holds, running and
	// completed. Default 100,000 (about 40 MB with 200-byte responses).
	// When it is full, Claim on a new key first forgets expired records,
	// then the completed record that expires first (the oldest, under one
	// retention): a forgotten key runs again if it is retried. With every record running, Claim returns ErrFull.
	MaxKeys int

	// Abandon is how long a running record whose lease lapsed (its worker
	// died) is kept after the lapse, so a retry with the same fingerprint
	// takes it over and one with another fingerprint is refused, before
	// the key is forgotten. Default 24 h.
	Abandon time.Duration

	// Now is the clock. Default time.Now; tests inject their own.
	Now func() time.Time
}

// Store is a bounded, expiring, in-memory [server.Store] for tests and
// single-process services. Records live as long as the process. It is safe
// for concurrent use; one mutex guards it, held only for map operations.
//
// Complete keeps the Response it is given without copying it, and Claim
// returns records that share it: neither the caller nor anyone reading a
// record may modify a Response's Header or Body.
type Store struct {
	maxKeys int
	abandon time.Duration
	now     func() time.Time

	mu        sync.Mutex
	records   map[server.Key]*record
	completed completions
	seq       uint64 // the last lease token issued
}

var _ server.Store = (*Store)(nil)

// record is one key's state. A running record has a token; a completed one
// has none.
type record struct {
	fingerprint  string
	token        string
	completed    bool
	forgotten    bool // deleted from the map; its queue entry is stale
	leaseExpires time.Time
	expiresAt    time.Time // completed: forget after; running: lease lapse + abandon
	response     server.Response
}

// New returns an empty Store.
func New(opts Options) *Store {
	s := &Store{maxKeys: opts.MaxKeys, abandon: opts.Abandon, now: opts.Now}
	if s.maxKeys <= 0 {
		s.maxKeys = DefaultMaxKeys
	}
	if s.abandon <= 0 {
		s.abandon = DefaultAbandon
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.records = make(map[server.Key]*record)
	return s
}

// Len returns the number of records held, expired ones not yet forgotten
// included.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.records)
}

// Claim implements [server.Store.Claim]. A running record whose lease
// lapsed is taken over only by a claim with its fingerprint; it is
// forgotten Options.Abandon after the lapse. Claim returns ctx's error,
// claiming nothing, if ctx is already done, and ErrFull if there is no
// room for a new key.
func (s *Store) Claim(ctx context.Context, k server.Key, fingerprint string, lease time.Duration) (server.Claim, error) {
	if err := ctx.Err(); err != nil {
		return server.Claim{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	r := s.records[k]
	if r != nil && !now.Before(r.expiresAt) {
		s.forget(k, r)
		r = nil
	}
	switch {
	case r == nil:
		if err := s.makeRoom(now); err != nil {
			return server.Claim{}, err
		}
		r = &record{fingerprint: fingerprint}
		s.records[k] = r
		return s.acquire(r, now, lease, false), nil
	case !r.completed && r.fingerprint == fingerprint && !now.Before(r.leaseExpires):
		return s.acquire(r, now, lease, true), nil
	}
	return server.Claim{Record: server.Record{
		Fingerprint:  r.fingerprint,
		Completed:    r.completed,
		LeaseExpires: r.leaseExpires,
		Response:     r.response,
		ExpiresAt:    r.reportedExpiry(),
	}}, nil
}

// acquire gives the running record r a fresh token and lease.
func (s *Store) acquire(r *record, now time.Time, lease time.Duration, takenOver bool) server.Claim {
	s.seq++
	r.token = strconv.FormatUint(s.seq, 36)
	s.extend(r, now, lease)
	return server.Claim{Acquired: true, Token: r.token, TakenOver: takenOver}
}

func (s *Store) extend(r *record, now time.Time, lease time.Duration) {
	r.leaseExpires = now.Add(lease)
	r.expiresAt = r.leaseExpires.Add(s.abandon)
}

// reportedExpiry is the record's ExpiresAt as server.Record documents it:
// the lease expiry while running.
func (r *record) reportedExpiry() time.Time {
	if r.completed {
		return r.expiresAt
	}
	return r.leaseExpires
}

// Renew implements [server.Store.Renew]. A lapsed lease that was not taken
// over is still held, and is renewed.
func (s *Store) Renew(ctx context.Context, k server.Key, token string, lease time.Duration) error {
	return s.whileHeld(k, token, func(r *record, now time.Time) {
		s.extend(r, now, lease)
	})
}

// Complete implements [server.Store.Complete]. It keeps resp without
// copying it.
func (s *Store) Complete(ctx context.Context, k server.Key, token string, resp server.Response, retention time.Duration) error {
	return s.whileHeld(k, token, func(r *record, now time.Time) {
		r.token, r.completed, r.response = "", true, resp
		r.leaseExpires = time.Time{}
		r.expiresAt = now.Add(retention)
		s.completed.push(completion{k, r})
	})
}

// Release implements [server.Store.Release].
func (s *Store) Release(ctx context.Context, k server.Key, token string) error {
	return s.whileHeld(k, token, func(r *record, _ time.Time) {
		s.forget(k, r)
	})
}

// whileHeld runs f with s.mu held if k's record is running under token
// and not yet forgotten, and returns ErrLeaseLost otherwise.
func (s *Store) whileHeld(k server.Key, token string, f func(r *record, now time.Time)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	r := s.records[k]
	if r == nil || r.completed || r.token != token || token == "" || !now.Before(r.expiresAt) {
		return server.ErrLeaseLost
	}
	f(r, now)
	return nil
}

// forget deletes k's record r. A completed record's entry in s.completed
// goes stale and is dropped when the queue reaches it.
func (s *Store) forget(k server.Key, r *record) {
	delete(s.records, k)
	r.forgotten = true
}
