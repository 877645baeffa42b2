package etcdstore_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/etcdstore"
)

// TestEtcdForgetsRecords checks that etcd itself deletes the records the
// store may forget, through the etcd leases they are written under: a
// running record whose worker is gone, once its lease lapsed and Abandon
// passed, and a completed one after its retention. Nothing purges them;
// the test polls the raw keys, bounded, until etcd's lease sweep (every
// 500 ms, TTLs of at least 2 s) has removed them.
func TestEtcdForgetsRecords(t *testing.T) {
	cli := connect(t)
	prefix := testPrefix(t, cli)
	store := newStore(t, cli, etcdstore.Options{Prefix: prefix, Abandon: time.Second})
	ctx := context.Background()

	abandoned := server.Key{Scope: "expiry", Key: "abandoned"}
	c, err := store.Claim(ctx, abandoned, "fp", 100*time.Millisecond)
	require.NoError(t, err)
	require.True(t, c.Acquired)

	completed := server.Key{Scope: "expiry", Key: "completed"}
	c, err = store.Claim(ctx, completed, "fp", time.Minute)
	require.NoError(t, err)
	require.NoError(t, store.Complete(ctx, completed, c.Token, server.StoredResponse{Status: http.StatusOK}, time.Second))

	count := func() int64 {
		resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		require.NoError(t, err)
		return resp.Count
	}
	require.EqualValues(t, 2, count(), "both records are in etcd")
	require.Eventually(t, func() bool { return count() == 0 }, 20*time.Second, 50*time.Millisecond,
		"etcd did not delete the abandoned and the expired record")
}
