package pgstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
)

// TestCloseWhileInUse closes a Store, again and again, while goroutines
// use it: ClaimWork replaying a stored key (each answer leaves a rollback
// running in the background) and Release on the reserved pool. Close
// waits for what is under way and does without the rest: no call fails
// for the closing (Release answers ErrLeaseLost, its token being
// nobody's, never a closed pool), nothing panics, and every connection is
// back in the pool.
func TestCloseWhileInUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t, poolConfig(t, 8))
	table := tableName()
	k := server.Key{Scope: "tenant", Key: "stored"}
	for round := range 50 {
		s, err := pgstore.New(pool, pgstore.Options{Table: table, Transactional: true})
		require.NoError(t, err)
		if round == 0 {
			require.NoError(t, s.Migrate(ctx))
			dropTable(t, pool, table)
			c, _, w, err := s.ClaimWork(ctx, k, "fp")
			require.NoError(t, err)
			require.True(t, c.Acquired)
			require.NoError(t, w.Commit(ctx, server.StoredResponse{Status: 201}, retention))
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 6 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if (g+i)%2 == 0 {
						c, _, _, err := s.ClaimWork(ctx, k, "fp")
						if err == nil && !c.Record.Completed {
							err = errors.New("the stored key was not replayed")
						}
						if err != nil {
							errs <- err
							return
						}
						continue
					}
					if err := s.Release(ctx, k, "nobody's token"); !errors.Is(err, server.ErrLeaseLost) {
						errs <- err
						return
					}
				}
			})
		}
		for range 10 {
			s.Close()
		}
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err, "round %d", round)
		}
		s.Close()
		s.Settle()
		require.Zero(t, pool.Stat().AcquiredConns(), "round %d: connections left out of the pool", round)
	}
	assert.Zero(t, pool.Stat().AcquiredConns())
}
