package pgstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// TestTxWithoutTransaction: a context without the work's transaction (a
// Store not in transactional mode, a request without a key on an Optional
// route, a context made elsewhere) gives false, and a transaction whose
// every statement fails with ErrNoTx: a handler that ignores the boolean
// gets a clear error, not a nil pointer.
func TestTxWithoutTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx, ok := pgstore.Tx(ctx)
	require.False(t, ok)
	require.NotNil(t, tx)

	_, err := tx.Exec(ctx, "SELECT 1")
	assert.ErrorIs(t, err, pgstore.ErrNoTx)
	rows, err := tx.Query(ctx, "SELECT 1")
	assert.ErrorIs(t, err, pgstore.ErrNoTx)
	assert.False(t, rows.Next())
	assert.ErrorIs(t, rows.Err(), pgstore.ErrNoTx)
	rows.Close()
	assert.ErrorIs(t, tx.QueryRow(ctx, "SELECT 1").Scan(new(int)), pgstore.ErrNoTx)
	br := tx.SendBatch(ctx, &pgx.Batch{})
	_, err = br.Exec()
	assert.ErrorIs(t, err, pgstore.ErrNoTx)
	assert.ErrorIs(t, br.Close(), pgstore.ErrNoTx)
	_, err = tx.Begin(ctx)
	assert.ErrorIs(t, err, pgstore.ErrNoTx)
	_, err = tx.Prepare(ctx, "s", "SELECT 1")
	assert.ErrorIs(t, err, pgstore.ErrNoTx)
	_, err = tx.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"a"}, pgx.CopyFromRows(nil))
	assert.ErrorIs(t, err, pgstore.ErrNoTx)
}

// TestTxHasNoEnd: the handler's view of the work's transaction cannot
// commit it, roll it back or reach its connection: idem ends it with the
// stored response.
func TestTxHasNoEnd(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t, pgstore.Options{Transactional: true})
	c, wctx, w := claimWork(t, s, server.Key{Scope: "tenant", Key: "no-end"}, "fp")
	require.True(t, c.Acquired)
	defer w.Rollback(context.Background())
	tx, ok := pgstore.Tx(wctx)
	require.True(t, ok)
	for name, v := range map[string]any{"work": tx, "none": func() any { n, _ := pgstore.Tx(context.Background()); return n }()} {
		_, commits := v.(interface{ Commit(context.Context) error })
		_, rollsBack := v.(interface{ Rollback(context.Context) error })
		_, conn := v.(interface{ Conn() *pgx.Conn })
		assert.False(t, commits || rollsBack || conn, "%s: the transaction's end and connection are idem's", name)
	}
}

// TestTxMisusedWithoutTransactions: a handler written for transactional
// mode, behind a Store that is not, fails its statement with ErrNoTx; the
// middleware answers its 500 and releases the key.
func TestTxMisusedWithoutTransactions(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t, pgstore.Options{})
	var got error
	h := server.Middleware(s, server.Options{SingleTenant: true})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tx, _ := pgstore.Tx(r.Context())
		if _, got = tx.Exec(r.Context(), "INSERT INTO charges VALUES (1)"); got != nil {
			http.Error(w, "charge failed", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	req := httptest.NewRequest(http.MethodPost, "/charges", strings.NewReader("{}"))
	req.Header.Set("Idempotency-Key", "misuse-1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.ErrorIs(t, got, pgstore.ErrNoTx)
	c, err := s.Claim(context.Background(), server.Key{Key: "misuse-1"}, "fp", lease)
	require.NoError(t, err)
	assert.True(t, c.Acquired, "the 500 released the key")
}

// TestTxClosedAfterTheWork: the transaction handed to the handler, and its
// savepoints, refuse statements once the work has ended, as pgx's own do,
// instead of running them on a connection back in the pool. The same for
// work claimed under a lease (BeginWork) and by the work's transaction
// (ClaimWork).
func TestTxClosedAfterTheWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newTestStore(t, pgstore.Options{Transactional: true})
	begin := map[string]func(t *testing.T, k server.Key) (context.Context, server.Work){
		"lease": func(t *testing.T, k server.Key) (context.Context, server.Work) {
			c, err := s.Claim(ctx, k, "fp", lease)
			require.NoError(t, err)
			wctx, w, err := s.BeginWork(ctx, k, c.Token)
			require.NoError(t, err)
			return wctx, w
		},
		"lock": func(t *testing.T, k server.Key) (context.Context, server.Work) {
			c, wctx, w := claimWork(t, s, k, "fp")
			require.True(t, c.Acquired)
			return wctx, w
		},
	}
	ends := map[string]func(server.Work) error{
		"rollback": func(w server.Work) error { return w.Rollback(ctx) },
		"commit":   func(w server.Work) error { return w.Commit(ctx, server.StoredResponse{Status: 201}, retention) },
	}
	for claim, begin := range begin {
		for name, end := range ends {
			t.Run(claim+" "+name, func(t *testing.T) {
				wctx, w := begin(t, server.Key{Scope: "tenant", Key: claim + "-" + name})
				tx, ok := pgstore.Tx(wctx)
				require.True(t, ok)
				sp, err := tx.Begin(wctx)
				require.NoError(t, err)
				require.NoError(t, end(w))

				for name, tx := range map[string]pgstore.DBTX{"transaction": tx, "savepoint": sp} {
					_, err = tx.Exec(ctx, "SELECT 1")
					require.ErrorIs(t, err, pgx.ErrTxClosed, name)
					rows, err := tx.Query(ctx, "SELECT 1")
					require.ErrorIs(t, err, pgx.ErrTxClosed, name)
					rows.Close()
					require.ErrorIs(t, tx.QueryRow(ctx, "SELECT 1").Scan(new(int)), pgx.ErrTxClosed, name)
					_, err = tx.SendBatch(ctx, &pgx.Batch{}).Exec()
					require.ErrorIs(t, err, pgx.ErrTxClosed, name)
					_, err = tx.Begin(ctx)
					require.ErrorIs(t, err, pgx.ErrTxClosed, name)
					_, err = tx.Prepare(ctx, "s", "SELECT 1")
					require.ErrorIs(t, err, pgx.ErrTxClosed, name)
					_, err = tx.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"a"}, pgx.CopyFromRows(nil))
					require.ErrorIs(t, err, pgx.ErrTxClosed, name)
				}
			})
		}
	}
	s.Settle()
	assert.Zero(t, pool.Stat().AcquiredConns())
}

// TestTxLargeObjects: large objects written through the work's
// transaction commit with it.
func TestTxLargeObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newTestStore(t, pgstore.Options{Transactional: true})
	c, wctx, w := claimWork(t, s, server.Key{Scope: "tenant", Key: "lo"}, "fp")
	require.True(t, c.Acquired)
	tx, _ := pgstore.Tx(wctx)
	los := tx.LargeObjects()
	oid, err := los.Create(wctx, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), "SELECT lo_unlink($1)", oid) })
	lo, err := los.Open(wctx, oid, pgx.LargeObjectModeWrite)
	require.NoError(t, err)
	_, err = lo.Write([]byte("receipt"))
	require.NoError(t, err)
	require.NoError(t, lo.Close())
	charge(t, wctx, newCharges(t, pool), "lo") // the handler's statements go on after it
	require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: 201}, retention))

	var got []byte
	require.NoError(t, pool.QueryRow(ctx, "SELECT lo_get($1)", oid).Scan(&got))
	assert.Equal(t, "receipt", string(got))
}
