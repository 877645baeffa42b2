package redisstore_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/redisstore"
)

// counted marks a context whose commands the roundTrips hook counts, so
// that the cluster client's own background traffic (layout reloads) is
// left out.
type counted struct{}

// roundTrips is a go-redis hook on every node client: each command sent
// alone and each pipeline is one round trip to a Redis server.
type roundTrips struct {
	mu    sync.Mutex
	trips int
	cmds  []string
}

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(ctx, cmd)
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.count(ctx, cmds...)
		return next(ctx, cmds)
	}
}

func (h *roundTrips) count(ctx context.Context, cmds ...redis.Cmder) {
	if ctx.Value(counted{}) == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.trips++
	names := ""
	for i, c := range cmds {
		if i > 0 {
			names += "+"
		}
		names += c.Name()
	}
	h.cmds = append(h.cmds, names)
}

// measure returns the round trips f makes with the context it is given,
// and the commands each carried.
func (h *roundTrips) measure(f func(ctx context.Context)) (int, []string) {
	h.mu.Lock()
	h.trips, h.cmds = 0, nil
	h.mu.Unlock()
	f(context.WithValue(context.Background(), counted{}, true))
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.trips, h.cmds
}

// _ checks that roundTrips is a hook.
var _ redis.Hook = (*roundTrips)(nil)

// TestRoundTrips counts, with a hook on the connections to every Redis
// node, the round trips of each store operation once the scripts are
// cached: one each, replays and in-flight checks included, with and
// without WaitReplicas (whose WAIT rides in the script's pipeline).
func TestRoundTrips(t *testing.T) {
	for _, env := range targets {
		t.Run(env, func(t *testing.T) {
			hook := &roundTrips{}
			rdb := connect(t, env, func(c *redis.Client) { c.AddHook(hook) })
			tests := []struct {
				name string
				opts redisstore.Options
			}{
				{"default", redisstore.Options{}},
				{"WaitReplicas", redisstore.Options{WaitReplicas: 1}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					if tt.opts.WaitReplicas > 0 && !replicated(t, rdb) {
						t.Skip("a master has no replica to wait for")
					}
					s := newStore(t, rdb, tt.opts)
					countRoundTrips(t, s, hook)
				})
			}
		})
	}
}

func countRoundTrips(t *testing.T, s *redisstore.Store, hook *roundTrips) {
	resp := server.StoredResponse{Status: http.StatusCreated, Header: http.Header{"A": {"b"}}, Body: []byte("ok")}
	const lease = time.Minute
	n := 0
	cycle := func(k server.Key, log bool) map[string]int {
		got := map[string]int{}
		one := func(name string, f func(ctx context.Context)) {
			trips, cmds := hook.measure(f)
			got[name] = trips
			if log {
				t.Logf("%s: %d round trip(s): %v", name, trips, cmds)
			}
		}
		var c server.Claim
		one("claim, new key", func(ctx context.Context) {
			var err error
			c, err = s.Claim(ctx, k, "fp", lease)
			require.NoError(t, err)
			require.True(t, c.Acquired)
		})
		one("claim, in flight", func(ctx context.Context) {
			c2, err := s.Claim(ctx, k, "fp", lease)
			require.NoError(t, err)
			require.False(t, c2.Acquired)
		})
		one("renew", func(ctx context.Context) { require.NoError(t, s.Renew(ctx, k, c.Token, lease)) })
		one("complete", func(ctx context.Context) { require.NoError(t, s.Complete(ctx, k, c.Token, resp, time.Hour)) })
		one("claim, replay", func(ctx context.Context) {
			c2, err := s.Claim(ctx, k, "fp", lease)
			require.NoError(t, err)
			require.True(t, c2.Record.Completed)
		})
		k.Key += "-released"
		one("claim, to release", func(ctx context.Context) {
			var err error
			c, err = s.Claim(ctx, k, "fp", lease)
			require.NoError(t, err)
		})
		one("release", func(ctx context.Context) { require.NoError(t, s.Release(ctx, k, c.Token)) })
		return got
	}
	key := func() server.Key {
		n++
		return server.Key{Scope: "tenant", Key: fmt.Sprintf("key-%d", n)}
	}
	// The first cycles load the scripts on the nodes (a second round
	// trip, EVAL, where EVALSHA found none) and the cluster's layout; the
	// keys spread over the slots, so warm every master (40 keys miss one
	// of three masters with odds of about 1 in 10^7).
	for range 40 {
		cycle(key(), false)
	}
	for name, trips := range cycle(key(), true) {
		assert.Equal(t, 1, trips, "round trips of %s", name)
	}
}
