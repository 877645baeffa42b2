package webhook_test

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server/pgstore"
	"github.com/idemhq/idem/webhook"
)

// TestHandlerPgstore: with pgstore in transactional mode the effect's row
// and the record of its webhook-id commit together. A handler that fails
// after writing its row leaves no row (the retry writes it once), and
// every repeat after the commit is replayed: one row per message. The
// naive handler in the same test, which writes through the pool, outside
// idem's transaction, keeps the failed attempt's row as well.
func TestHandlerPgstore(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("IDEM_TEST_DATABASE")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("IDEM_TEST_DATABASE is not set and CI=true: the PostgreSQL tests must run")
		}
		t.Skip("set IDEM_TEST_DATABASE, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	suffix := strings.ToLower(rand.Text()[:10])
	keys, rows := "webhook_test_keys_"+suffix, "webhook_test_rows_"+suffix
	store, err := pgstore.New(pool, pgstore.Options{Table: keys, Transactional: true})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	require.NoError(t, store.Migrate(ctx))
	_, err = pool.Exec(ctx, "CREATE TABLE "+rows+" (naive boolean NOT NULL, webhook_id text NOT NULL)")
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, tbl := range []string{keys, rows} {
			_, _ = pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{tbl}.Sanitize())
		}
	})

	for _, naive := range []bool{false, true} {
		var calls atomic.Int64
		fn := func(ctx context.Context, m webhook.Message) error {
			q := "INSERT INTO " + rows + " (naive, webhook_id) VALUES ($1, $2)"
			var err error
			if naive {
				_, err = pool.Exec(ctx, q, naive, m.ID)
			} else {
				tx, ok := pgstore.Tx(ctx)
				require.True(t, ok)
				_, err = tx.Exec(ctx, q, naive, m.ID)
			}
			if err != nil {
				return err
			}
			if calls.Add(1) == 1 {
				return errors.New("the mail server refused the receipt") // after the row was written
			}
			return nil
		}
		s := newReceiver(t, store, newClock(), fn, webhook.Options{Scope: map[bool]string{false: "idem", true: "naive"}[naive]})
		body := []byte(`{"type":"invoice.paid"}`)
		assert.Equal(t, http.StatusInternalServerError, s.deliver(t, "msg_pg", body, nil).status)
		assert.Equal(t, http.StatusNoContent, s.deliver(t, "msg_pg", body, nil).status)
		a := s.deliver(t, "msg_pg", body, nil)
		assert.Equal(t, answer{status: http.StatusNoContent, replayed: true}, a)

		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM "+rows+" WHERE naive = $1", naive).Scan(&n))
		if naive {
			assert.Equal(t, 2, n, "the naive handler's failed attempt left its row")
		} else {
			assert.Equal(t, 1, n, "the failed attempt's row rolled back")
		}
	}
}
