package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemhq/idem/internal/charges"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/redisstore"
)

// redisTrips is a go-redis hook on every node client: each command sent
// alone and each pipeline is one round trip to a Redis server. It counts
// everything, the cluster client's own layout reloads included (rare:
// one a minute, or after an error).
type redisTrips struct{ n atomic.Int64 }

func (h *redisTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *redisTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *redisTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// connectRedis returns a client for addrs (comma-separated: a cluster's
// seeds) whose every node connection counts its round trips in trips.
func connectRedis(addrs string, trips *redisTrips) redis.UniversalClient {
	seeds := strings.Split(addrs, ",")
	var rdb redis.UniversalClient
	if len(seeds) > 1 {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, PoolSize: 64})
		c.OnNewNode(func(n *redis.Client) { n.AddHook(trips) })
		rdb = c
	} else {
		c := redis.NewClient(&redis.Options{Addr: seeds[0], PoolSize: 64})
		c.AddHook(trips)
		rdb = c
	}
	ctx, cancel := contextWithTimeout(10 * time.Second)
	defer cancel()
	must(rdb.Ping(ctx).Err())
	return rdb
}

// redisName is the store's name in the tables: redisstore, and on what.
func (e env) redisName() string {
	if _, ok := e.redis.(*redis.ClusterClient); ok {
		return "redisstore (cluster)"
	}
	return "redisstore"
}

// redisPrefix is the key prefix of one use of the store, named by table,
// so that uses never meet and each is deleted after it.
func redisPrefix(table string) string { return "idembench:" + table + ":" }

// newRedisStore is a redisstore on e's Redis under the prefix of table.
func (e env) newRedisStore(table string) *redisstore.Store {
	s, err := redisstore.New(e.redis, redisstore.Options{Prefix: redisPrefix(table)})
	must(err)
	return s
}

// forgetRedis deletes the keys of the use named by table.
func (e env) forgetRedis(table string) {
	ctx, cancel := contextWithTimeout(time.Minute)
	defer cancel()
	del := func(ctx context.Context, c *redis.Client) error {
		it := c.Scan(ctx, 0, redisPrefix(table)+"*", 1000).Iterator()
		for it.Next(ctx) {
			if err := c.Del(ctx, it.Val()).Err(); err != nil {
				return err
			}
		}
		return it.Err()
	}
	var err error
	switch c := e.redis.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, del)
	case *redis.Client:
		err = del(ctx, c)
	}
	if err != nil {
		fmt.Printf("(deleting the keys under %s: %v)\n", redisPrefix(table), err)
	}
}

// redisClaims measures redisstore's Store.Claim alone: one script, one
// round trip.
func redisClaims(cfg config, e env) *claimResult {
	tbl := tableName("claims")
	defer e.forgetRedis(tbl)
	res := &claimResult{
		title:     "Server: " + e.redisName() + " Store.Claim alone: one script, one round trip",
		freshRow:  "new key",
		replayRow: "replay (the script writes nothing)",
	}
	res.fresh, res.replay = timeClaims(cfg, e.newRedisStore(tbl))
	return res
}

// countRedisTrips sends a new key and a replay through s, a redisstore
// setup, ten times each, and returns how many round trips each took: one
// number if they all took as many, else the least and the most.
func countRedisTrips(s setup, trips *redisTrips, replayKey string) (fresh, replay string) {
	count := func(key func() string) string {
		var seen []int64
		for range 10 {
			before := trips.n.Load()
			postCharge(s.http, s.url, key())
			seen = append(seen, trips.n.Load()-before)
		}
		lo, hi := slices.Min(seen), slices.Max(seen)
		if lo == hi {
			return fmt.Sprint(lo)
		}
		return fmt.Sprintf("%d–%d", lo, hi)
	}
	return count(func() string { return newKey() }), count(func() string { return replayKey })
}

// takeoverLease is the lease of the crashed worker redisTakeover plays:
// short, so that the run does not wait out the default 30 s.
const takeoverLease = time.Second

// redisTakeover plays a worker that claimed a key and crashed: it claims
// the key as the middleware would, under a lease of takeoverLease, and
// never renews or completes it. It reports how long a retry waited for
// the key, which it gets once the lease lapsed on Redis's clock.
func redisTakeover(e env) func(cfg charges.Config, url string) string {
	return func(cfg charges.Config, url string) string {
		key := newKey()
		c, err := e.newRedisStore(cfg.Table).Claim(context.Background(), server.Key{Scope: "bench", Key: key}, chargeFingerprint(url), takeoverLease)
		must(err)
		if !c.Acquired {
			return "claim failed"
		}
		try, after, ok := retryUntilCreated(url, key, takeoverLease+5*time.Second)
		if !ok {
			return "NO: the key stayed claimed past its lease"
		}
		return fmt.Sprintf("yes: retry %d ran, answered %s after the claim (the crashed worker's lease %s; handler %s)",
			try, ms(after), dur(takeoverLease), dur(cfg.Delay))
	}
}
