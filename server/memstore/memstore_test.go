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
				require.NoError(t, s.Complete(ctx, key(1), first.Token, server.StoredResponse{Status: 200}, 2*time.Hour))
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
	require.ErrorIs(t, s.Complete(ctx, key(1), first.Token, server.StoredResponse{}, time.Hour), server.ErrLeaseLost)
}

func TestSweepBoundsExpired(t *testing.T) {
	t.Parallel()
	c := newClock()
	s := memstore.New(memstore.Options{Now: c.Now})
	for i := range 1000 {
		tok := claim(t, s, key(i), "fp").Token
		require.NoError(t, s.Complete(ctx, key(i), tok, server.StoredResponse{Status: 200}, time.Minute))
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
						assert.NoError(t, s.Complete(ctx, k, c.Token, server.StoredResponse{Status: 200}, time.Minute))
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
