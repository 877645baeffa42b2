package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server/redisstore"
)

// found is a Finding's kind and severity, what callers branch on.
type found struct {
	Err      error
	Severity redisstore.Severity
}

func kinds(fs []redisstore.Finding) []found {
	out := []found{}
	for _, f := range fs {
		out = append(out, found{f.Err, f.Severity})
	}
	return out
}

// fixes is the change each kind's message must name.
var fixes = map[error]string{
	redisstore.ErrEvictionPolicy:  "maxmemory-policy noeviction",
	redisstore.ErrNoPersistence:   "appendonly yes and appendfsync always",
	redisstore.ErrWeakPersistence: "appendfsync always",
	redisstore.ErrAsyncReplicas:   "Options.WaitReplicas",
	redisstore.ErrTooFewReplicas:  "Options.WaitReplicas",
	redisstore.ErrUnverified:      "confirm",
}

// TestCheck reads the eviction policy of the test targets (both run
// noeviction) and of private servers configured otherwise: a server that
// refuses CONFIG is read through INFO.
func TestCheck(t *testing.T) {
	t.Run("targets", func(t *testing.T) {
		forEachTarget(t, func(t *testing.T, rdb redis.UniversalClient) {
			require.NoError(t, newStore(t, rdb, redisstore.Options{}).Check(context.Background()))
		})
	})
	tests := []struct {
		name    string
		args    []string
		evicts  bool
		message string
	}{
		{"noeviction", []string{"--maxmemory-policy", "noeviction"}, false, ""},
		{"allkeys-lru", []string{"--maxmemory-policy", "allkeys-lru"}, true, "allkeys-lru"},
		{"volatile-ttl evicts records, which all expire", []string{"--maxmemory-policy", "volatile-ttl"}, true, "volatile-ttl"},
		{"CONFIG disabled: read from INFO", []string{"--maxmemory-policy", "allkeys-lru", "--rename-command", "CONFIG", ""}, true, "allkeys-lru"},
		{"CONFIG disabled, noeviction", []string{"--maxmemory-policy", "noeviction", "--rename-command", "CONFIG", ""}, false, ""},
		{"INFO disabled: read from CONFIG", []string{"--maxmemory-policy", "volatile-lfu", "--rename-command", "INFO", ""}, true, "volatile-lfu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rdb := privateRedis(t, tt.args...)
			err := newStore(t, rdb, redisstore.Options{}).Check(context.Background())
			if !tt.evicts {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, redisstore.ErrEvictionPolicy)
			assert.Contains(t, err.Error(), tt.message)
			assert.Contains(t, err.Error(), "maxmemory-policy noeviction", "the message names the fix")
			var f redisstore.Finding
			require.ErrorAs(t, err, &f)
			assert.Equal(t, redisstore.Critical, f.Severity)
		})
	}
}

// TestFindings reads private servers configured as each finding needs:
// what Findings returns, and what Check returns of it.
func TestFindings(t *testing.T) {
	const (
		critical = redisstore.Critical
		warning  = redisstore.Warning
		notice   = redisstore.Notice
	)
	var (
		evicting  = redisstore.ErrEvictionPolicy
		none      = redisstore.ErrNoPersistence
		weak      = redisstore.ErrWeakPersistence
		fewer     = redisstore.ErrTooFewReplicas
		unknown   = redisstore.ErrUnverified
		durable   = []string{"--appendonly", "yes", "--appendfsync", "always"}
		noConfig  = []string{"--rename-command", "CONFIG", ""}
		noInfo    = []string{"--rename-command", "INFO", ""}
		noevicted = []string{"--maxmemory-policy", "noeviction"}
	)
	tests := []struct {
		name  string
		args  []string
		opts  redisstore.Options
		want  []found
		check error // what Check's error wraps, nil for none
	}{
		{"noeviction, appendonly yes, appendfsync always: clean",
			concat(noevicted, durable), redisstore.Options{}, []found{}, nil},
		{"no persistence: a restart forgets every key",
			noevicted, redisstore.Options{}, []found{{none, warning}}, nil},
		{"appendfsync everysec: about 1 s lost in a crash",
			concat(noevicted, []string{"--appendonly", "yes", "--appendfsync", "everysec"}), redisstore.Options{}, []found{{weak, notice}}, nil},
		{"appendfsync no: what the OS has not written is lost",
			concat(noevicted, []string{"--appendonly", "yes", "--appendfsync", "no"}), redisstore.Options{}, []found{{weak, warning}}, nil},
		{"RDB snapshots only: everything since the last is lost",
			concat(noevicted, []string{"--save", "3600 1"}), redisstore.Options{}, []found{{weak, warning}}, nil},
		{"volatile-lru with CONFIG renamed: the policy from INFO, save unknown",
			concat([]string{"--maxmemory-policy", "volatile-lru"}, noConfig), redisstore.Options{},
			[]found{{evicting, critical}, {unknown, warning}}, evicting},
		{"CONFIG renamed, AOF on: appendfsync unknown",
			concat(noevicted, durable, noConfig), redisstore.Options{}, []found{{unknown, notice}}, nil},
		{"INFO renamed: read from CONFIG, replicas unknown",
			concat([]string{"--maxmemory-policy", "allkeys-lru"}, durable, noInfo), redisstore.Options{},
			[]found{{evicting, critical}, {unknown, notice}}, evicting},
		{"INFO and CONFIG renamed: cannot verify",
			concat(noevicted, durable, noInfo, noConfig), redisstore.Options{}, []found{{unknown, critical}}, unknown},
		{"WaitReplicas 1 without a replica: claims refused",
			concat(noevicted, durable), redisstore.Options{WaitReplicas: 1}, []found{{fewer, warning}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newStore(t, privateRedis(t, tt.args...), tt.opts)
			fs, err := s.Findings(ctx)
			require.NoError(t, err)
			assert.Equal(t, tt.want, kinds(fs))
			for _, f := range fs {
				assert.Empty(t, f.Addr, "a one-node client names no master")
				assert.ErrorIs(t, f, f.Err)
				assert.Contains(t, f.Error(), fixes[f.Err], "the message names the fix")
				t.Logf("%s: %v", f.Severity, f)
			}

			err = s.Check(ctx)
			if tt.check == nil {
				require.NoError(t, err, "only critical findings fail Check")
				return
			}
			require.ErrorIs(t, err, tt.check)
			for _, other := range []error{evicting, unknown} {
				if other != tt.check {
					assert.NotErrorIs(t, err, other)
				}
			}
		})
	}
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestFindingsReplicas reads a master with one connected replica against
// Options.WaitReplicas: without it a failover loses acknowledged records,
// with it nothing is found, and asking for more replicas than there are
// refuses every claim.
func TestFindingsReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := privateRedis(t, "--maxmemory-policy", "noeviction", "--appendonly", "yes", "--appendfsync", "always")
	host, port, err := net.SplitHostPort(primary.Options().Addr)
	require.NoError(t, err)
	replica := privateRedis(t, "--maxmemory-policy", "noeviction", "--appendonly", "yes", "--appendfsync", "always",
		"--replicaof", host, port)
	require.Eventually(t, func() bool {
		info, err := primary.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "connected_slaves:1")
	}, 10*time.Second, 20*time.Millisecond, "the replica never connected")

	tests := []struct {
		name string
		wait int
		want []found
	}{
		{"WaitReplicas 0: a failover loses records", 0, []found{{redisstore.ErrAsyncReplicas, redisstore.Warning}}},
		{"WaitReplicas 1: clean", 1, []found{}},
		{"WaitReplicas 2: more than there are", 2, []found{{redisstore.ErrTooFewReplicas, redisstore.Warning}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t, primary, redisstore.Options{WaitReplicas: tt.wait})
			fs, err := s.Findings(ctx)
			require.NoError(t, err)
			assert.Equal(t, tt.want, kinds(fs))
			for _, f := range fs {
				assert.Contains(t, f.Error(), "Options.WaitReplicas")
				t.Logf("%s: %v", f.Severity, f)
			}
			require.NoError(t, s.Check(ctx), "replication findings do not fail Check")
		})
	}
	t.Run("the replica itself", func(t *testing.T) {
		fs, err := newStore(t, replica, redisstore.Options{}).Findings(ctx)
		require.NoError(t, err)
		assert.Equal(t, []found{}, kinds(fs), "a replica has no replicas to wait for")
	})
}

// TestFindingsTargets reads the test targets: nothing critical (they run
// noeviction), and on a cluster every master is read: each one with a
// replica is reported with Options.WaitReplicas 0, under its address.
func TestFindingsTargets(t *testing.T) {
	forEachTarget(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		fs, err := newStore(t, rdb, redisstore.Options{}).Findings(ctx)
		require.NoError(t, err)
		for _, f := range fs {
			assert.NotEqual(t, redisstore.Critical, f.Severity, "%v", f)
			t.Logf("%s: %v", f.Severity, f)
		}
		c, ok := rdb.(*redis.ClusterClient)
		if !ok {
			return
		}
		var (
			mu      sync.Mutex
			masters []string
		)
		require.NoError(t, c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			mu.Lock() // ForEachMaster calls f concurrently
			defer mu.Unlock()
			masters = append(masters, n.Options().Addr)
			return nil
		}))
		if !replicated(t, rdb) {
			t.Skip("a master of the cluster has no replica")
		}
		var async []string
		for _, f := range fs {
			if errors.Is(f, redisstore.ErrAsyncReplicas) {
				async = append(async, f.Addr)
			}
		}
		assert.ElementsMatch(t, masters, async, "one finding per master, under its address")
	})
}

// TestCheckUnreachable: a server that cannot be reached is an error, not a
// finding, and a cancelled context returns its error.
func TestCheckUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	s, err := redisstore.New(rdb, redisstore.Options{})
	require.NoError(t, err)

	fs, err := s.Findings(context.Background())
	require.Error(t, err)
	assert.Empty(t, fs)
	err = s.Check(context.Background())
	require.Error(t, err)
	var f redisstore.Finding
	assert.False(t, errors.As(err, &f), "an unreachable server is not a finding: %v", err)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, s.Check(ctx), context.Canceled)
}

// Print what Redis does with the records at start-up, most severe first.
// (Compiled, not run: it needs a Redis.)
func ExampleStore_Findings() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	store, _ := redisstore.New(rdb, redisstore.Options{})

	findings, err := store.Findings(ctx)
	if err != nil {
		fmt.Println("Redis settings not read:", err)
	}
	for _, f := range findings {
		fmt.Printf("%s: %v\n", f.Severity, f) // critical: maxmemory-policy volatile-lru ...
		if errors.Is(f, redisstore.ErrNoPersistence) {
			fmt.Println("a Redis restart runs every re-sent key again")
		}
	}
}
