package bench_test

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemhq/idem/server/etcdstore"
	"github.com/idemhq/idem/server/etcdstore/internal/cluster"
	"github.com/idemhq/idem/server/etcdstore/internal/httpbench"
	"github.com/idemhq/idem/server/redisstore"
)

// BenchmarkStores runs the same requests through server.Middleware on
// etcdstore (three members embedded in the test binary, fsync on) and,
// if IDEM_TEST_REDIS is set, on redisstore on that Redis Cluster: a new
// key, a replay, and new keys from 16 concurrent clients, side by side.
func BenchmarkStores(b *testing.B) {
	b.Run("etcd", func(b *testing.B) {
		c, err := cluster.Start(b.TempDir(), 3, cluster.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		cli, err := c.Client()
		if err != nil {
			b.Fatal(err)
		}
		defer cli.Close()
		store, err := etcdstore.New(cli, etcdstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		httpbench.Run(b, store)
	})
	b.Run("redis-cluster", func(b *testing.B) {
		seeds := os.Getenv("IDEM_TEST_REDIS")
		if seeds == "" {
			b.Skip("set IDEM_TEST_REDIS to the seeds scripts/redis-cluster.sh start prints")
		}
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(seeds, ",")})
		defer rdb.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rdb.Ping(ctx).Err(); err != nil {
			b.Fatalf("IDEM_TEST_REDIS=%s is set but unreachable: %v", seeds, err)
		}
		prefix := "idembench:" + rand.Text()[:10] + ":"
		defer deleteKeys(rdb, prefix)
		store, err := redisstore.New(rdb, redisstore.Options{Prefix: prefix})
		if err != nil {
			b.Fatal(err)
		}
		httpbench.Run(b, store)
	})
}

// deleteKeys deletes the benchmark's keys from every master.
func deleteKeys(rdb *redis.ClusterClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = rdb.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		iter := n.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := n.Del(ctx, iter.Val()).Err(); err != nil {
				return err
			}
		}
		return iter.Err()
	})
}
