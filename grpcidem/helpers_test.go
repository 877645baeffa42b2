package grpcidem_test

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/status"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/scenario"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
	"github.com/idemhq/idem/server/pgstore"
)

// pgLedger writes each effect as a row in the store's transaction
// (pgstore.Tx): it commits together with the recorded outcome, or not at
// all.
type pgLedger struct {
	pool  *pgxpool.Pool
	table string
}

func (l *pgLedger) Add(ctx context.Context, req *testpb.ChargeRequest) error {
	tx, ok := pgstore.Tx(ctx)
	if !ok {
		return status.Error(13, "no transaction")
	}
	_, err := tx.Exec(ctx, "INSERT INTO "+l.table+" (customer) VALUES ($1)", req.GetCustomer())
	return err
}

func (l *pgLedger) Count(t testing.TB, customer string) int {
	var n int
	err := l.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+l.table+" WHERE $1 = '' OR customer = $1", customer).Scan(&n)
	require.NoError(t, err)
	return n
}

// backend is a store with the ledger that goes with it.
type backend struct {
	name   string
	store  server.Store
	ledger scenario.Ledger
}

// backends returns the stores the store-wide tests run on: memstore
// always; pgstore in lease and transactional mode with IDEM_TEST_DATABASE
// (required when CI=true).
func backends(t *testing.T) []func(t *testing.T) backend {
	out := []func(t *testing.T) backend{func(*testing.T) backend {
		return backend{"memstore", memstore.New(memstore.Options{}), &scenario.MemLedger{}}
	}}
	if dsn := os.Getenv("IDEM_TEST_DATABASE"); dsn != "" {
		out = append(out,
			func(t *testing.T) backend {
				return backend{"pgstore", newPgStore(t, dsn, false), &scenario.MemLedger{}}
			},
			func(t *testing.T) backend {
				st := newPgStore(t, dsn, true)
				pool := pgPool(t, dsn)
				table := tableName()
				_, err := pool.Exec(context.Background(), "CREATE TABLE "+table+" (customer text NOT NULL)")
				require.NoError(t, err)
				dropTable(t, pool, table)
				return backend{"pgstore-tx", st, &pgLedger{pool, table}}
			})
	} else if os.Getenv("CI") == "true" {
		t.Fatal("IDEM_TEST_DATABASE is not set and CI=true: the PostgreSQL tests must run")
	}
	return out
}

func pgPool(t *testing.T, dsn string) *pgxpool.Pool {
	cfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func newPgStore(t *testing.T, dsn string, transactional bool) *pgstore.Store {
	pool := pgPool(t, dsn)
	table := tableName()
	s, err := pgstore.New(pool, pgstore.Options{Table: table, Transactional: transactional})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	require.NoError(t, s.Migrate(context.Background()))
	dropTable(t, pool, table)
	return s
}

func tableName() string { return "grpcidem_test_" + strings.ToLower(rand.Text()[:12]) }

func dropTable(t *testing.T, pool *pgxpool.Pool, table string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := pool.Exec(ctx, "DROP TABLE IF EXISTS "+table)
		require.NoError(t, err)
	})
}

// The scenario's helpers, under the names the tests use.
var (
	serve   = scenario.Serve
	dial    = scenario.Dial
	withKey = scenario.WithKey
	call    = scenario.Call
	charge  = scenario.Charge
)

// singleTenant is the server options of most tests.
var singleTenant = grpcidem.ServerOptions{SingleTenant: true}

// openJournal opens a journal in the test's directory, closed when the
// test ends.
func openJournal(t testing.TB) *idem.Journal {
	t.Helper()
	j, err := idem.OpenJournal(filepath.Join(t.TempDir(), "j"), idem.JournalOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	return j
}
