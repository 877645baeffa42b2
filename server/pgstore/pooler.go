package pgstore

// This file holds the choice of the pool the Store's statements run on:
// the pool given to New, or, when its connections go through a connection
// pooler and it prepares statements, a pool of the Store's own that does
// not.

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pooledExecMode is the query execution mode of the pool a Store opens
// for itself when the given pool's connections go through a pooler: each
// statement is parsed as the unnamed statement and run in the same round
// trip (its description is cached per connection, so it stays one round
// trip), which a pooler in transaction mode cannot separate from its
// execution. pgx's default, QueryExecModeCacheStatement, prepares named
// statements once per connection and runs them later; through PgBouncer
// in transaction mode a later transaction may reach another server, where
// the statement does not exist (SQLSTATE 26000), or a server where another
// client prepared the same name (42P05).
const pooledExecMode = pgx.QueryExecModeCacheDescribe

// poolerSafe reports whether a pool in mode runs every statement in a way
// a pooler in transaction mode keeps together: its statements are not
// prepared in one round trip and run in a later one.
func poolerSafe(mode pgx.QueryExecMode) bool {
	switch mode {
	case pgx.QueryExecModeCacheStatement, pgx.QueryExecModeDescribeExec:
		return false
	}
	return true
}

// via is the Store's choice of pool, made once, on first use.
type via struct {
	// pool is the pool the Store's statements run on, once chosen.
	pool atomic.Pointer[pgxpool.Pool]
	// sem, a semaphore of one, admits one chooser at a time.
	sem chan struct{}
	// own is the pool the Store opened for itself, or nil; Close closes
	// it. Written under sem before pool is stored.
	own *pgxpool.Pool
}

// conns returns the pool the Store's statements, and the work's
// transactions, run on. A pool whose mode is safe behind a pooler (see
// poolerSafe) is used as it is, chosen by New. Otherwise the first call
// asks the database, in one round trip on one of the pool's connections,
// whether that connection reaches PostgreSQL directly: the backend's
// process ID (pg_backend_pid) is the one the connection announced when it
// was opened. Through a pooler such as PgBouncer it is not: the pooler
// announces an ID of its own. Then the Store opens a pool of its own from
// the given pool's configuration (its size, hooks and tracer included),
// in pooledExecMode, and runs everything on it from then on. A failed
// check (ctx done, the database unreachable) is returned, and the next
// call checks again.
func (s *Store) conns(ctx context.Context) (*pgxpool.Pool, error) {
	if p := s.via.pool.Load(); p != nil {
		return p, nil
	}
	select {
	case s.via.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, translate(ctx, "pooler check", ctx.Err())
	}
	defer func() { <-s.via.sem }()
	if p := s.via.pool.Load(); p != nil {
		return p, nil
	}
	pooled, err := behindPooler(ctx, s.pool)
	if err != nil {
		return nil, translate(ctx, "pooler check", err)
	}
	if !pooled {
		s.via.pool.Store(s.pool)
		return s.pool, nil
	}
	cfg := s.pool.Config()
	cfg.ConnConfig.DefaultQueryExecMode = pooledExecMode
	own, err := pgxpool.NewWithConfig(context.Background(), cfg) // connects on demand, as configured
	if err != nil {
		return nil, translate(ctx, "pooler check", err)
	}
	s.via.own = own
	s.via.pool.Store(own)
	return own, nil
}

// behindPooler reports whether a connection of pool reaches PostgreSQL
// through a pooler: the backend's process ID differs from the one the
// connection announced. The query goes through pgconn's simple protocol,
// which prepares nothing and passes no tracer.
func behindPooler(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release()
	pid, err := backendPID(ctx, conn.Conn())
	if err != nil {
		return false, err
	}
	return pid != conn.Conn().PgConn().PID(), nil
}

// backendPID returns pg_backend_pid() of the server behind c.
func backendPID(ctx context.Context, c *pgx.Conn) (uint32, error) {
	res, err := c.PgConn().Exec(ctx, "SELECT pg_backend_pid()").ReadAll()
	if err != nil {
		return 0, err
	}
	if len(res) != 1 || len(res[0].Rows) != 1 || len(res[0].Rows[0]) != 1 {
		return 0, errors.New("pg_backend_pid() returned no value")
	}
	pid, err := strconv.ParseUint(string(res[0].Rows[0][0]), 10, 32)
	if err != nil {
		return 0, errors.New("pg_backend_pid() returned " + strconv.Quote(string(res[0].Rows[0][0])))
	}
	return uint32(pid), nil
}

// closeOwn closes the pool the Store opened for itself, if any, once no
// choice is under way. pgxpool's Close waits for the connections in use
// (a running work's transaction) to come back.
func (s *Store) closeOwn() {
	s.via.sem <- struct{}{}
	defer func() { <-s.via.sem }()
	if s.via.own != nil {
		s.via.own.Close()
	}
}
