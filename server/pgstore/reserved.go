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
	pool atomic.Pointer[pgxpool.Pool]
	mu   sync.Mutex // guards opening and closing
}

// reserved returns the pool for Renew, Complete and Release, and a
// function to call once the statement run on it is done: a pool of
// Options.ReservedConns connections opened from the configuration of the
// pool the Store runs on (see conns: its hooks and tracer included) on
// first use, or that pool itself when ReservedConns is negative or Close
// has begun. It fails only when conns does. Close
// waits for the statements on the reserved pool before it closes it, so
// that none meets a closed pool.
//
// Without it, under overload those statements queue for the main pool
// behind running transactions and the application's own queries; a
// renewal that waits longer than the lease lets another worker take the
// key over, and the handler runs twice.
func (s *Store) reserved(ctx context.Context) (*pgxpool.Pool, func(), error) {
	base, err := s.conns(ctx)
	if err != nil {
		return nil, nil, err
	}
	if s.opts.ReservedConns < 0 || !s.uses.enter() {
		return base, func() {}, nil
	}
	if p := s.res.pool.Load(); p != nil {
		return p, s.uses.leave, nil
	}
	s.res.mu.Lock()
	defer s.res.mu.Unlock()
	if p := s.res.pool.Load(); p != nil {
		return p, s.uses.leave, nil
	}
	cfg := base.Config()
	cfg.MaxConns = int32(DefaultReservedConns)
	if s.opts.ReservedConns > 0 {
		cfg.MaxConns = int32(min(s.opts.ReservedConns, 1<<16))
	}
	cfg.MinConns, cfg.MinIdleConns = 0, 0
	p, err := pgxpool.NewWithConfig(context.Background(), cfg) // connects on demand
	if err != nil {
		return base, s.uses.leave, nil // only for a configuration the main pool would not have accepted
	}
	s.res.pool.Store(p)
	return p, s.uses.leave, nil
}
