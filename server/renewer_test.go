package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// renewCounter is a Store that only counts renewals.
type renewCounter struct {
	Store
	renewals atomic.Int64
}

func (s *renewCounter) Renew(context.Context, Key, string, time.Duration) error {
	s.renewals.Add(1)
	return nil
}

func (r *renewer) isRunning() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running
}

func TestRenewer(t *testing.T) {
	t.Parallel()
	const every = 20 * time.Millisecond
	rn := newRenewer(every)
	store := &renewCounter{}
	var long, short attempt
	_, err := long.start(context.Background(), store, Key{Key: "long"}, "t1", 3*every, every, nil, rn)
	require.NoError(t, err)
	_, err = short.start(context.Background(), store, Key{Key: "short"}, "t2", 3*every, every, nil, rn)
	require.NoError(t, err)
	require.True(t, rn.isRunning())
	short.stop()
	short.stop() // a second stop is harmless

	time.Sleep(5 * every)
	n := store.renewals.Load()
	assert.GreaterOrEqual(t, n, int64(3), "the long attempt is renewed about every interval")
	assert.LessOrEqual(t, n, int64(6))

	long.stop()
	require.Eventually(t, func() bool { return !rn.isRunning() }, time.Second, every/4,
		"the goroutine ends once no attempt is left")
	after := store.renewals.Load()
	time.Sleep(2 * every)
	assert.Equal(t, after, store.renewals.Load(), "no renewal after the attempts ended")

	// It starts again for the next attempt.
	var again attempt
	_, err = again.start(context.Background(), store, Key{Key: "again"}, "t3", 3*every, every, nil, rn)
	require.NoError(t, err)
	assert.True(t, rn.isRunning())
	again.stop()
}
