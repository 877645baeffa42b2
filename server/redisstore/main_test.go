package redisstore_test

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server/redisstore"
)

// The Redis servers the tests run against, each named by an environment
// variable holding comma-separated addresses: one address is a single node,
// several are the seeds of a cluster.
//
//	IDEM_TEST_REDIS          the cluster scripts/redis-cluster.sh starts
//	                         (127.0.0.1:7101,...,127.0.0.1:7106)
//	IDEM_TEST_REDIS_SINGLE   a single node (127.0.0.1:6379)
//
// A test against an unset variable is skipped with a message, except under
// CI=true, where it fails: CI must run them.
var targets = []string{"IDEM_TEST_REDIS", "IDEM_TEST_REDIS_SINGLE"}

// forEachTarget runs f as a subtest per target, with a client for it.
func forEachTarget(t *testing.T, f func(t *testing.T, rdb redis.UniversalClient)) {
	for _, env := range targets {
		t.Run(env, func(t *testing.T) {
			f(t, connect(t, env, nil))
		})
	}
}

// connect returns a client for the addresses in env, closed when the test
// ends; onNode, if not nil, is called for every node client a cluster
// client creates (for hooks that must see each connection's traffic).
func connect(t testing.TB, env string, onNode func(*redis.Client)) redis.UniversalClient {
	t.Helper()
	addrs := os.Getenv(env)
	if addrs == "" {
		hint := map[string]string{
			"IDEM_TEST_REDIS":        "the addresses scripts/redis-cluster.sh start prints",
			"IDEM_TEST_REDIS_SINGLE": "a single node, such as 127.0.0.1:6379",
		}[env]
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set and CI=true: the Redis tests must run (%s)", env, hint)
		}
		t.Skipf("set %s to run the Redis tests against it (%s)", env, hint)
	}
	list := strings.Split(addrs, ",")
	var rdb redis.UniversalClient
	if len(list) == 1 {
		c := redis.NewClient(&redis.Options{Addr: list[0]})
		if onNode != nil {
			onNode(c)
		}
		rdb = c
	} else {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: list})
		if onNode != nil {
			c.OnNewNode(onNode)
		}
		rdb = c
	}
	t.Cleanup(func() { rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, rdb.Ping(ctx).Err(), "%s=%s is set but unreachable", env, addrs)
	return rdb
}

// newStore returns a store on rdb under a fresh prefix, whose keys are
// deleted when the test ends.
func newStore(t testing.TB, rdb redis.UniversalClient, opts redisstore.Options) *redisstore.Store {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = testPrefix(t, rdb)
	}
	s, err := redisstore.New(rdb, opts)
	require.NoError(t, err)
	return s
}

// testPrefix returns a fresh key prefix; the keys under it are deleted when
// the test ends, so tests leave nothing in a shared Redis.
func testPrefix(t testing.TB, rdb redis.UniversalClient) string {
	prefix := "idemtest:" + rand.Text()[:10] + ":"
	t.Cleanup(func() { deleteKeys(t, rdb, prefix) })
	return prefix
}

func deleteKeys(t testing.TB, rdb redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	del := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := c.Del(ctx, iter.Val()).Err(); err != nil {
				return err
			}
		}
		return iter.Err()
	}
	var err error
	if c, ok := rdb.(*redis.ClusterClient); ok {
		err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return del(ctx, n) })
	} else {
		err = del(ctx, rdb)
	}
	if err != nil {
		t.Logf("deleting the test's keys under %q: %v", prefix, err)
	}
}

// replicated reports whether every master behind rdb has a connected
// replica, so that WAIT 1 can succeed.
func replicated(t testing.TB, rdb redis.UniversalClient) bool {
	t.Helper()
	ctx := context.Background()
	has := func(ctx context.Context, c *redis.Client) bool {
		info, err := c.Info(ctx, "replication").Result()
		require.NoError(t, err)
		return strings.Contains(info, "role:master") && !strings.Contains(info, "connected_slaves:0")
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		var missing atomic.Bool
		require.NoError(t, c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			if !has(ctx, n) {
				missing.Store(true)
			}
			return nil
		}))
		return !missing.Load()
	case *redis.Client:
		return has(ctx, c)
	}
	return false
}
