package pgstore

// This file holds Open: a Store on a pool of its own, for programs that
// have a DSN and no pool (an operator's command line).

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Open connects to the database dsn names and returns a Store on a
// connection pool of its own, which [Store.Close] closes. dsn is a
// PostgreSQL URL ("postgres://user@host:5432/db?sslmode=disable") or a
// keyword/value string ("host=... dbname=..."), with the pool settings
// pgxpool reads from it (pool_max_conns and others); PG* environment
// variables fill in what it leaves out. Open checks the connection with
// one round trip and fails if the database cannot be reached, or if opts
// is invalid as for [New]; it does not create the table ([Store.Migrate]
// does).
//
// Open is for programs that have a DSN and no pool, such as an operator's
// command line reading [Store.Stats] and [Store.Running] or running
// [Store.PurgeWithProgress]. A service whose handlers use the database too
// opens its pool itself and calls [New], so that the work's transaction
// and its other queries share one pool.
//
// Errors never contain the DSN's password. A cancelled or expired ctx
// returns its error wrapped.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if _, err := parseTable(opts.Table); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors quote the DSN with its password redacted.
		return nil, errors.New("pgstore: open: " + err.Error())
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, translate(ctx, "open", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, translate(ctx, "open", err)
	}
	s, err := New(pool, opts)
	if err != nil { // unreachable: opts was checked above
		pool.Close()
		return nil, err
	}
	s.ownPool = true
	return s, nil
}
