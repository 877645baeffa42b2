package memstore

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/idemhq/idem/server"
)

// Defaults of [Options].
const (
	DefaultMaxKeys        = 100_000
	DefaultMaxBytes       = 256 << 20 // 256 MiB
	DefaultRunningReserve = 4 << 10   // 4 KiB
)

// Options configures [New]. The zero value of every field means its
// documented default.
type Options struct {
	// MaxKeys bounds how many records the store holds, running and
	// completed. Default 100,000 (about 85 MB of records with short JSON
	// answers). A record is never forgotten inside its
	// retention to make room: when the store holds MaxKeys records and
	// none has expired, Claim refuses a new key with [ErrFull].
	MaxKeys int

	// MaxBytes bounds the bytes the store's records count (see "Bounds" in
	// the package documentation for what a record counts, and the exact
	// bound). Default 256 MiB. A new key is refused with [ErrFull] if it
	// would take the count over MaxBytes, each named scope counting no more
	// than its share (ScopeMaxBytes). An outcome is stored even if its
	// response counts more than the key reserved (RunningReserve), since its
	// work has happened: [Store.Bytes] then exceeds MaxBytes by at most what
	// the stored responses count beyond RunningReserve.
	MaxBytes int64

	// ScopeMaxKeys is each scope's share of MaxKeys: a new key of a scope
	// that holds ScopeMaxKeys records is refused with [ErrScopeFull],
	// however much room the store has, so that one client cannot fill the
	// store for the others. Default a quarter of MaxKeys (at least 1): N
	// scopes take N shares, so four scopes at their shares fill the store.
	// The empty scope, which a single-tenant service uses, has no share,
	// even in a store shared with named scopes: it may fill the whole
	// store. A value of MaxKeys or more turns the share off.
	ScopeMaxKeys int

	// ScopeMaxBytes is each scope's share of MaxBytes, as ScopeMaxKeys is
	// of MaxKeys. Default a quarter of MaxBytes, but at least 64 KiB (or
	// MaxBytes, if less), so that a small store's share holds records. The
	// empty scope is not limited by it. Like MaxBytes, it is checked when a
	// key is claimed: an outcome that takes its scope over its share is
	// stored all the same, the scope's new keys are refused until it is
	// back under, and the store's bound counts no more than the share for
	// it, so the scope does not take the other scopes' room.
	ScopeMaxBytes int64

	// RunningReserve is what a running record counts for the response it
	// will store, on top of its claim, until Complete replaces it with what
	// the response counts (more or less). Default 4 KiB, which covers a
	// typical JSON answer; it is at most a sixteenth of ScopeMaxBytes and of
	// MaxBytes, so that a small store holds running keys. Bytes stored past
	// the bounds come only from responses larger than the reserve: a
	// service whose answers are larger may raise it, and then holds fewer
	// running keys per share.
	RunningReserve int64

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
// for concurrent use; one mutex guards it, held for the whole of each
// call. A call costs O(log n) for its own record and for each expired
// record it forgets: up to 64 in passing when it adds a key, and, when the
// key does not fit, those that can make room for it (see "Expiry" in the
// package documentation).
//
// Complete keeps the Response it is given without copying it, and Claim
// returns records that share it: neither the caller nor anyone reading a
// record may modify a Response's Header or Body.
type Store struct {
	maxKeys       int
	maxBytes      int64
	scopeMaxKeys  int
	scopeMaxBytes int64
	reserve       int64 // what a running record counts for its response
	abandon       time.Duration
	now           func() time.Time
	epoch         time.Time // the origin of the heaps' order (expiry.go)

	mu      sync.Mutex
	records map[server.Key]*record
	scopes  map[string]*usage // the scopes holding records
	fronts  frontHeap         // the scopes holding records, the one whose first record expires first in front
	bytes   int64             // what the records count, all scopes
	charged int64             // what MaxBytes bounds: bytes, each named scope's up to its share
	seq     uint64            // the last lease token issued
}

var (
	_ server.Store       = (*Store)(nil)
	_ server.SystemNamer = (*Store)(nil)
)

// record is one key's state. A running record has a token; a completed one
// has none.
type record struct {
	key          server.Key
	fingerprint  string
	token        string
	completed    bool
	leaseExpires time.Time
	expiresAt    time.Time // completed: forget after; running: lease lapse + abandon
	response     server.StoredResponse
	size         int64  // the bytes the record counts (see bounds.go)
	use          *usage // its scope's usage
	index        int    // its place in use.expiry
}

// New returns an empty Store.
func New(opts Options) *Store {
	s := &Store{
		maxKeys:       opts.MaxKeys,
		maxBytes:      opts.MaxBytes,
		scopeMaxKeys:  opts.ScopeMaxKeys,
		scopeMaxBytes: opts.ScopeMaxBytes,
		abandon:       opts.Abandon,
		now:           opts.Now,
	}
	if s.maxKeys <= 0 {
		s.maxKeys = DefaultMaxKeys
	}
	if s.maxBytes <= 0 {
		s.maxBytes = DefaultMaxBytes
	}
	if s.scopeMaxKeys <= 0 {
		s.scopeMaxKeys = max(s.maxKeys/4, 1)
	}
	if s.scopeMaxBytes <= 0 {
		s.scopeMaxBytes = max(s.maxBytes/4, min(s.maxBytes, minScopeMaxBytes))
	}
	s.reserve = opts.RunningReserve
	if s.reserve <= 0 {
		s.reserve = DefaultRunningReserve
	}
	s.reserve = min(s.reserve, min(s.scopeMaxBytes, s.maxBytes)/16)
	if s.abandon <= 0 {
		s.abandon = server.DefaultAbandon
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.epoch = s.now()
	s.records = make(map[server.Key]*record)
	s.scopes = make(map[string]*usage)
	return s
}

// minScopeMaxBytes is the least default ScopeMaxBytes of a store whose
// MaxBytes is at least as large.
const minScopeMaxBytes = 64 << 10

// Len returns the number of records held, expired ones not yet forgotten
// included.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.records)
}

// Bytes returns the bytes the records held count, expired ones not yet
// forgotten included. It exceeds Options.MaxBytes by at most what the
// stored responses count beyond Options.RunningReserve (see "Bounds" in
// the package documentation).
func (s *Store) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// StoreSystem returns "memory", the name observers give the store's
// system (see [server.SystemNamer]): OpenTelemetry's db.system.name has
// no value for a process's own memory.
func (s *Store) StoreSystem() string { return "memory" }

// Claim implements [server.Store.Claim]. A running record whose lease
// lapsed is taken over only by a claim with its fingerprint; it is
// forgotten Options.Abandon after the lapse. Claim returns ctx's error,
// claiming nothing, if ctx is already done, and [ErrFull] (or
// [ErrScopeFull], which wraps it) if a new key does not fit: a key the
// store already holds is always answered.
func (s *Store) Claim(ctx context.Context, k server.Key, fingerprint string, lease time.Duration) (server.Claim, error) {
	if err := ctx.Err(); err != nil {
		return server.Claim{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	r := s.records[k]
	if r != nil && !now.Before(r.expiresAt) {
		s.forget(r)
		r = nil
	}
	switch {
	case r == nil:
		cost := claimSize(k, fingerprint) + s.reserve
		u, err := s.admit(k.Scope, cost, now)
		if err != nil {
			return server.Claim{}, err
		}
		r = &record{key: k, fingerprint: fingerprint}
		s.records[k] = r
		c := s.acquire(r, now, lease, false)
		s.add(r, u, cost)
		return c, nil
	case !r.completed && r.fingerprint == fingerprint && !now.Before(r.leaseExpires):
		c := s.acquire(r, now, lease, true)
		s.reorder(r)
		return c, nil
	}
	return server.Claim{Record: server.Record{
		Fingerprint:  r.fingerprint,
		Completed:    r.completed,
		LeaseExpires: r.leaseExpires,
		Response:     r.response,
		ExpiresAt:    r.reportedExpiry(),
	}}, nil
}

// acquire gives the running record r a fresh token and lease. The caller
// puts r in its place by expiry.
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
		s.reorder(r)
	})
}

// Complete implements [server.Store.Complete]. It keeps resp without
// copying it, and stores it even if it counts more than the record
// reserved and takes its scope or the store over its bound (the work has
// happened); the scope's new keys, or the store's, are refused until the
// count is back under.
func (s *Store) Complete(ctx context.Context, k server.Key, token string, resp server.StoredResponse, retention time.Duration) error {
	return s.whileHeld(k, token, func(r *record, now time.Time) {
		r.token, r.completed, r.response = "", true, resp
		r.leaseExpires = time.Time{}
		r.expiresAt = now.Add(retention)
		s.reorder(r)
		s.count(r, responseSize(resp)-s.reserve)
	})
}

// Release implements [server.Store.Release].
func (s *Store) Release(ctx context.Context, k server.Key, token string) error {
	return s.whileHeld(k, token, func(r *record, _ time.Time) {
		s.forget(r)
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
