package pgstore

// This file holds the reserved pool: the connections kept for the
// statements that extend or end a running claim.

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultReservedConns is Options.ReservedConns' default.
const DefaultReservedConns = 2

// reserved is the Store's pool of its own, opened on first use.
type reserved struct {
	pool   atomic.Pointer[pgxpool.Pool]
	mu     sync.Mutex // guards opening and closing
	closed bool
}

// reserved returns the pool for Renew, Complete and Release: a pool of
// Options.ReservedConns connections opened from the main pool's
// configuration (its hooks and tracer included) on first use, or the main
// pool itself when ReservedConns is negative or the Store is closed.
//
// Without it, under overload those statements queue for the main pool
// behind running transactions and the application's own queries; a
// renewal that waits longer than the lease lets another worker take the
// key over, and the handler runs twice.
func (s *Store) reserved() *pgxpool.Pool {
	if p := s.res.pool.Load(); p != nil {
		return p
	}
	if s.opts.ReservedConns < 0 {
		return s.pool
	}
	s.res.mu.Lock()
	defer s.res.mu.Unlock()
	if p := s.res.pool.Load(); p != nil {
		return p
	}
	if s.res.closed {
		return s.pool
	}
	cfg := s.pool.Config()
	cfg.MaxConns = int32(DefaultReservedConns)
	if s.opts.ReservedConns > 0 {
		cfg.MaxConns = int32(min(s.opts.ReservedConns, 1<<16))
	}
	cfg.MinConns, cfg.MinIdleConns = 0, 0
	p, err := pgxpool.NewWithConfig(context.Background(), cfg) // connects on demand
	if err != nil {
		return s.pool // only for a configuration the main pool would not have accepted
	}
	s.res.pool.Store(p)
	return p
}

// Close waits for the background rollbacks of claims that acquired
// nothing (see [Store.ClaimWork]) to put their connections back in the
// pool, and closes the connections the Store opened itself (the reserved
// pool of Options.ReservedConns, and the pool of a Store from [Open]),
// waiting for statements using them to finish. It does not close the pool
// given to New, which the caller closes after the Store's last use. A
// Store from New used after Close runs those statements on the main pool;
// a Store from Open fails every call after Close. Close is safe to call
// more than once and from several goroutines.
func (s *Store) Close() {
	s.ending.Wait()
	s.res.mu.Lock()
	defer s.res.mu.Unlock()
	s.res.closed = true
	if p := s.res.pool.Swap(nil); p != nil {
		p.Close()
	}
	if s.ownPool {
		s.pool.Close() // pgxpool's Close is idempotent
	}
}
