package mysqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/mysqlstore"
)

// TestFailedWorkRollsBack: a handler that charges in the work's
// transaction and then fails leaves no charge, and the retry runs again;
// the one that succeeds leaves one charge with its record. The same
// handler charging through the *sql.DB, outside the transaction, leaves a
// charge behind each failure, which shows what the transaction guards.
func TestFailedWorkRollsBack(t *testing.T) {
	t.Parallel()
	for _, inTx := range []bool{true, false} {
		t.Run(map[bool]string{true: "in the work's transaction", false: "naive, outside it"}[inTx], func(t *testing.T) {
			t.Parallel()
			svc := newService(t)
			attempts := 0
			svc.serveIdem(t, nil, func(w http.ResponseWriter, r *http.Request) {
				attempts++
				var err error
				if inTx {
					err = svc.chargeTx(r, 1000)
				} else {
					_, err = svc.db.ExecContext(r.Context(), "INSERT INTO "+svc.charges+" (idem_key, amount) VALUES (?, 1000)", r.Header.Get("Idempotency-Key"))
				}
				if err != nil || attempts < 3 {
					http.Error(w, "provider down", http.StatusBadGateway) // 5xx: released, rolled back
					return
				}
				w.WriteHeader(http.StatusCreated)
			})
			for i, want := range []int{http.StatusBadGateway, http.StatusBadGateway, http.StatusCreated, http.StatusCreated} {
				rep, err := svc.do("k")
				require.NoError(t, err)
				require.Equal(t, want, rep.status, "request %d", i)
			}
			require.Equal(t, 3, attempts, "the stored outcome is replayed, not run")
			if inTx {
				assert.Equal(t, 1, svc.charged(t, "k"), "one charge: the failed attempts rolled back")
			} else {
				assert.Equal(t, 3, svc.charged(t, "k"), "the naive handler's failed attempts charged")
			}
		})
	}
}

// TestTxRefusesTxControl: the handler's statements that would end the
// work's transaction are refused before they are sent; savepoints work.
func TestTxRefusesTxControl(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	s := newStore(t, db, mysqlstore.Options{Transactional: true})
	charges := newCharges(t, db)
	ctx := context.Background()
	c, wctx, work, err := s.ClaimWork(ctx, server.Key{Key: "k"}, "fp")
	require.NoError(t, err)
	require.True(t, c.Acquired)
	tx, ok := mysqlstore.Tx(wctx)
	require.True(t, ok)
	for _, q := range []string{"COMMIT", " commit work", "/* x */ ROLLBACK", "-- c\nrollback", "ROLLBACK WORK", "START TRANSACTION", "begin", "XA START 'x'", "LOCK TABLES t WRITE", "unlock tables"} {
		_, err := tx.ExecContext(wctx, q)
		require.ErrorIs(t, err, mysqlstore.ErrTxControl, q)
		_, err = tx.QueryContext(wctx, q)
		require.ErrorIs(t, err, mysqlstore.ErrTxControl, q)
		require.ErrorIs(t, tx.QueryRowContext(wctx, q).Scan(), mysqlstore.ErrTxControl, q)
	}
	insert := "INSERT INTO " + charges + " (idem_key, amount) VALUES (?, ?)"
	_, err = tx.ExecContext(wctx, insert, "kept", 1)
	require.NoError(t, err)
	_, err = tx.ExecContext(wctx, "SAVEPOINT a")
	require.NoError(t, err)
	_, err = tx.ExecContext(wctx, insert, "undone", 2)
	require.NoError(t, err)
	_, err = tx.ExecContext(wctx, "ROLLBACK TO SAVEPOINT a")
	require.NoError(t, err)
	require.NoError(t, work.Commit(ctx, server.StoredResponse{Status: http.StatusCreated}, time.Hour))
	assert.Equal(t, 1, countCharges(t, db, charges, "kept"))
	assert.Equal(t, 0, countCharges(t, db, charges, "undone"))
}

// TestTxEndsWithTheWork: once the work ended, the handler's statements
// fail with sql.ErrTxDone and write nothing, and Rows it left open were
// closed so that the commit could run.
func TestTxEndsWithTheWork(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	s := newStore(t, db, mysqlstore.Options{Transactional: true})
	charges := newCharges(t, db)
	ctx := context.Background()
	_, wctx, work, err := s.ClaimWork(ctx, server.Key{Key: "k"}, "fp")
	require.NoError(t, err)
	tx, _ := mysqlstore.Tx(wctx)
	rows, err := tx.QueryContext(wctx, "SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3")
	require.NoError(t, err)
	require.True(t, rows.Next()) // and left open
	require.NoError(t, work.Commit(ctx, server.StoredResponse{Status: http.StatusCreated}, time.Hour))
	require.False(t, rows.Next(), "the Rows were closed with the work")
	_, err = tx.ExecContext(wctx, "INSERT INTO "+charges+" (idem_key, amount) VALUES ('late', 1)")
	require.ErrorIs(t, err, sql.ErrTxDone)
	_, err = tx.QueryContext(wctx, "SELECT 1")
	require.ErrorIs(t, err, sql.ErrTxDone)
	require.ErrorIs(t, tx.QueryRowContext(wctx, "SELECT 1").Scan(new(int)), sql.ErrTxDone)
	assert.Equal(t, 0, countCharges(t, db, charges, "late"))
}

// TestNoTx: outside a transactional work, Tx reports false and every
// statement of what it returns fails with ErrNoTx, in lease mode too.
func TestNoTx(t *testing.T) {
	t.Parallel()
	tx, ok := mysqlstore.Tx(context.Background())
	require.False(t, ok)
	_, err := tx.ExecContext(context.Background(), "SELECT 1")
	require.ErrorIs(t, err, mysqlstore.ErrNoTx)
	_, err = tx.QueryContext(context.Background(), "SELECT 1")
	require.ErrorIs(t, err, mysqlstore.ErrNoTx)
	_, err = tx.PrepareContext(context.Background(), "SELECT 1")
	require.ErrorIs(t, err, mysqlstore.ErrNoTx)
	require.ErrorIs(t, tx.QueryRowContext(context.Background(), "SELECT 1").Scan(new(int)), mysqlstore.ErrNoTx)

	s := newStore(t, newDB(t, 2), mysqlstore.Options{})
	_, _, _, err = s.ClaimWork(context.Background(), server.Key{Key: "k"}, "fp")
	require.ErrorIs(t, err, errors.ErrUnsupported)
	wctx, work, err := s.BeginWork(context.Background(), server.Key{Key: "k"}, "token")
	require.NoError(t, err)
	require.Nil(t, work)
	_, ok = mysqlstore.Tx(wctx)
	require.False(t, ok)
}

// TestTooLarge: an outcome over MaxResponse is refused before it is sent:
// Complete keeps the key held, a transactional Commit rolls back; a scope
// or fingerprint the columns cannot hold is refused with ErrTooLong.
func TestTooLarge(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	s := newStore(t, db, mysqlstore.Options{Transactional: true, MaxResponse: 1024})
	ctx := context.Background()
	big := server.StoredResponse{Status: http.StatusOK, Body: []byte(strings.Repeat("x", 2048))}

	k := server.Key{Key: "lease"}
	c, err := s.Claim(ctx, k, "fp", time.Minute)
	require.NoError(t, err)
	require.ErrorIs(t, s.Complete(ctx, k, c.Token, big, time.Hour), server.ErrResponseTooLarge)
	require.NoError(t, s.Complete(ctx, k, c.Token, server.StoredResponse{Status: http.StatusOK}, time.Hour), "still held")

	k = server.Key{Key: "work"}
	_, _, work, err := s.ClaimWork(ctx, k, "fp")
	require.NoError(t, err)
	require.ErrorIs(t, work.Commit(ctx, big, time.Hour), server.ErrResponseTooLarge)
	c, _, work, err = s.ClaimWork(ctx, k, "fp")
	require.NoError(t, err)
	require.True(t, c.Acquired, "the rolled-back work freed the key")
	require.NoError(t, work.Rollback(ctx))

	_, err = s.Claim(ctx, server.Key{Scope: strings.Repeat("s", 65536), Key: "k"}, "fp", time.Minute)
	require.ErrorIs(t, err, mysqlstore.ErrTooLong)
	_, _, _, err = s.ClaimWork(ctx, server.Key{Key: "k"}, strings.Repeat("f", 256))
	require.ErrorIs(t, err, mysqlstore.ErrTooLong)
}
