package mysqlstore_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server/mysqlstore"
)

// testDSN is the DSN from IDEM_TEST_MYSQL.
var testDSN string

// TestMain skips the whole package, examples included, when
// IDEM_TEST_MYSQL is unset, unless CI=true, where a missing or unreachable
// database fails the run.
func TestMain(m *testing.M) {
	testDSN = os.Getenv("IDEM_TEST_MYSQL")
	ci := os.Getenv("CI") == "true"
	if testDSN == "" {
		if ci {
			fmt.Fprintln(os.Stderr, "mysqlstore: IDEM_TEST_MYSQL is not set and CI=true: the MySQL tests must run")
			os.Exit(1)
		}
		fmt.Println("mysqlstore: skipping the MySQL tests: set IDEM_TEST_MYSQL, e.g. root@tcp(127.0.0.1:3306)/test")
		os.Exit(0)
	}
	if err := ping(testDSN); err != nil {
		fmt.Fprintf(os.Stderr, "mysqlstore: IDEM_TEST_MYSQL is set but unreachable: %v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func ping(dsn string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.PingContext(ctx)
}

// newDB opens a pool of at most maxConns connections, closed when the test
// ends.
func newDB(t testing.TB, maxConns int) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", testDSN)
	require.NoError(t, err)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	t.Cleanup(func() { db.Close() })
	return db
}

// tableName returns a fresh random table name, so tests run in parallel and
// repeat without meeting.
func tableName() string {
	return "idem_test_" + strings.ToLower(rand.Text()[:12])
}

// newStore migrates a Store on a fresh table, dropped when the test ends.
func newStore(t testing.TB, db *sql.DB, opts mysqlstore.Options) *mysqlstore.Store {
	t.Helper()
	if opts.Table == "" {
		opts.Table = tableName()
	}
	s, err := mysqlstore.New(db, opts)
	require.NoError(t, err)
	dropTable(t, db, opts.Table)
	t.Cleanup(s.Close) // before the table is dropped: cleanups run last first
	require.NoError(t, s.Migrate(context.Background()))
	return s
}

// dropTable drops table when the test ends.
func dropTable(t testing.TB, db *sql.DB, table string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+table)
		require.NoError(t, err)
	})
}
