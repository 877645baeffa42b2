package main

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemhq/idem/internal/charges"
	"github.com/idemhq/idem/server/redisstore"
)

// withRedis keeps cfg's idempotency records in the Redis at addrs (more
// than one address: a cluster's seeds), the charges staying in the
// harness's memory, and returns the store's name and the client, for the
// caller to close. A Redis that would evict records is a warning: the run
// may then fail for it.
func withRedis(ctx context.Context, cfg *charges.Config, addrs string) (string, redis.UniversalClient, error) {
	seeds := strings.Split(addrs, ",")
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: seeds})
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return "", nil, fmt.Errorf("redis %s: %v", addrs, err)
	}
	store, err := redisstore.New(rdb, redisstore.Options{})
	if err != nil {
		rdb.Close()
		return "", nil, err
	}
	if err := store.Check(ctx); err != nil {
		fmt.Println("chaos: warning:", err)
	}
	cfg.Store = store
	if len(seeds) > 1 {
		return "Redis Cluster at " + addrs, rdb, nil
	}
	return "Redis at " + addrs, rdb, nil
}

// redisLog counts what go-redis logs instead of printing it: while a
// killed master's slots move, every dial to it is logged, and the run's
// output would drown. The harness prints the count.
type redisLog struct{ n atomic.Int64 }

func (l *redisLog) Printf(context.Context, string, ...any) { l.n.Add(1) }

// clusterScript runs scripts/redis-cluster.sh (or the script at path)
// with args, bounded in time. The script finds the nodes it started by
// the ports in IDEM_REDIS_PORTS; unless the environment sets them, they
// are the ports of -redis, which must then be the addresses the script's
// start printed.
func clusterScript(ctx context.Context, path, addrs string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = os.Environ()
	if os.Getenv("IDEM_REDIS_PORTS") == "" {
		var ports []string
		for _, a := range strings.Split(addrs, ",") {
			_, port, _ := strings.Cut(a, ":")
			ports = append(ports, port)
		}
		cmd.Env = append(cmd.Env, "IDEM_REDIS_PORTS="+strings.Join(ports, " "))
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v: %s", path, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// masters returns the addresses of the online masters that serve slots,
// sorted, and whether every shard that holds slots has one.
func masters(ctx context.Context, rdb *redis.ClusterClient) ([]string, bool, error) {
	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil {
		return nil, false, err
	}
	var out []string
	served := true
	for _, sh := range shards {
		if len(sh.Slots) == 0 {
			continue
		}
		i := slices.IndexFunc(sh.Nodes, func(n redis.Node) bool { return n.Role == "master" && n.Health == "online" })
		if i < 0 {
			served = false
			continue
		}
		out = append(out, net.JoinHostPort(sh.Nodes[i].IP, strconv.FormatInt(sh.Nodes[i].Port, 10)))
	}
	slices.Sort(out)
	return out, served, nil
}

// killMaster SIGKILLs one master of the cluster behind rdb, chosen by rng,
// through the cluster script, then waits until the cluster no longer maps
// a slot to it (a replica was promoted), and reports what it did and how
// long the dead master's slots were unserved.
func killMaster(ctx context.Context, rdb redis.UniversalClient, script, addrs string, rng *mrand.Rand) (string, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return "", errors.New("-kill-redis-master needs a cluster: give -redis its seeds, comma-separated")
	}
	ms, _, err := masters(ctx, cc)
	if err != nil {
		return "", err
	}
	if len(ms) == 0 {
		return "", errors.New("CLUSTER SLOTS names no master")
	}
	victim := ms[rng.IntN(len(ms))]
	_, port, _ := strings.Cut(victim, ":")
	start := time.Now()
	if err := clusterScript(ctx, script, addrs, "kill", port); err != nil {
		return "", err
	}
	for deadline := start.Add(time.Minute); ; {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("killed master %s: no replica took its slots within a minute", victim)
		}
		time.Sleep(50 * time.Millisecond) // bounded by the deadline
		cc.ReloadState(ctx)
		if ms, served, err := masters(ctx, cc); err == nil && served && !slices.Contains(ms, victim) {
			return fmt.Sprintf("killed Redis master %s mid-run; a replica served its slots %v later",
				victim, time.Since(start).Round(time.Millisecond)), nil
		}
	}
}
