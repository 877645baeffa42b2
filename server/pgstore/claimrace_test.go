package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// TestClaimWorkRace starts 100 ClaimWork of one fresh key at once, 20
// times, on a pool of 20 connections; each that acquires the key runs the
// work (a charge, a short pause, the commit). Exactly one runs, every
// round; the others replay or find it in flight. A naive check-then-insert
// over the same table, in the same stampede, runs more than once, which
// shows the test can fail.
func TestClaimWorkRace(t *testing.T) {
	t.Parallel()
	resp := server.StoredResponse{Status: http.StatusCreated, Body: []byte(`{"id":"ch_1"}`)}
	cases := []struct {
		name string
		// attempt makes one claim of k in s and, if it acquires k, runs
		// the work: it counts in runs, charges, pauses and records.
		attempt func(ctx context.Context, s *pgstore.Store, pool *pgxpool.Pool, table, charges string, k server.Key, runs *atomic.Int32) error
		// once says whether the key must run exactly once every round.
		once bool
	}{
		{
			name: "ClaimWork",
			attempt: func(ctx context.Context, s *pgstore.Store, _ *pgxpool.Pool, _, charges string, k server.Key, runs *atomic.Int32) error {
				c, wctx, w, err := s.ClaimWork(ctx, k, "fp")
				if err != nil || !c.Acquired {
					return err
				}
				runs.Add(1)
				tx, _ := pgstore.Tx(wctx)
				if _, err := tx.Exec(wctx, "INSERT INTO "+charges+" (key, amount) VALUES ($1, 1000)", k.Key); err != nil {
					w.Rollback(ctx)
					return err
				}
				time.Sleep(5 * time.Millisecond)
				return w.Commit(ctx, resp, retention)
			},
			once: true,
		},
		{
			name: "naive check-then-insert",
			attempt: func(ctx context.Context, _ *pgstore.Store, pool *pgxpool.Pool, table, charges string, k server.Key, runs *atomic.Int32) error {
				var n int
				if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+table+" WHERE scope = $1 AND key = $2", k.Scope, k.Key).Scan(&n); err != nil || n > 0 {
					return err
				}
				runs.Add(1)
				return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, "INSERT INTO "+charges+" (key, amount) VALUES ($1, 1000)", k.Key); err != nil {
						return err
					}
					time.Sleep(5 * time.Millisecond)
					_, err := tx.Exec(ctx, "INSERT INTO "+table+` (scope, key, fingerprint, token, state, status, expires_at)
						VALUES ($1, $2, 'fp', 'naive', 'completed', 201, now() + interval '1 hour')
						ON CONFLICT DO NOTHING`, k.Scope, k.Key)
					return err
				})
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			table := tableName()
			pool := newPool(t, poolConfig(t, 20))
			s := newStore(t, pool, pgstore.Options{Table: table, Transactional: true})
			charges := newCharges(t, pool)
			most := 0
			for round := range raceRounds {
				k := server.Key{Scope: "tenant", Key: fmt.Sprint("race-", round)}
				var (
					runs  atomic.Int32
					wg    sync.WaitGroup
					start = make(chan struct{})
					errs  = make([]error, raceRequests)
				)
				for i := range raceRequests {
					wg.Go(func() {
						<-start
						errs[i] = tc.attempt(context.Background(), s, pool, table, charges, k, &runs)
					})
				}
				close(start)
				wg.Wait()
				require.NoError(t, errors.Join(errs...))
				most = max(most, int(runs.Load()))
				if tc.once {
					require.Equal(t, int32(1), runs.Load(), "round %d: runs", round)
					var n int
					require.NoError(t, pool.QueryRow(context.Background(),
						"SELECT count(*) FROM "+charges+" WHERE key = $1", k.Key).Scan(&n))
					require.Equal(t, 1, n, "round %d: charges", round)
				} else if most > 1 {
					break
				}
			}
			if !tc.once {
				assert.Greater(t, most, 1, "the naive check-then-insert never ran twice: the stampede does not race")
			}
		})
	}
}
