package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// TestTxLeftRunning: a goroutine the handler left running keeps writing
// through the work's transaction while idem ends the work. Without the
// guard, its statement and the commit share the connection at once, and
// pgx panics ("slow write timer already active"), killing the process; or
// a statement that passed the guard's check just before the end runs on
// the connection after it, outside the work. With it, every statement
// either runs inside the work (before the end: it commits or rolls back
// with it) or fails with pgx.ErrTxClosed; Rows and BatchResults the
// goroutine leaves open do not hold the commit up.
func TestTxLeftRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newTestStore(t, pgstore.Options{Transactional: true})
	side := "side_" + tableName()
	_, err := pool.Exec(ctx, "CREATE TABLE "+side+" (xid text NOT NULL)")
	require.NoError(t, err)
	dropTable(t, pool, side)
	insert := "INSERT INTO " + side + " VALUES (pg_current_xact_id()::text)"

	// Each statement writes one row tagged with its transaction's ID.
	statements := map[string]func(tx pgstore.DBTX) error{
		"Exec": func(tx pgstore.DBTX) error {
			_, err := tx.Exec(ctx, insert)
			return err
		},
		"Query, rows closed": func(tx pgstore.DBTX) error {
			rows, err := tx.Query(ctx, insert+" RETURNING 1")
			if err != nil {
				return err
			}
			rows.Close()
			return rows.Err()
		},
		"Query, rows left open": func(tx pgstore.DBTX) error {
			_, err := tx.Query(ctx, insert+" RETURNING 1")
			return err
		},
		"QueryRow": func(tx pgstore.DBTX) error {
			return tx.QueryRow(ctx, insert+" RETURNING 1").Scan(new(int))
		},
		"SendBatch": func(tx pgstore.DBTX) error {
			b := &pgx.Batch{}
			b.Queue(insert)
			b.Queue(insert)
			return tx.SendBatch(ctx, b).Close()
		},
		"SendBatch left open": func(tx pgstore.DBTX) error {
			b := &pgx.Batch{}
			b.Queue(insert)
			_, err := tx.SendBatch(ctx, b).Exec()
			return err
		},
		"CopyFrom": func(tx pgstore.DBTX) error {
			_, err := tx.CopyFrom(ctx, pgx.Identifier{side}, []string{"xid"}, pgx.CopyFromRows([][]any{{"copied"}}))
			return err
		},
	}
	ends := map[string]func(server.Work) error{
		"commit":   func(w server.Work) error { return w.Commit(ctx, server.StoredResponse{Status: 201}, retention) },
		"rollback": func(w server.Work) error { return w.Rollback(ctx) },
	}
	const rounds = 150
	for name, statement := range statements {
		for end, finish := range ends {
			t.Run(name+", "+end, func(t *testing.T) {
				for i := range rounds {
					k := server.Key{Scope: "left running", Key: fmt.Sprintf("%s %s %d", name, end, i)}
					c, wctx, w := claimWork(t, s, k, "fp")
					require.True(t, c.Acquired)
					tx, _ := pgstore.Tx(wctx)
					var xid string
					require.NoError(t, tx.QueryRow(ctx, "SELECT pg_current_xact_id()::text").Scan(&xid))
					var wg sync.WaitGroup
					var failed error
					wg.Go(func() {
						for range 10_000 {
							err := statement(tx)
							switch {
							case errors.Is(err, pgx.ErrTxClosed):
								return
							case err != nil && !isBusy(err):
								failed = err
								return
							}
						}
					})
					require.NoError(t, finish(w))
					wg.Wait()
					require.NoError(t, failed)
					var outside int
					require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM "+side+" WHERE xid NOT IN ($1, 'copied')", xid).Scan(&outside))
					require.Zero(t, outside, "round %d: rows written outside the work's transaction", i)
					if end == "rollback" {
						assert.Zero(t, countCharges(t, pool, side), "round %d: rows of a rolled back work", i)
					}
					_, err := pool.Exec(ctx, "DELETE FROM "+side)
					require.NoError(t, err)
				}
			})
		}
	}
	s.Settle()
	assert.Zero(t, pool.Stat().AcquiredConns())
}

// isBusy reports whether err is the error of a statement sent while the
// Rows or BatchResults of another are open.
func isBusy(err error) bool { return errors.Is(err, pgstore.ErrTxBusy) }

// TestTxOneStatementAtATime: a statement sent while the rows of another
// are open fails, as with pgx, rather than waiting for rows that its own
// goroutine would close; once they are closed, the next one runs.
func TestTxOneStatementAtATime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newTestStore(t, pgstore.Options{Transactional: true})
	c, wctx, w := claimWork(t, s, server.Key{Scope: "tenant", Key: "busy"}, "fp")
	require.True(t, c.Acquired)
	tx, _ := pgstore.Tx(wctx)
	rows, err := tx.Query(ctx, "SELECT generate_series(1, 3)")
	require.NoError(t, err)
	require.True(t, rows.Next())
	_, err = tx.Exec(ctx, "SELECT 1")
	require.ErrorIs(t, err, pgstore.ErrTxBusy)
	n := 1
	for rows.Next() {
		n++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, 3, n)
	_, err = tx.Exec(ctx, "SELECT 1") // the rows read to the end gave the transaction back
	require.NoError(t, err)

	b := &pgx.Batch{}
	b.Queue("SELECT 1")
	br := tx.SendBatch(ctx, b)
	require.ErrorIs(t, tx.QueryRow(ctx, "SELECT 1").Scan(new(int)), pgstore.ErrTxBusy)
	require.NoError(t, br.Close())
	require.NoError(t, tx.QueryRow(ctx, "SELECT 1").Scan(new(int)))
	require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: 201}, retention))
	s.Settle()
}
