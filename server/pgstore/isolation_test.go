package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// strictPool is a pool whose sessions default to isolation level iso, as
// a database or role configured with default_transaction_isolation has.
func strictPool(t *testing.T, iso string, maxConns int32) *pgxpool.Pool {
	cfg := poolConfig(t, maxConns)
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = iso
	return newPool(t, cfg)
}

// TestTransactionalWorkIsReadCommitted: the work's transaction is READ
// COMMITTED even where the session's default is stricter. Under a lease,
// a renewal updates the key's row while the work runs, which would fail
// the fenced commit of a REPEATABLE READ or SERIALIZABLE transaction;
// under ClaimWork's lock, the record is read in the statement after the
// lock, which must take a snapshot of its own.
func TestTransactionalWorkIsReadCommitted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, strictPool(t, "serializable", 4), pgstore.Options{Transactional: true})
	level := func(t *testing.T, wctx context.Context) string {
		tx, ok := pgstore.Tx(wctx)
		require.True(t, ok)
		var level string
		require.NoError(t, tx.QueryRow(wctx, "SHOW transaction_isolation").Scan(&level)) // takes a snapshot
		return level
	}

	t.Run("lease", func(t *testing.T) {
		k := server.Key{Scope: "s", Key: "lease"}
		c, err := s.Claim(ctx, k, "fp", lease)
		require.NoError(t, err)
		require.True(t, c.Acquired)
		wctx, w, err := s.BeginWork(ctx, k, c.Token)
		require.NoError(t, err)
		assert.Equal(t, "read committed", level(t, wctx))
		require.NoError(t, s.Renew(ctx, k, c.Token, lease)) // the renewer, on another connection
		require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: 201}, retention))
		again, err := s.Claim(ctx, k, "fp", lease)
		require.NoError(t, err)
		assert.True(t, again.Record.Completed)
	})

	t.Run("lock", func(t *testing.T) {
		k := server.Key{Scope: "s", Key: "lock"}
		c, wctx, w, err := s.ClaimWork(ctx, k, "fp")
		require.NoError(t, err)
		require.True(t, c.Acquired)
		assert.Equal(t, "read committed", level(t, wctx))
		require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: 201}, retention))
		again, _, _, err := s.ClaimWork(ctx, k, "fp")
		require.NoError(t, err)
		assert.True(t, again.Record.Completed)
	})
}

// TestStrictSessionDefaults: where sessions default to REPEATABLE READ or
// SERIALIZABLE, claims that lose the race for a new key still see it
// running (no serialization errors), and completion and renewal racing on
// one key both succeed.
func TestStrictSessionDefaults(t *testing.T) {
	t.Parallel()
	for _, iso := range []string{"repeatable read", "serializable"} {
		t.Run(iso, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newStore(t, strictPool(t, iso, 16), pgstore.Options{})
			for round := range 10 {
				k := server.Key{Scope: "s", Key: fmt.Sprint("k-", round)}
				var wg sync.WaitGroup
				claims := make([]server.Claim, 16)
				errs := make([]error, len(claims))
				for i := range claims {
					wg.Go(func() { claims[i], errs[i] = s.Claim(ctx, k, "fp", lease) })
				}
				wg.Wait()
				acquired, token := 0, ""
				for i, err := range errs {
					require.NoError(t, err)
					if claims[i].Acquired {
						acquired++
						token = claims[i].Token
					}
				}
				require.Equal(t, 1, acquired)
				wg.Go(func() { errs[0] = s.Renew(ctx, k, token, lease) })
				wg.Go(func() { errs[1] = s.Complete(ctx, k, token, server.StoredResponse{Status: 201}, retention) })
				wg.Wait()
				require.NoError(t, errs[1], "complete")
				if errs[0] != nil {
					require.ErrorIs(t, errs[0], server.ErrLeaseLost, "a renewal after completion finds no lease")
				}
			}
		})
	}
}
