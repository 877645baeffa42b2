package mysqlstore_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/mysqlstore"
)

// TestPurge: Purge deletes, in batches, the completed records past their
// retention and the running ones abandoned past Options.Abandon, and
// nothing else; the keys it forgot are claimable afresh.
func TestPurge(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	table := tableName()
	s := newStore(t, db, mysqlstore.Options{Table: table, Abandon: time.Microsecond})
	kept := newStore(t, db, mysqlstore.Options{Table: table}) // the default Abandon, 24 h
	ctx := context.Background()
	resp := server.StoredResponse{Status: http.StatusCreated}
	complete := func(key string, retention time.Duration) {
		k := server.Key{Scope: "s", Key: key}
		c, err := s.Claim(ctx, k, "fp", time.Minute)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, k, c.Token, resp, retention))
	}
	for i := range 5 {
		complete(fmt.Sprint("expired-", i), time.Microsecond)
	}
	complete("live", time.Hour)
	_, err := s.Claim(ctx, server.Key{Scope: "s", Key: "abandoned"}, "fp", time.Microsecond)
	require.NoError(t, err)
	_, err = s.Claim(ctx, server.Key{Scope: "s", Key: "running"}, "fp", time.Hour)
	require.NoError(t, err)

	rows := func() int {
		var n int
		require.NoError(t, db.QueryRow("SELECT count(*) FROM "+table).Scan(&n))
		return n
	}
	require.Equal(t, 8, rows())
	// With the default Abandon, the lapsed running record stays.
	require.Eventually(t, func() bool {
		n, err := kept.Purge(ctx, 2)
		require.NoError(t, err)
		return n == 5 || rows() == 3
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 3, rows(), "the live record, the running one and the lapsed lease inside Abandon stay")
	n, err := s.Purge(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the lease lapsed past Abandon goes")
	assert.Equal(t, 2, rows())
	c, err := s.Claim(ctx, server.Key{Scope: "s", Key: "expired-0"}, "fp-b", time.Minute)
	require.NoError(t, err)
	assert.True(t, c.Acquired)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Purge(cctx, 0)
	require.ErrorIs(t, err, context.Canceled)
}
