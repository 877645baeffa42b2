package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/redisstore"
)

// testRedis returns the addresses env names: IDEM_TEST_REDIS, the seeds of
// the cluster scripts/redis-cluster.sh starts, or IDEM_TEST_REDIS_SINGLE,
// one node. Without it the test is skipped, unless CI=true, where it
// fails: the store's tests must run there.
func testRedis(t testing.TB, env string) string {
	t.Helper()
	addrs := os.Getenv(env)
	if addrs == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set and CI=true: the Redis tests must run", env)
		}
		t.Skipf("set %s to run the Redis store's tests (IDEM_TEST_REDIS: the seeds scripts/redis-cluster.sh start prints; IDEM_TEST_REDIS_SINGLE: 127.0.0.1:6379)", env)
	}
	return addrs
}

// redisFixture is a Redis store's records under a fresh prefix, deleted
// when the test ends: per scope, keys running under a live lease, running
// under a lapsed one, and completed.
type redisFixture struct {
	addrs, prefix string
	// running lists the running keys, lapsing first.
	running []server.Key
}

func newRedisFixture(t *testing.T, env string) *redisFixture {
	t.Helper()
	f := &redisFixture{addrs: testRedis(t, env), prefix: "idemcmdtest:" + rand.Text()[:10] + ":"}
	var rdb redis.UniversalClient
	if addrs := strings.Split(f.addrs, ","); len(addrs) == 1 {
		rdb = redis.NewClient(&redis.Options{Addr: addrs[0]})
	} else {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	}
	t.Cleanup(func() {
		deleteRedisKeys(t, rdb, f.prefix)
		rdb.Close()
	})
	s, err := redisstore.New(rdb, redisstore.Options{Prefix: f.prefix})
	require.NoError(t, err)
	ctx := context.Background()
	claim := func(scope, key string, lease time.Duration) (server.Key, string) {
		k := server.Key{Scope: scope, Key: key}
		c, err := s.Claim(ctx, k, "fp", lease)
		require.NoError(t, err)
		require.True(t, c.Acquired)
		return k, c.Token
	}
	// Running, lapsing first: a/k003's lease lapses at once.
	for _, r := range []struct {
		scope, key string
		lease      time.Duration
	}{{"a", "k003", time.Millisecond}, {"a", "k001", time.Hour}, {"a", "k002", 2 * time.Hour}, {"b", "k009", 3 * time.Hour}} {
		k, _ := claim(r.scope, r.key, r.lease)
		f.running = append(f.running, k)
	}
	for i, scope := range []string{"a", "a", "a", "b"} {
		k, token := claim(scope, fmt.Sprintf("done%d", i), time.Hour)
		require.NoError(t, s.Complete(ctx, k, token, server.StoredResponse{Status: 201}, time.Hour))
	}
	// Wait, on Redis's clock, for a/k003's 1 ms lease to lapse.
	clock := func() time.Time {
		now, err := rdb.Time(ctx).Result()
		require.NoError(t, err)
		return now
	}
	after := clock()
	for i := 0; !clock().After(after.Add(time.Millisecond)); i++ {
		require.Less(t, i, 10000, "Redis's clock does not advance")
	}
	return f
}

func deleteRedisKeys(t testing.TB, rdb redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	del := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := c.Del(ctx, iter.Val()).Err(); err != nil {
				return err
			}
		}
		return iter.Err()
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, del)
	case *redis.Client:
		err = del(ctx, c)
	}
	if err != nil {
		t.Logf("deleting the test's keys under %q: %v", prefix, err)
	}
}

// TestKeysLsRedis: keys ls --redis counts the fixture's records by state
// and lists its running keys lapsing first, as --state, --scope and
// --limit select, on one node, on a cluster through its seeds, and on a
// cluster through one of its nodes.
func TestKeysLsRedis(t *testing.T) {
	t.Parallel()
	targets := []struct{ name, env string }{
		{"single", "IDEM_TEST_REDIS_SINGLE"},
		{"cluster", "IDEM_TEST_REDIS"},
		{"cluster through one node", "IDEM_TEST_REDIS"},
	}
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) {
			t.Parallel()
			f := newRedisFixture(t, target.env)
			addrs := f.addrs
			if target.name == "cluster through one node" {
				addrs, _, _ = strings.Cut(addrs, ",")
			}
			ptr := func(n int) *int { return &n }
			keys := func(ks ...server.Key) []string {
				var out []string
				for _, k := range ks {
					out = append(out, k.Scope+"/"+k.Key)
				}
				return out
			}
			tests := []struct {
				name    string
				args    []string
				counts  countsJSON
				running []string // scope/key, in order
				more    bool
			}{{
				name:    "every state",
				counts:  countsJSON{Running: ptr(3), Lapsed: ptr(1), Completed: ptr(4)},
				running: keys(f.running...),
			}, {
				name:    "running",
				args:    []string{"--state", "running"},
				counts:  countsJSON{Running: ptr(3), Lapsed: ptr(1)},
				running: keys(f.running...),
			}, {
				name:   "completed",
				args:   []string{"--state", "completed"},
				counts: countsJSON{Completed: ptr(4)},
			}, {
				name:    "one scope",
				args:    []string{"--scope", "b"},
				counts:  countsJSON{Running: ptr(1), Lapsed: ptr(0), Completed: ptr(1)},
				running: keys(f.running[3]),
			}, {
				name:    "limit",
				args:    []string{"--state", "running", "--limit", "2"},
				counts:  countsJSON{Running: ptr(3), Lapsed: ptr(1)},
				running: keys(f.running[:2]...), more: true,
			}}
			for _, tt := range tests {
				args := append([]string{"keys", "ls", "--json", "--redis", addrs, "--redis-prefix", f.prefix}, tt.args...)
				r := runIdem(t, "", nil, args...)
				require.Equal(t, exitOK, r.code, "%s: %s", tt.name, r.stderr)
				var got keysJSON
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
				assert.Equal(t, addrs, got.Redis, tt.name)
				assert.Equal(t, f.prefix, got.Prefix, tt.name)
				assert.Empty(t, got.Table, tt.name)
				assert.Equal(t, tt.counts, got.Counts, tt.name)
				var running []string
				for _, k := range got.Running {
					running = append(running, k.Scope+"/"+k.Key)
					assert.Equal(t, k.Scope+"/"+k.Key == "a/k003", k.Lapsed, "%s: %s", tt.name, k.Key)
					assert.Equal(t, k.Lapsed, k.LeaseExpires.Before(got.At), "%s: %s", tt.name, k.Key)
					assert.Nil(t, k.Since, "Redis records no claim time")
					assert.Nil(t, k.TakenOver, "Redis records no takeover")
				}
				assert.Equal(t, tt.running, running, tt.name)
				assert.Equal(t, tt.more, got.More, tt.name)
			}

			// The table.
			name := addrs
			if target.env == "IDEM_TEST_REDIS" {
				name += " (cluster)"
			}
			r := runIdem(t, "", []string{redisEnv + "=" + addrs}, "keys", "ls", "--redis-prefix", f.prefix)
			require.Equal(t, exitOK, r.code, r.stderr)
			// The test servers persist nothing: keys ls says what that
			// costs, on stderr, and nothing else goes there.
			for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
				assert.Regexp(t, `^idem: (notice|warning|critical): redisstore: `, l)
			}
			assert.Contains(t, r.stderr, "appendonly", "a Redis without persistence is named")
			for _, line := range []string{
				`^redis ` + regexp.QuoteMeta(name) + `, prefix "idemcmdtest:[A-Z0-9]+:", at \S+ \(Redis's clock\)$`,
				`^STATE +RECORDS$`,
				`^running +3$`,
				`^lapsed +1$`,
				`^completed +4$`,
				`^running keys, lapsing first:$`,
				`^SCOPE +KEY +LEASE$`,
				`^a +k003 +lapsed [0-9]+s ago$`,
				`^a +k001 +lapses in (59m|1h)$`,
				`^b +k009 +lapses in [23]h$`,
			} {
				assert.Regexp(t, "(?m)"+line, r.stdout)
			}
			assert.NotContains(t, r.stdout, "expired")
			assert.NotContains(t, r.stdout, "purgeable")

			// purge deletes nothing: Redis expires the records itself.
			r = runIdem(t, "", nil, "keys", "purge", "--redis", addrs, "--redis-prefix", f.prefix)
			require.Equal(t, exitOK, r.code, r.stderr)
			assert.Contains(t, r.stdout, "nothing to purge in redis "+addrs+": Redis deletes each record itself")
			r = runIdem(t, "", nil, "keys", "purge", "--json", "--redis", addrs, "--redis-prefix", f.prefix)
			require.Equal(t, exitOK, r.code, r.stderr)
			assert.JSONEq(t, `{"purged": 0}`, r.stdout)
			r = runIdem(t, "", nil, "keys", "ls", "--json", "--redis", addrs, "--redis-prefix", f.prefix)
			require.Equal(t, exitOK, r.code, r.stderr)
			var got keysJSON
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
			assert.Equal(t, 3+1+4, *got.Counts.Running+*got.Counts.Lapsed+*got.Counts.Completed)
		})
	}
}

// TestKeysRedisUsage: the flags that select a store, and those of one
// store given to the other, are refused before anything is reached.
func TestKeysRedisUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"both flags", nil, []string{"--database", "postgres://db/x", "--redis", "127.0.0.1:1"}, "--database and --redis name two stores: pass one"},
		{"both variables", []string{databaseEnv + "=postgres://db/x", redisEnv + "=127.0.0.1:1"}, nil, "both IDEM_DATABASE and IDEM_REDIS are set: pass --database or --redis"},
		{"neither", nil, nil, "no store: pass --database DSN or --redis ADDR, or set IDEM_DATABASE or IDEM_REDIS"},
		{"--table with --redis", nil, []string{"--redis", "127.0.0.1:1", "--table", "t"}, "--table is for a PostgreSQL store, not --redis"},
		{"--abandon with --redis", []string{redisEnv + "=127.0.0.1:1"}, []string{"--abandon", "1h"}, "--abandon is for a PostgreSQL store, not --redis"},
		{"--redis-prefix with --database", nil, []string{"--database", "postgres://db/x", "--redis-prefix", "p:"}, "--redis-prefix is for a Redis store, not --database"},
		{"not an address", nil, []string{"--redis", "localhost"}, `--redis "localhost": want host:port[,host:port...] or a redis:// URL`},
	}
	for _, tt := range tests {
		for _, sub := range []string{"ls", "purge"} {
			t.Run(tt.name+"/"+sub, func(t *testing.T) {
				t.Parallel()
				r := runIdem(t, "", tt.env, append([]string{"keys", sub}, tt.args...)...)
				assert.Equal(t, exitUsage, r.code)
				assert.Contains(t, r.stderr, "idem: "+tt.want+"\n")
			})
		}
	}
}
