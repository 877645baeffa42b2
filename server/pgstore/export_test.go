package pgstore

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Settle waits for the background rollbacks of claims that acquired
// nothing, so that a test sees every connection back in the pool.
func (s *Store) Settle() { s.uses.wait(false) }

// LockKey returns the SQL expression of the advisory lock key ClaimWork
// takes for ($1 scope, $2 key) in the Store's table.
func (s *Store) LockKey() string { return strings.ReplaceAll(lockKey, "{{table}}", s.name.quoted) }

// Pool returns the pool given to New.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Table returns the quoted name of the Store's table.
func (s *Store) Table() string { return s.name.quoted }

// ErrTxBusy is the error of a statement of the work's transaction sent
// while another holds it.
var ErrTxBusy = errTxBusy

// Via returns the pool the Store's statements and the work's transactions
// run on, choosing it first if need be.
func (s *Store) Via(ctx context.Context) (*pgxpool.Pool, error) { return s.conns(ctx) }

// SkipPoolerCheck makes the Store run on the pool given to New whatever
// is between it and PostgreSQL, as pgstore did before it looked: the
// naive variant of the tests through a pooler.
func (s *Store) SkipPoolerCheck() { s.via.pool.Store(s.pool) }
