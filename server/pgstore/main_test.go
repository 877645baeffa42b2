package pgstore_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server/pgstore"
)

// testDatabase is the DSN from IDEM_TEST_DATABASE.
var testDatabase string

// TestMain skips the whole package, examples included, when
// IDEM_TEST_DATABASE is unset, unless CI=true, where a missing or
// unreachable database fails the run.
func TestMain(m *testing.M) {
	testDatabase = os.Getenv("IDEM_TEST_DATABASE")
	ci := os.Getenv("CI") == "true"
	if testDatabase == "" {
		if ci {
			fmt.Fprintln(os.Stderr, "pgstore: IDEM_TEST_DATABASE is not set and CI=true: the PostgreSQL tests must run")
			os.Exit(1)
		}
		fmt.Println("pgstore: skipping the PostgreSQL tests: set IDEM_TEST_DATABASE, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
		os.Exit(0)
	}
	if err := ping(testDatabase); err != nil {
		fmt.Fprintf(os.Stderr, "pgstore: IDEM_TEST_DATABASE is set but unreachable: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	stopCluster()
	os.Exit(code)
}

func ping(dsn string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}

// poolConfig parses the test database's DSN for a pool of at most maxConns
// connections.
func poolConfig(t testing.TB, maxConns int32) *pgxpool.Config {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testDatabase)
	require.NoError(t, err)
	cfg.MaxConns = maxConns
	return cfg
}

// newPool opens a pool closed when the test ends.
func newPool(t testing.TB, cfg *pgxpool.Config) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// tableName returns a fresh random table name, so tests run in parallel and
// repeat without meeting.
func tableName() string {
	return "idem_test_" + strings.ToLower(rand.Text()[:12])
}

// newStore migrates a Store on a fresh table, dropped when the test ends.
func newStore(t testing.TB, pool *pgxpool.Pool, opts pgstore.Options) *pgstore.Store {
	t.Helper()
	if opts.Table == "" {
		opts.Table = tableName()
	}
	s, err := pgstore.New(pool, opts)
	require.NoError(t, err)
	t.Cleanup(s.Close) // before the pool closes: cleanups run last first
	require.NoError(t, s.Migrate(context.Background()))
	dropTable(t, pool, opts.Table)
	return s
}

// dropTable drops table when the test ends.
func dropTable(t testing.TB, pool *pgxpool.Pool, table string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := pool.Exec(ctx, "DROP TABLE IF EXISTS "+table)
		require.NoError(t, err)
	})
}

// dropNow drops table on a connection of its own, for the examples that
// cannot use t.Cleanup.
func dropNow(table string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testDatabase)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP TABLE IF EXISTS "+table)
}

// newTestStore is newStore on a small pool of its own.
func newTestStore(t testing.TB, opts pgstore.Options) (*pgstore.Store, *pgxpool.Pool) {
	t.Helper()
	pool := newPool(t, poolConfig(t, 8))
	return newStore(t, pool, opts), pool
}
