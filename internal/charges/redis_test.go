package charges

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server/redisstore"
)

// redisStores returns, for each of IDEM_TEST_REDIS (a cluster's seeds)
// and IDEM_TEST_REDIS_SINGLE (one node) that is set, a redisstore under a
// fresh prefix whose keys are deleted when the test ends. Under CI=true
// an unset IDEM_TEST_REDIS fails the test.
func redisStores(t *testing.T) map[string]*redisstore.Store {
	out := map[string]*redisstore.Store{}
	for name, env := range map[string]string{"redis cluster": "IDEM_TEST_REDIS", "redis": "IDEM_TEST_REDIS_SINGLE"} {
		addrs := os.Getenv(env)
		if addrs == "" {
			if env == "IDEM_TEST_REDIS" && os.Getenv("CI") == "true" {
				t.Fatal("IDEM_TEST_REDIS is not set; CI needs the Redis Cluster tests")
			}
			t.Logf("%s not set: the %s variant skipped", env, name)
			continue
		}
		// More than one address makes a cluster client.
		rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: strings.Split(addrs, ",")})
		t.Cleanup(func() { rdb.Close() })
		prefix := "idemcharges:" + rand.Text()[:10] + ":"
		t.Cleanup(func() { forget(t, rdb, prefix) })
		s, err := redisstore.New(rdb, redisstore.Options{Prefix: prefix})
		require.NoError(t, err)
		out[name] = s
	}
	return out
}

// forget deletes the keys under prefix on every master.
func forget(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	scan := func(ctx context.Context, c *redis.Client) error {
		it := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
		for it.Next(ctx) {
			if err := c.Del(ctx, it.Val()).Err(); err != nil {
				return err
			}
		}
		return it.Err()
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	}
	if err != nil {
		t.Logf("deleting the keys under %q: %v", prefix, err)
	}
}
