package redisstore_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/redisstore"
)

// clusterScript runs scripts/redis-cluster.sh with args.
func clusterScript(t *testing.T, args ...string) {
	t.Helper()
	path, err := filepath.Abs("../../scripts/redis-cluster.sh")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", path, strings.Join(args, " "), out)
}

// TestFailover SIGKILLs the master holding a key of the cluster that
// scripts/redis-cluster.sh started (so it runs only with
// IDEM_TEST_REDIS_FAILOVER=1 beside IDEM_TEST_REDIS, and heals the cluster
// afterwards). While the replica is promoted, the outcome of work claimed
// before the kill is still recorded (Complete tries again until its context
// ends), and once it is promoted new keys of that shard are claimed again
// within a bound far below go-redis's one-minute layout reload (the store
// asks for a reload when a node is gone). The bounds are generous polls, not
// timings: the failover itself takes a few seconds.
func TestFailover(t *testing.T) {
	if os.Getenv("IDEM_TEST_REDIS_FAILOVER") != "1" {
		t.Skip("set IDEM_TEST_REDIS_FAILOVER=1 (with IDEM_TEST_REDIS from scripts/redis-cluster.sh) to kill a master of the test cluster")
	}
	rdb := connect(t, "IDEM_TEST_REDIS", nil)
	cluster, ok := rdb.(*redis.ClusterClient)
	require.True(t, ok, "IDEM_TEST_REDIS must name a cluster")
	clusterScript(t, "heal")

	ctx := context.Background()
	prefix := testPrefix(t, rdb)
	t.Cleanup(func() { clusterScript(t, "heal") }) // before the keys are deleted
	store := newStore(t, rdb, redisstore.Options{Prefix: prefix})
	confirmed := newStore(t, rdb, redisstore.Options{Prefix: prefix, WaitReplicas: 1})

	// A claim the replica has, for work that is running when its master
	// dies, and fresh keys on the same master.
	scope := "failover-" + rand.Text()
	running := server.Key{Scope: scope, Key: "running"}
	master, err := cluster.MasterForKey(ctx, redisstore.RecordKey(prefix, running))
	require.NoError(t, err)
	addr := master.Options().Addr
	var fresh []server.Key
	for len(fresh) < 400 {
		k := server.Key{Scope: scope, Key: rand.Text()}
		if m, err := cluster.MasterForKey(ctx, redisstore.RecordKey(prefix, k)); err == nil && m.Options().Addr == addr {
			fresh = append(fresh, k)
		}
	}
	c, err := confirmed.Claim(ctx, running, "fp", time.Minute)
	require.NoError(t, err)
	require.True(t, c.Acquired)

	_, port, _ := strings.Cut(addr, ":")
	clusterScript(t, "kill", port)

	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp := server.StoredResponse{Status: http.StatusCreated, Body: []byte("done")}
	require.NoError(t, store.Complete(cctx, running, c.Token, resp, time.Hour),
		"the outcome is recorded once the replica took over")
	replay, err := store.Claim(ctx, running, "fp", time.Minute)
	require.NoError(t, err)
	require.True(t, replay.Record.Completed)

	require.Eventually(t, func() bool {
		k := fresh[0]
		fresh = fresh[1:]
		c, err := store.Claim(ctx, k, "fp", time.Minute)
		return err == nil && c.Acquired
	}, 15*time.Second, 50*time.Millisecond, "new keys of the failed-over shard are not claimed again")
}
