package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
	"github.com/idemhq/idem/server/storetest"
)

// The tests in this file run through PgBouncer in transaction pooling
// (scripts/pgbouncer.sh), in front of the test database: the DSN in
// IDEM_TEST_PGBOUNCER, given to pgx as it is, so with pgx's default
// default_query_exec_mode, cache_statement, which prepares statements.

// bouncerPool opens a pool of at most maxConns connections through the
// PgBouncer of IDEM_TEST_PGBOUNCER, closed when the test ends; it skips
// the test when the variable is unset.
func bouncerPool(t *testing.T, maxConns int32) *pgxpool.Pool {
	t.Helper()
	dsn := os.Getenv("IDEM_TEST_PGBOUNCER")
	if dsn == "" {
		t.Skip("set IDEM_TEST_PGBOUNCER to the DSN scripts/pgbouncer.sh start prints, e.g. postgres://postgres@127.0.0.1:6432/test?sslmode=disable")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	cfg.MaxConns = maxConns
	return newPool(t, cfg)
}

// TestPgBouncerConformance runs the conformance suite on stores whose
// pool goes through PgBouncer in transaction pooling.
func TestPgBouncerConformance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts pgstore.Options
	}{
		{"default", pgstore.Options{}},
		{"transactional", pgstore.Options{Transactional: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) server.Store {
				return newStore(t, bouncerPool(t, 20), tc.opts)
			})
		})
	}
}

// bouncerService is the payment API of the race test with its store on a
// pool through PgBouncer; the test's own reads of the charges and the
// records go to the database directly.
func bouncerService(t *testing.T, naive, pipelined bool) *service {
	t.Helper()
	svc := &service{pool: newPool(t, poolConfig(t, 4)), table: tableName()}
	s, err := pgstore.New(bouncerPool(t, 20), pgstore.Options{Table: svc.table, Transactional: true, PipelineClaim: pipelined})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	if naive {
		s.SkipPoolerCheck()
	}
	_, err = svc.pool.Exec(context.Background(), mustSchema(t, svc.table))
	require.NoError(t, err)
	dropTable(t, svc.pool, svc.table)
	svc.store = s
	svc.charges = newCharges(t, svc.pool)
	svc.client = &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: raceRequests},
		Timeout:   30 * time.Second,
	}
	t.Cleanup(svc.client.CloseIdleConnections)
	return svc
}

// mustSchema returns pgstore.Schema(table).
func mustSchema(t *testing.T, table string) string {
	t.Helper()
	ddl, err := pgstore.Schema(table)
	require.NoError(t, err)
	return ddl
}

// TestPgBouncerRaceOneCharge is TestRaceOneCharge through PgBouncer in
// transaction pooling: 100 identical requests at once, 20 times, each key
// charged exactly once, and every answer 201 or 409, with the claim made
// before the handler runs and pipelined with its charge
// (Options.PipelineClaim, whose batches of a claim and a statement go
// through the pooler as one transaction's). The naive variant
// runs the store on the given pool as pgstore did before it checked for a
// pooler: pgx's prepared statements meet other clients' server
// connections, and requests are refused (503) for SQLSTATE 26000 and
// 42P05.
func TestPgBouncerRaceOneCharge(t *testing.T) {
	t.Parallel()
	charge := func(svc *service) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if err := svc.chargeTx(r, 1000); err != nil {
				http.Error(w, "charge failed", http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusCreated)
		}
	}
	for name, pipelined := range map[string]bool{"pgstore, claim first": false, "pgstore, claim pipelined": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			svc := bouncerService(t, false, pipelined)
			svc.serveIdem(t, nil, server.Options{}, charge(svc))
			oneChargeEachRound(t, svc, "bouncer")
		})
	}
	t.Run("naive: the pool's prepared statements", func(t *testing.T) {
		t.Parallel()
		svc := bouncerService(t, true, false)
		svc.serveIdem(t, nil, server.Options{}, charge(svc))
		refused, answers := 0, 0
		for round := 0; round < raceRounds && refused == 0; round++ {
			for _, rep := range stampede(t, svc, fmt.Sprintf("naive-bouncer-%d", round)) {
				answers++
				if rep.status == http.StatusServiceUnavailable {
					refused++
				}
			}
		}
		t.Logf("naive: %d of %d answers 503", refused, answers)
		assert.Positive(t, refused, "no request failed through PgBouncer with prepared statements: the test does not reach a transaction pooler")
	})
}

// TestPgBouncerPoolOfItsOwn: behind PgBouncer, with the pool's default
// cache_statement mode, the Store runs on a pool of its own in
// cache_describe mode, and Findings says so; with
// default_query_exec_mode=cache_describe in the DSN, it runs on the given
// pool and Findings is silent about the pooler. A direct connection
// (the test database) keeps the given pool.
func TestPgBouncerPoolOfItsOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct := newPool(t, poolConfig(t, 2))
	for _, tc := range []struct {
		name  string
		pool  *pgxpool.Pool
		own   bool
		finds bool
	}{
		{"through PgBouncer, cache_statement", bouncerPool(t, 4), true, true},
		{"direct", direct, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, tc.pool, pgstore.Options{Transactional: true})
			via, err := s.Via(ctx)
			require.NoError(t, err)
			if tc.own {
				require.NotSame(t, tc.pool, via, "the Store runs on a pool of its own")
				require.Equal(t, pgx.QueryExecModeCacheDescribe, via.Config().ConnConfig.DefaultQueryExecMode)
			} else {
				require.Same(t, tc.pool, via, "the Store runs on the given pool")
			}
			fs, err := s.Findings(ctx)
			require.NoError(t, err)
			found := false
			for _, f := range fs {
				if errors.Is(f, pgstore.ErrPooler) {
					found = true
					require.Equal(t, pgstore.Warning, f.Severity)
					require.Contains(t, f.Fix, "default_query_exec_mode=cache_describe")
				}
			}
			require.Equal(t, tc.finds, found, "an ErrPooler finding: %v", fs)
		})
	}
	t.Run("through PgBouncer, cache_describe in the DSN", func(t *testing.T) {
		pool := bouncerPool(t, 4)
		cfg := pool.Config()
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
		pool = newPool(t, cfg)
		s := newStore(t, pool, pgstore.Options{Transactional: true})
		via, err := s.Via(ctx)
		require.NoError(t, err)
		require.Same(t, pool, via)
		fs, err := s.Findings(ctx)
		require.NoError(t, err)
		for _, f := range fs {
			require.NotErrorIs(t, f, pgstore.ErrPooler)
		}
	})
}
