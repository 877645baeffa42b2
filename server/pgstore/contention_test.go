package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

func TestConcurrentClaimsOneWinner(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t, pgstore.Options{})
	const n = 40
	for round := range 5 {
		k := server.Key{Scope: "tenant", Key: "race-" + string(rune('a'+round))}
		claims := claimAll(t, s, k, n)
		won := 0
		for i := range n {
			if claims[i].Acquired {
				won++
			} else {
				require.Equal(t, "fp", claims[i].Record.Fingerprint)
			}
		}
		require.Equal(t, 1, won, "round %d", round)
	}
}

func TestConcurrentTakeoversOneWinner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newTestStore(t, pgstore.Options{})
	k := server.Key{Scope: "tenant", Key: "crashed"}
	_, err := s.Claim(ctx, k, "fp", lapsed)
	require.NoError(t, err)

	const n = 20
	claims := claimAll(t, s, k, n)
	won := 0
	for i := range n {
		if claims[i].Acquired {
			require.True(t, claims[i].TakenOver)
			won++
		}
	}
	require.Equal(t, 1, won)
}

// TestClaimMeetsUncommittedInsert drives the edge of the claim statement:
// the key's row was inserted by a transaction that has not committed yet.
// ON CONFLICT waits for it; once it commits, the statement's snapshot cannot
// see the row and returns nothing, and Claim must look again. If it rolls
// back, the claim inserts.
func TestClaimMeetsUncommittedInsert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprintf("commit %v", commit), func(t *testing.T) {
			t.Parallel()
			table := tableName()
			s, pool := newTestStore(t, pgstore.Options{Table: table})
			k := server.Key{Scope: "tenant", Key: "contended"}

			tx, err := pool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(ctx) }()
			_, err = tx.Exec(ctx, "INSERT INTO "+table+` (scope, key, fingerprint, token, state, expires_at)
				VALUES ($1, $2, 'first', 'token', 'running', now() + interval '1 minute')`, k.Scope, k.Key)
			require.NoError(t, err)

			type result struct {
				c   server.Claim
				err error
			}
			done := make(chan result, 1)
			go func() {
				c, err := s.Claim(ctx, k, "second", lease)
				done <- result{c, err}
			}()
			waitForLockWait(t, pool, table)

			if commit {
				require.NoError(t, tx.Commit(ctx))
			} else {
				require.NoError(t, tx.Rollback(ctx))
			}
			r := <-done
			require.NoError(t, r.err)
			if commit {
				require.False(t, r.c.Acquired)
				require.Equal(t, "first", r.c.Record.Fingerprint)
			} else {
				require.True(t, r.c.Acquired)
			}
		})
	}
}

// waitForLockWait returns once some session waits on a lock in a statement
// on table. It gives up after ten seconds.
func waitForLockWait(t *testing.T, pool *pgxpool.Pool, table string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var waiting bool
		require.NoError(t, pool.QueryRow(context.Background(), `SELECT EXISTS (
			SELECT 1 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND position($1 in query) > 0 AND pid <> pg_backend_pid())`,
			table).Scan(&waiting))
		if waiting {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no session started waiting on the lock")
}

// claimAll claims k with fingerprint "fp" from n goroutines at once and
// returns their claims, none of which may have failed.
func claimAll(t *testing.T, s *pgstore.Store, k server.Key, n int) []server.Claim {
	t.Helper()
	var wg sync.WaitGroup
	claims := make([]server.Claim, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { claims[i], errs[i] = s.Claim(context.Background(), k, "fp", lease) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	return claims
}
