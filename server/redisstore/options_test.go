package redisstore

import (
	"testing"
	"time"

	"github.com/idemhq/idem/server"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOptionsDefaults(t *testing.T) {
	t.Parallel()
	c, err := Options{}.config()
	require.NoError(t, err)
	assert.Equal(t, config{
		prefix:      DefaultPrefix,
		abandonMS:   server.DefaultAbandon.Milliseconds(),
		maxResponse: DefaultMaxResponse,
		waitTimeout: DefaultWaitTimeout,
	}, c)
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	single := redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"})
	t.Cleanup(func() { single.Close() })
	quick := redis.NewClient(&redis.Options{Addr: "127.0.0.1:0", ReadTimeout: time.Second})
	t.Cleanup(func() { quick.Close() })
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:0"}})
	t.Cleanup(func() { ring.Close() })
	tests := []struct {
		name string
		rdb  redis.UniversalClient
		opts Options
	}{
		{"nil client", nil, Options{}},
		{"brace in prefix", single, Options{Prefix: "idem:{x}:"}},
		{"negative abandon", single, Options{Abandon: -time.Second}},
		{"negative max response", single, Options{MaxResponse: -1}},
		{"WAIT through a ring", ring, Options{WaitReplicas: 1}},
		{"WaitTimeout past ReadTimeout", quick, Options{WaitReplicas: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.rdb, tt.opts)
			assert.Error(t, err)
		})
	}
	_, err := New(single, Options{WaitReplicas: 1})
	assert.NoError(t, err, "the defaults fit go-redis's")
}

func TestMillis(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    time.Duration
		want int64
	}{
		{0, 1},
		{time.Microsecond, 1},
		{time.Millisecond, 1},
		{time.Millisecond + 1, 2},
		{30 * time.Second, 30000},
		{1<<63 - 1, (1<<63-1)/int64(time.Millisecond) + 1},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, millis(tt.d), "millis(%v)", tt.d)
	}
}
