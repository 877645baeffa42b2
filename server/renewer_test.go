package server

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// renewCounter is a Store that only counts renewals, and lets every claim
// end.
type renewCounter struct {
	Store
	renewals atomic.Int64
}

func (s *renewCounter) Renew(context.Context, Key, string, time.Duration) error {
	s.renewals.Add(1)
	return nil
}

func (s *renewCounter) Release(context.Context, Key, string) error { return nil }

func (r *renewer) isRunning() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running
}

// TestRenewer runs on a fake clock: the renewer ticks every half interval
// and renews an attempt every second tick, from its start until it ends.
func TestRenewer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const every = 20 * time.Millisecond
		rn := newRenewer(every)
		store := &renewCounter{}
		cl := claimer{store: store, lease: 3 * every, renewEvery: every, renewer: rn}
		acquired := func(token string) answer { return answer{Claim: Claim{Acquired: true, Token: token}} }
		var long, short attempt
		_, err := cl.start(&long, context.Background(), Key{Key: "long"}, acquired("t1"))
		require.NoError(t, err)
		_, err = cl.start(&short, context.Background(), Key{Key: "short"}, acquired("t2"))
		require.NoError(t, err)
		require.True(t, rn.isRunning())
		short.end(outcome{})
		assert.Panics(t, func() { short.end(outcome{}) }, "an attempt ends once")

		time.Sleep(5*every + every/4)
		synctest.Wait()
		assert.Equal(t, int64(5), store.renewals.Load(), "the long attempt is renewed once an interval")

		long.end(outcome{})
		time.Sleep(every)
		synctest.Wait()
		assert.False(t, rn.isRunning(), "the goroutine ends once no attempt is left")
		after := store.renewals.Load()
		time.Sleep(5 * every)
		assert.Equal(t, after, store.renewals.Load(), "no renewal after the attempts ended")

		// It starts again for the next attempt.
		var again attempt
		_, err = cl.start(&again, context.Background(), Key{Key: "again"}, acquired("t3"))
		require.NoError(t, err)
		assert.True(t, rn.isRunning())
		again.end(outcome{})
		time.Sleep(every)
		synctest.Wait()
	})
}
