package redisstore_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/redisstore"
)

// TestEvictionBehindDisabledConfig is the finding of "Reliability round 3"
// at a small scale: Redis under volatile-lru with CONFIG renamed away (the
// managed-Redis default) evicts completed records when full, and keys
// re-sent after it are claimed again, so their work would run twice.
// Check used to pass such a server over (CONFIG refused: nil); it must
// read the policy from INFO and report it. The test uses only what Check
// had before Findings, so that it runs, and fails, on the old Check.
func TestEvictionBehindDisabledConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := privateRedis(t, "--maxmemory-policy", "volatile-lru", "--maxmemory", "4mb", "--rename-command", "CONFIG", "")
	s := newStore(t, rdb, redisstore.Options{Prefix: "evict:"})

	const n = 2000
	body := bytes.Repeat([]byte("r"), 2048)
	keys := make([]server.Key, n)
	for i := range keys {
		keys[i] = server.Key{Scope: "acct", Key: fmt.Sprintf("charge-%d", i)}
		c, err := s.Claim(ctx, keys[i], "fp", time.Minute)
		require.NoError(t, err)
		require.True(t, c.Acquired)
		require.NoError(t, s.Complete(ctx, keys[i], c.Token, server.StoredResponse{Status: 201, Body: body}, time.Hour))
	}
	pipe := rdb.Pipeline()
	exists := make([]*redis.IntCmd, n)
	for i, k := range keys {
		exists[i] = pipe.Exists(ctx, redisstore.RecordKey("evict:", k))
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	evicted := 0
	for _, e := range exists {
		if e.Val() == 0 {
			evicted++
		}
	}
	again := 0
	for _, k := range keys {
		c, err := s.Claim(ctx, k, "fp", time.Minute)
		require.NoError(t, err)
		if c.Acquired {
			again++ // the record is gone: the work would run a second time
		}
	}
	t.Logf("%d of %d completed records evicted; %d re-sent keys claimed again", evicted, n, again)
	require.Positive(t, evicted, "4 MB cannot hold %d records of 2 KiB", n)
	require.GreaterOrEqual(t, again, evicted, "every evicted key is claimed again")

	err = s.Check(ctx)
	require.ErrorIs(t, err, redisstore.ErrEvictionPolicy, "Check must not pass over a server that refuses CONFIG")
	assert.Contains(t, err.Error(), "volatile-lru")
}
