package pgstore_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// newCharges creates a table of side effects, one row per charge, dropped
// when the test ends.
func newCharges(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	table := "charges_" + tableName()
	_, err := pool.Exec(context.Background(), "CREATE TABLE "+table+" (key text NOT NULL, amount integer NOT NULL)")
	require.NoError(t, err)
	dropTable(t, pool, table)
	return table
}

func countCharges(t testing.TB, pool *pgxpool.Pool, table string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

// charge writes one charge through the work's transaction.
func charge(t testing.TB, ctx context.Context, table, key string) {
	t.Helper()
	tx, ok := pgstore.Tx(ctx)
	require.True(t, ok, "the work's context carries its transaction")
	_, err := tx.Exec(ctx, "INSERT INTO "+table+" (key, amount) VALUES ($1, 1000)", key)
	require.NoError(t, err)
}

func TestTransactionalWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	resp := server.StoredResponse{Status: http.StatusCreated, Body: []byte(`{"id":"ch_1"}`)}

	cases := []struct {
		name string
		// run does the work for key k under claim c and ends it.
		run func(t *testing.T, s *pgstore.Store, k server.Key, c server.Claim, charges string)
		// charged is the number of charges in the end; completed whether
		// the record holds an outcome (else it is still running).
		charged   int
		completed bool
	}{
		{
			name: "commit stores the response with the writes",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, c server.Claim, charges string) {
				wctx, w, err := s.BeginWork(ctx, k, c.Token)
				require.NoError(t, err)
				charge(t, wctx, charges, k.Key)
				require.NoError(t, w.Commit(ctx, resp, retention))
				require.NoError(t, w.Rollback(ctx), "Rollback after Commit does nothing")
				require.Error(t, w.Commit(ctx, resp, retention), "a second Commit")
			},
			charged:   1,
			completed: true,
		},
		{
			name: "rollback discards the writes",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, c server.Claim, charges string) {
				wctx, w, err := s.BeginWork(ctx, k, c.Token)
				require.NoError(t, err)
				charge(t, wctx, charges, k.Key)
				require.NoError(t, w.Rollback(ctx))
				require.NoError(t, w.Rollback(ctx))
				require.Error(t, w.Commit(ctx, resp, retention), "Commit after Rollback")
			},
		},
		{
			name: "lost lease rolls the writes back",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, c server.Claim, charges string) {
				wctx, w, err := s.BeginWork(ctx, k, c.Token)
				require.NoError(t, err)
				charge(t, wctx, charges, k.Key)
				require.NoError(t, s.Release(ctx, k, c.Token)) // the lease is gone
				require.ErrorIs(t, w.Commit(ctx, resp, retention), server.ErrLeaseLost)
				again, err := s.Claim(ctx, k, "fp", lease)
				require.NoError(t, err)
				require.True(t, again.Acquired, "the record was not written either")
				require.NoError(t, s.Release(ctx, k, again.Token))
			},
		},
		{
			name: "failed statement aborts the work",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, c server.Claim, charges string) {
				wctx, w, err := s.BeginWork(ctx, k, c.Token)
				require.NoError(t, err)
				charge(t, wctx, charges, k.Key)
				tx, _ := pgstore.Tx(wctx)
				_, err = tx.Exec(wctx, "INSERT INTO "+charges+" (key) VALUES ('no amount')")
				require.Error(t, err)
				err = w.Commit(ctx, resp, retention)
				require.Error(t, err)
				require.NotErrorIs(t, err, server.ErrLeaseLost)
			},
		},
		{
			name: "handler may not end the transaction",
			run: func(t *testing.T, s *pgstore.Store, k server.Key, c server.Claim, charges string) {
				wctx, w, err := s.BeginWork(ctx, k, c.Token)
				require.NoError(t, err)
				tx, _ := pgstore.Tx(wctx) // a DBTX: no Commit, no Rollback (TestTxHasNoEnd)
				// Savepoints are the handler's to use.
				sp, err := tx.Begin(wctx)
				require.NoError(t, err)
				_, err = sp.Exec(wctx, "INSERT INTO "+charges+" (key) VALUES ('no amount')")
				require.Error(t, err)
				require.NoError(t, sp.Rollback(wctx))
				charge(t, wctx, charges, k.Key)
				require.NoError(t, w.Commit(ctx, resp, retention))
			},
			charged:   1,
			completed: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, pool := newTestStore(t, pgstore.Options{Transactional: true})
			charges := newCharges(t, pool)
			k := server.Key{Scope: "tenant", Key: "pay-1"}
			c, err := s.Claim(ctx, k, "fp", lease)
			require.NoError(t, err)
			require.True(t, c.Acquired)

			tc.run(t, s, k, c, charges)

			assert.Equal(t, tc.charged, countCharges(t, pool, charges), "charges")
			after, err := s.Claim(ctx, k, "fp", lease)
			require.NoError(t, err)
			if tc.completed {
				require.True(t, after.Record.Completed)
				assert.Equal(t, resp, after.Record.Response)
			} else if !after.Acquired {
				assert.False(t, after.Record.Completed)
			}
			assert.Zero(t, pool.Stat().AcquiredConns(), "the work's connection went back to the pool")
		})
	}
}

func TestWorkWithoutTransactions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newTestStore(t, pgstore.Options{})
	k := server.Key{Scope: "tenant", Key: "plain"}
	c, err := s.Claim(ctx, k, "fp", lease)
	require.NoError(t, err)

	// No Work: the work runs outside the database, and its outcome is
	// stored with Complete. (A Work would tell the middleware that a failed
	// commit undid the work, and it would release the key.)
	wctx, w, err := s.BeginWork(ctx, k, c.Token)
	require.NoError(t, err)
	require.Equal(t, ctx, wctx)
	require.Nil(t, w)
	_, ok := pgstore.Tx(wctx)
	require.False(t, ok)
}

// TestCancelledMidQueryReleasesCleanly: the client goes away while the
// handler's query runs with the client's context (server.ClientContext:
// a handler that would rather stop when its client leaves); pgx cancels
// the query, the handler gives up,
// and the key is released, with no false "release failed" in the log
// (closing the connection rolled the transaction back).
func TestCancelledMidQueryReleasesCleanly(t *testing.T) {
	t.Parallel()
	store, _ := newTestStore(t, pgstore.Options{Transactional: true})
	var logs syncLog
	h := server.Middleware(store, server.Options{SingleTenant: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tx, _ := pgstore.Tx(r.Context())
			if _, err := tx.Exec(server.ClientContext(r.Context()), "SELECT pg_sleep(10)"); err != nil {
				return // the client went away: give up without answering
			}
			w.WriteHeader(http.StatusCreated)
		}))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/p", strings.NewReader("x"))
	req.Header.Set("Idempotency-Key", "mid-query-1")
	h.ServeHTTP(httptest.NewRecorder(), req)

	// The cancelled statement ends on the server once pgx's cancel request
	// reaches it, which Rollback waits to be sent; the server then aborts
	// the transaction, releasing the key's lock, a moment later. Without
	// the cancel the lock would be held until pg_sleep's 10 s are over.
	fp := server.Fingerprint(req, []byte("x"))
	acquired := false
	for range 160 {
		c, err := store.Claim(context.Background(), server.Key{Key: "mid-query-1"}, fp, time.Minute)
		require.NoError(t, err)
		if acquired = c.Acquired; acquired {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	assert.True(t, acquired, "the key was released")
	assert.NotContains(t, logs.String(), "failed")
}

// syncLog is a log buffer safe for concurrent writes.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
