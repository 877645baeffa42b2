package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/redisstore"
)

// commandLog is a go-redis hook that records the name of every command
// sent, alone or in a pipeline.
type commandLog struct {
	mu    sync.Mutex
	names map[string]bool
}

func (h *commandLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.add(cmd)
		return next(ctx, cmd)
	}
}

func (h *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.add(cmds...)
		return next(ctx, cmds)
	}
}

func (h *commandLog) add(cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cmds {
		h.names[c.Name()] = true
	}
}

func (h *commandLog) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.names = map[string]bool{}
}

func (h *commandLog) sent() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var names []string
	for n := range h.names {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// redisTime is the clock of the Redis server (of a cluster, of one of
// its masters; the test's servers share one host's clock).
func redisTime(t *testing.T, rdb redis.UniversalClient) time.Time {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	require.NoError(t, err)
	return now
}

// TestStatsAndRunning: Stats counts the records by state and Running
// lists the running keys, lapsing first, as claims and completions left
// them, for every scope or some; they pass over other keys under the
// prefix and send only SCAN, HMGET and TIME.
func TestStatsAndRunning(t *testing.T) {
	t.Parallel()
	for _, env := range targets {
		t.Run(env, func(t *testing.T) {
			t.Parallel()
			log := &commandLog{names: map[string]bool{}}
			rdb := connect(t, env, func(c *redis.Client) { c.AddHook(log) })
			// A prefix with glob characters: the scan must match it
			// literally.
			prefix := testPrefix(t, rdb) + "[*?]\\:"
			s := newStore(t, rdb, redisstore.Options{Prefix: prefix})
			ctx := context.Background()

			claim := func(scope, key string, lease time.Duration) (server.Key, string) {
				k := server.Key{Scope: scope, Key: key}
				c, err := s.Claim(ctx, k, "fp", lease)
				require.NoError(t, err)
				require.True(t, c.Acquired)
				return k, c.Token
			}
			complete := func(scope, key string) {
				k, token := claim(scope, key, time.Hour)
				require.NoError(t, s.Complete(ctx, k, token, server.StoredResponse{Status: 201}, time.Hour))
			}
			before := redisTime(t, rdb)
			lapsed, _ := claim("a", "lapsed", time.Millisecond)
			a1, _ := claim("a", "k1", 1*time.Hour)
			a2, _ := claim("a", "k2", 2*time.Hour)
			b1, _ := claim("b", "k1", 3*time.Hour)
			odd, _ := claim("x}*?[", "%}", 4*time.Hour)
			single, _ := claim("", "k1", 5*time.Hour)
			for i := range 3 {
				complete("a", fmt.Sprintf("done%d", i))
			}
			complete("b", "done")
			complete("", "done")
			after := redisTime(t, rdb)
			// Wait, on Redis's clock, for the 1 ms lease to lapse.
			for i := 0; !redisTime(t, rdb).After(after.Add(time.Millisecond)); i++ {
				require.Less(t, i, 10000, "Redis's clock does not advance")
			}
			// Keys under the prefix that are no record's.
			require.NoError(t, rdb.Set(ctx, prefix+"other", "x", time.Hour).Err())
			require.NoError(t, rdb.Set(ctx, prefix+"{01:ak}", "x", time.Hour).Err())

			tests := []struct {
				name    string
				scopes  []string
				want    redisstore.Stats
				running []server.Key
			}{
				{"every scope", nil, redisstore.Stats{Running: 5, Lapsed: 1, Completed: 5}, []server.Key{lapsed, a1, a2, b1, odd, single}},
				{"one scope", []string{"a"}, redisstore.Stats{Running: 2, Lapsed: 1, Completed: 3}, []server.Key{lapsed, a1, a2}},
				{"two scopes", []string{"b", ""}, redisstore.Stats{Running: 2, Completed: 2}, []server.Key{b1, single}},
				{"the empty scope", []string{""}, redisstore.Stats{Running: 1, Completed: 1}, []server.Key{single}},
				{"a scope of glob characters", []string{"x}*?["}, redisstore.Stats{Running: 1}, []server.Key{odd}},
				{"no such scope", []string{"c"}, redisstore.Stats{}, nil},
			}
			for _, tt := range tests {
				st, err := s.Stats(ctx, tt.scopes...)
				require.NoError(t, err, tt.name)
				assert.False(t, st.At.Before(after), "%s: At %v is before the claims", tt.name, st.At)
				st.At = time.Time{}
				assert.Equal(t, tt.want, st, tt.name)

				keys, err := s.Running(ctx, 0, tt.scopes...)
				require.NoError(t, err, tt.name)
				var got []server.Key
				for _, k := range keys {
					got = append(got, k.Key)
				}
				assert.Equal(t, tt.running, got, tt.name)
			}

			keys, err := s.Running(ctx, 0)
			require.NoError(t, err)
			require.Len(t, keys, 6)
			for i, k := range keys {
				assert.Equal(t, i == 0, k.Lapsed, "%v", k.Key)
				// The lease is the one asked for, on Redis's clock.
				lease := []time.Duration{time.Millisecond, 1 * time.Hour, 2 * time.Hour, 3 * time.Hour, 4 * time.Hour, 5 * time.Hour}[i]
				assert.False(t, k.LeaseExpires.Before(before.Add(lease).Truncate(time.Millisecond)), "%v: lease %v from %v", k.Key, k.LeaseExpires, before)
				assert.False(t, k.LeaseExpires.After(after.Add(lease)), "%v: lease %v to %v", k.Key, k.LeaseExpires, after)
			}

			// A limit keeps the keys lapsing first.
			for limit := 1; limit <= 7; limit++ {
				keys, err := s.Running(ctx, limit)
				require.NoError(t, err)
				var got []server.Key
				for _, k := range keys {
					got = append(got, k.Key)
				}
				assert.Equal(t, []server.Key{lapsed, a1, a2, b1, odd, single}[:min(limit, 6)], got, "limit %d", limit)
			}

			// Reading writes nothing.
			log.reset()
			_, err = s.Stats(ctx)
			require.NoError(t, err)
			_, err = s.Running(ctx, 2, "a")
			require.NoError(t, err)
			require.Contains(t, log.sent(), "scan")
			for _, name := range log.sent() {
				assert.Contains(t, []string{"scan", "hmget", "time", "cluster", "ping", "hello", "client"}, strings.ToLower(name), "Stats and Running sent %s", name)
			}
		})
	}
}

// TestStatsEmpty: a store with no records counts none, at Redis's clock.
func TestStatsEmpty(t *testing.T) {
	t.Parallel()
	forEachTarget(t, func(t *testing.T, rdb redis.UniversalClient) {
		s := newStore(t, rdb, redisstore.Options{})
		before := redisTime(t, rdb)
		st, err := s.Stats(context.Background())
		require.NoError(t, err)
		assert.False(t, st.At.Before(before.Truncate(time.Second)), "At %v, Redis's clock %v before", st.At, before)
		st.At = time.Time{}
		assert.Zero(t, st)
		keys, err := s.Running(context.Background(), 0)
		require.NoError(t, err)
		assert.Empty(t, keys)
	})
}

// TestStatsCancelled: a cancelled context is returned wrapped.
func TestStatsCancelled(t *testing.T) {
	t.Parallel()
	forEachTarget(t, func(t *testing.T, rdb redis.UniversalClient) {
		s := newStore(t, rdb, redisstore.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := s.Stats(ctx)
		assert.ErrorIs(t, err, context.Canceled)
		_, err = s.Running(ctx, 0)
		assert.ErrorIs(t, err, context.Canceled)
	})
}
