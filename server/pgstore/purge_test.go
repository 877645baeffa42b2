package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

func TestPurge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const (
		expiredDone    = 23 // completed, retention over
		expiredRunning = 4  // lease lapsed, never completed
		live           = 7  // completed, within retention
		running        = 3  // lease held
		batch          = 5
	)
	pool, w := countingPool(t)
	table := tableName()
	s := newStore(t, pool, pgstore.Options{Table: table, Abandon: time.Microsecond})
	n := 0
	claim := func(d time.Duration) (server.Key, string) {
		n++
		k := server.Key{Scope: "tenant", Key: fmt.Sprintf("k%d", n)}
		c, err := s.Claim(ctx, k, "fp", d)
		require.NoError(t, err)
		require.True(t, c.Acquired)
		return k, c.Token
	}
	for range expiredDone {
		k, token := claim(lease)
		require.NoError(t, s.Complete(ctx, k, token, server.StoredResponse{Status: 200}, lapsed))
	}
	for range expiredRunning {
		claim(lapsed)
	}
	var keep []server.Key
	for range live {
		k, token := claim(lease)
		require.NoError(t, s.Complete(ctx, k, token, server.StoredResponse{Status: 200}, retention))
		keep = append(keep, k)
	}
	for range running {
		k, _ := claim(lease)
		keep = append(keep, k)
	}

	var deleted int
	trips, _ := w.measure(func() {
		var err error
		deleted, err = s.Purge(ctx, batch)
		require.NoError(t, err)
	})
	require.Equal(t, expiredDone+expiredRunning, deleted)
	// 27 rows in batches of 5: five full batches, then a short one. The
	// first batch also prepares the statement.
	require.EqualValues(t, 1+6, trips, "one statement per batch")

	var left int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&left))
	require.Equal(t, live+running, left)
	for _, k := range keep {
		c, err := s.Claim(ctx, k, "fp", lease)
		require.NoError(t, err)
		require.False(t, c.Acquired, "%s kept", k.Key)
	}

	again, err := s.Purge(ctx, 0)
	require.NoError(t, err)
	require.Zero(t, again)
}

// TestPurgeKeepsARecentlyLapsedLease: a worker whose lease lapsed a moment
// ago (a pause, renewals failing briefly) and was not taken over keeps its
// row through a Purge, and can still record its outcome.
func TestPurgeKeepsARecentlyLapsedLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newTestStore(t, pgstore.Options{})
	k := server.Key{Scope: "tenant", Key: "paused"}
	c, err := s.Claim(ctx, k, "fp", 50*time.Millisecond)
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	n, err := s.Purge(ctx, 0)
	require.NoError(t, err)
	assert.Zero(t, n)
	require.NoError(t, s.Complete(ctx, k, c.Token, server.StoredResponse{Status: 201}, retention))
	again, err := s.Claim(ctx, k, "fp", lease)
	require.NoError(t, err)
	assert.True(t, again.Record.Completed)
}

// TestPurgeUsesTheIndex explains the statement Purge sends on a table
// where nothing has expired: the plan must find expired rows on the
// expires_at index, not by reading the table.
func TestPurgeUsesTheIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, w := countingPool(t)
	table := tableName()
	s := newStore(t, pool, pgstore.Options{Table: table})
	_, err := pool.Exec(ctx, "INSERT INTO "+table+` (scope, key, fingerprint, token, state, expires_at)
		SELECT 's', g::text, 'fp', 't', 'completed', now() + interval '1 hour' FROM generate_series(1, 20000) g`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "ANALYZE "+table)
	require.NoError(t, err)

	n, err := s.Purge(ctx, 1000)
	require.NoError(t, err)
	require.Zero(t, n)
	purge := w.lastQuery().sql
	require.Contains(t, purge, "DELETE")

	rows, err := pool.Query(ctx, "EXPLAIN (COSTS OFF) "+purge, 1000, int64(24*time.Hour/time.Microsecond))
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	plan := strings.Join(lines, "\n")
	require.Contains(t, plan, "Index Scan using "+table+"_expires_at_idx", plan)
	require.NotContains(t, plan, "Seq Scan", plan)
}
