package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ErrEvictionPolicy is wrapped by the error Check returns when a Redis
// server's maxmemory-policy is not noeviction.
var ErrEvictionPolicy = errors.New("idem/redisstore: maxmemory-policy can evict idempotency records")

// Check reads maxmemory-policy from the Redis server, or from every master
// of a cluster, and returns an error wrapping [ErrEvictionPolicy] that
// names each server whose policy is anything but noeviction. Every other
// policy, the volatile ones included (every record has an expiry), lets
// Redis delete records to make room: an evicted running record lets a
// retry run its work again, and an evicted outcome is not replayed but
// re-run. Run it at start-up and log what it returns.
//
// A server that refuses CONFIG GET (the command renamed or disabled, or an
// ACL without it, as on many managed services) cannot be checked and is
// passed over: Check does not fail for it. Other failures, such as an
// unreachable server, are returned; a cancelled ctx returns its error.
func (s *Store) Check(ctx context.Context) error {
	c, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return checkPolicy(ctx, s.rdb, "")
	}
	var (
		mu   sync.Mutex
		errs []error
	)
	err := c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		if err := checkPolicy(ctx, node, node.Options().Addr); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return translate(ctx, "check", err)
	}
	return errors.Join(errs...)
}

// checkPolicy checks one server's maxmemory-policy; addr names it in the
// error, if known.
func checkPolicy(ctx context.Context, c redis.Cmdable, addr string) error {
	got, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
	var rerr redis.Error
	switch {
	case errors.As(err, &rerr):
		return nil // CONFIG refused: nothing can be told
	case err != nil:
		return translate(ctx, "check", err)
	}
	policy, ok := got["maxmemory-policy"]
	if !ok || policy == "noeviction" {
		return nil
	}
	if addr != "" {
		addr += ": "
	}
	return fmt.Errorf("redisstore: %smaxmemory-policy is %s, not noeviction: %w", addr, policy, ErrEvictionPolicy)
}
