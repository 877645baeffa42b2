package etcdstore_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server/etcdstore/internal/drill"
)

// TestFailover kills the leader of a three-member cluster of its own ten
// times in all (two seeds, five kills each), mid-run, while an idem
// client with retries drives keyed operations through server.Middleware
// on an etcdstore behind a proxy that drops answers, then re-sends every
// operation (internal/drill). No operation runs twice, none goes without
// a final answer, and no re-send runs the work again: nothing the cluster
// acknowledged was lost. The time from each kill to the members' new
// leader is logged, never asserted. The naive run, without the
// middleware, runs operations twice: the drill can count what it
// guards against. It takes about half a minute, so it runs only with
// IDEM_TEST_ETCD_FAILOVER=1.
func TestFailover(t *testing.T) {
	if os.Getenv("IDEM_TEST_ETCD_FAILOVER") != "1" {
		t.Skip("set IDEM_TEST_ETCD_FAILOVER=1 to kill the leader of an embedded cluster ten times")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t.Run("middleware", func(t *testing.T) {
		var kills int
		var toLeader []time.Duration
		for _, seed := range []uint64{1, 2} {
			r, err := drill.Run(ctx, drill.Config{Dir: t.TempDir(), Ops: 600, Kills: 5}, seed)
			require.NoError(t, err)
			t.Log(r)
			assert.Zero(t, r.Duplicates, "operations run twice")
			assert.Zero(t, r.Lost, "operations without a final answer")
			assert.Zero(t, r.Forgotten, "outcomes lost: the re-send ran the work again")
			assert.Equal(t, r.Ops, r.Executed, "operations whose work ran")
			kills += r.Kills
			toLeader = append(toLeader, r.ToLeader...)
		}
		assert.Equal(t, 10, kills, "leader kills")
		t.Logf("leader kills=%d, median time to the new leader %v", kills, drill.Median(toLeader).Round(time.Millisecond))
	})
	t.Run("naive", func(t *testing.T) {
		r, err := drill.Run(ctx, drill.Config{Dir: t.TempDir(), Ops: 300, Kills: 1, Naive: true}, 3)
		require.NoError(t, err)
		t.Log(r)
		assert.Positive(t, r.Duplicates, "the handler without the middleware must run some operation twice")
	})
}
