package memstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
	"github.com/idemhq/idem/server/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(*testing.T) server.Store { return memstore.New(memstore.Options{}) })
}

// clock is a settable clock for the store's Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func key(i int) server.Key { return server.Key{Scope: "s", Key: fmt.Sprint("k", i)} }

var ctx = context.Background()

func claim(t *testing.T, s *memstore.Store, k server.Key, fp string) server.Claim {
	t.Helper()
	c, err := s.Claim(ctx, k, fp, time.Minute)
	require.NoError(t, err)
	return c
}

func TestClock(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		advance time.Duration
		fp      string
		// want: "acquired", "taken over", "running" or "completed"
		complete bool
		want     string
	}{
		{"running within lease", 59 * time.Second, "fp", false, "running"},
		{"running lapsed same fingerprint", time.Minute, "fp", false, "taken over"},
		{"running lapsed other fingerprint", time.Minute, "other", false, "running"},
		{"running abandoned other fingerprint", time.Minute + time.Hour, "other", false, "acquired"},
		{"completed within retention", 2*time.Hour - time.Nanosecond, "fp", true, "completed"},
		{"completed expired", 2 * time.Hour, "other", true, "acquired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newClock()
			s := memstore.New(memstore.Options{Now: c.Now, Abandon: time.Hour})
			first := claim(t, s, key(1), "fp")
			require.True(t, first.Acquired)
			if tt.complete {
				require.NoError(t, s.Complete(ctx, key(1), first.Token, server.Response{Status: 200}, 2*time.Hour))
			}
			c.Advance(tt.advance)
			got := claim(t, s, key(1), tt.fp)
			switch tt.want {
			case "acquired":
				assert.True(t, got.Acquired && !got.TakenOver, "want acquired fresh, got %+v", got)
			case "taken over":
				assert.True(t, got.Acquired && got.TakenOver, "want taken over, got %+v", got)
			case "running":
				assert.False(t, got.Acquired)
				assert.False(t, got.Record.Completed)
				assert.Equal(t, c.Now().Add(-tt.advance).Add(time.Minute), got.Record.LeaseExpires)
			case "completed":
				assert.False(t, got.Acquired)
				assert.True(t, got.Record.Completed)
				assert.Equal(t, c.Now().Add(-tt.advance).Add(2*time.Hour), got.Record.ExpiresAt)
			}
		})
	}
}

func TestRenewAfterAbandonFails(t *testing.T) {
	t.Parallel()
	c := newClock()
	s := memstore.New(memstore.Options{Now: c.Now, Abandon: time.Hour})
	first := claim(t, s, key(1), "fp")
	c.Advance(time.Minute + time.Hour)
	require.ErrorIs(t, s.Renew(ctx, key(1), first.Token, time.Minute), server.ErrLeaseLost)
	require.ErrorIs(t, s.Complete(ctx, key(1), first.Token, server.Response{}, time.Hour), server.ErrLeaseLost)
}

func TestFullOfRunningKeys(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Options{MaxKeys: 10})
	for i := range 10 {
		require.True(t, claim(t, s, key(i), "fp").Acquired)
	}
	_, err := s.Claim(ctx, key(10), "fp", time.Minute)
	require.ErrorIs(t, err, memstore.ErrFull)
	// Known keys still answer.
	assert.False(t, claim(t, s, key(3), "fp").Acquired)
}

func TestFullEvictsCompletedFirst(t *testing.T) {
	t.Parallel()
	c := newClock()
	s := memstore.New(memstore.Options{MaxKeys: 10, Now: c.Now})
	tokens := map[int]string{}
	for i := range 10 {
		tokens[i] = claim(t, s, key(i), "fp").Token
	}
	// Keys 0 to 4 complete, the rest stay running.
	for i := range 5 {
		require.NoError(t, s.Complete(ctx, key(i), tokens[i], server.Response{Status: 200}, time.Hour))
	}
	for i := 10; i < 15; i++ {
		require.True(t, claim(t, s, key(i), "fp").Acquired, "key %d", i)
		assert.LessOrEqual(t, s.Len(), 10)
	}
	_, err := s.Claim(ctx, key(15), "fp", time.Minute)
	require.ErrorIs(t, err, memstore.ErrFull)
	for i := 5; i < 10; i++ {
		assert.NoError(t, s.Renew(ctx, key(i), tokens[i], time.Minute), "running key %d must survive", i)
	}
}

func TestFullForgetsExpiredFirst(t *testing.T) {
	t.Parallel()
	c := newClock()
	s := memstore.New(memstore.Options{MaxKeys: 4, Now: c.Now})
	for i := range 4 {
		tok := claim(t, s, key(i), "fp").Token
		require.NoError(t, s.Complete(ctx, key(i), tok, server.Response{Status: 200}, time.Minute))
		c.Advance(20 * time.Second)
	}
	// Keys 0 and 1 have expired; 2 and 3 have not.
	require.True(t, claim(t, s, key(8), "fp").Acquired)
	require.True(t, claim(t, s, key(9), "fp").Acquired)
	for _, i := range []int{2, 3} {
		assert.True(t, claim(t, s, key(i), "fp").Record.Completed, "key %d must be kept", i)
	}
	assert.Equal(t, 4, s.Len())
}

func TestFullEvictsOldestCompleted(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Options{MaxKeys: 3})
	for i := range 3 {
		tok := claim(t, s, key(i), "fp").Token
		require.NoError(t, s.Complete(ctx, key(i), tok, server.Response{Status: 200}, time.Hour))
	}
	require.True(t, claim(t, s, key(3), "fp").Acquired)
	assert.True(t, claim(t, s, key(0), "fp").Acquired, "the oldest completed key was forgotten")
	assert.True(t, claim(t, s, key(2), "fp").Record.Completed, "the newest completed key is kept")
}

// TestFullEvictsByExpiry: records completed with different retentions (two
// middlewares, or RunOnce, sharing a store) are forgotten in the order they
// expire, not the order they completed: an expired record goes before a
// live one, and a live one with an hour left before one with a day left.
func TestFullEvictsByExpiry(t *testing.T) {
	t.Parallel()
	c := newClock()
	s := memstore.New(memstore.Options{MaxKeys: 3, Now: c.Now})
	complete := func(i int, retention time.Duration) {
		tok := claim(t, s, key(i), "fp").Token
		require.NoError(t, s.Complete(ctx, key(i), tok, server.Response{Status: 200}, retention))
	}
	complete(0, 24*time.Hour)
	complete(1, time.Second)
	complete(2, time.Hour)
	c.Advance(time.Minute) // key 1 has expired

	require.True(t, claim(t, s, key(3), "fp").Acquired)
	assert.True(t, claim(t, s, key(0), "fp").Record.Completed, "a day left: kept")
	assert.True(t, claim(t, s, key(2), "fp").Record.Completed, "an hour left: kept")
	assert.Equal(t, 3, s.Len())

	// Full again: the record with an hour left goes before the one with a day.
	require.True(t, claim(t, s, key(5), "fp").Acquired)
	assert.True(t, claim(t, s, key(0), "fp").Record.Completed, "a day left: kept")
	assert.True(t, claim(t, s, key(2), "fp").Acquired, "an hour left: forgotten first")
}

func TestFullOfAbandonedKeys(t *testing.T) {
	t.Parallel()
	c := newClock()
	s := memstore.New(memstore.Options{MaxKeys: 2, Now: c.Now, Abandon: time.Hour})
	claim(t, s, key(0), "fp")
	claim(t, s, key(1), "fp")
	_, err := s.Claim(ctx, key(2), "fp", time.Minute)
	require.ErrorIs(t, err, memstore.ErrFull)
	c.Advance(2 * time.Hour)
	require.True(t, claim(t, s, key(2), "fp").Acquired, "abandoned running keys make room")
}

func TestSweepBoundsExpired(t *testing.T) {
	t.Parallel()
	c := newClock()
	s := memstore.New(memstore.Options{Now: c.Now})
	for i := range 1000 {
		tok := claim(t, s, key(i), "fp").Token
		require.NoError(t, s.Complete(ctx, key(i), tok, server.Response{Status: 200}, time.Minute))
	}
	c.Advance(time.Hour)
	for i := 1000; i < 2000; i++ {
		claim(t, s, key(i), "fp")
	}
	assert.Less(t, s.Len(), 1500, "sweeping must forget most of the expired records")
}

func TestRaceConcurrentUse(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Options{MaxKeys: 64})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				k := key(g*1000 + i%100)
				c, err := s.Claim(ctx, k, "fp", time.Minute)
				if err != nil {
					assert.ErrorIs(t, err, memstore.ErrFull)
					continue
				}
				if c.Acquired {
					if i%2 == 0 {
						assert.NoError(t, s.Complete(ctx, k, c.Token, server.Response{Status: 200}, time.Minute))
					} else {
						assert.NoError(t, s.Release(ctx, k, c.Token))
					}
				}
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, s.Len(), 64)
}
