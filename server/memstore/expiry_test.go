package memstore_test

import (
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// wallStepped returns t, which carries a monotonic clock reading, with its
// wall clock moved by d (whole seconds) and its monotonic reading kept: what
// time.Now returns after the system's wall clock was stepped by d. The time
// package offers no way to build such a time, so wallStepped edits its
// fields (as Go lays them out since 1.9: a flag, 33 bits of seconds since
// 1885 and 30 bits of nanoseconds, then the monotonic reading); ok reports
// whether the result reads as intended through the time package, and is
// false if the layout changed.
func wallStepped(t time.Time, d time.Duration) (stepped time.Time, ok bool) {
	type layout struct {
		wall uint64
		ext  int64
		loc  *time.Location
	}
	if unsafe.Sizeof(t) != unsafe.Sizeof(layout{}) {
		return t, false
	}
	l := *(*layout)(unsafe.Pointer(&t))
	l.wall += uint64(int64(d/time.Second)) << 30
	stepped = *(*time.Time)(unsafe.Pointer(&l))
	ok = stepped.Sub(t) == 0 && stepped.Round(0).Equal(t.Round(0).Add(d.Truncate(time.Second)))
	return stepped, ok
}

// steppedClock reads time.Now's clock as it was at base plus elapsed, with
// its wall clock stepped by step.
type steppedClock struct {
	mu            sync.Mutex
	base          time.Time
	elapsed, step time.Duration
}

func (c *steppedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, _ := wallStepped(c.base.Add(c.elapsed), c.step)
	return t
}

func (c *steppedClock) set(elapsed, step time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.elapsed, c.step = elapsed, step
}

// TestWallClockStepsBack: after the wall clock steps back, records expire
// by the monotonic clock, as time.Time.Before compares times that carry
// its reading, and the store reclaims them in that order: a record claimed
// after the step, whose wall expiry is earlier but which expires later, does
// not stall the reclaiming of an earlier record that has expired.
func TestWallClockStepsBack(t *testing.T) {
	t.Parallel()
	base := time.Now()
	if _, ok := wallStepped(base, -time.Hour); !ok {
		t.Skip("cannot build a time whose wall clock stepped: time.Time's layout changed")
	}
	clk := &steppedClock{base: base}
	s := memstore.New(memstore.Options{MaxKeys: 2, Now: clk.Now})
	k := func(i int) server.Key { return server.Key{Key: string(rune('a' + i))} }
	complete := func(i int) {
		t.Helper()
		tok := claim(t, s, k(i), "fp").Token
		require.NoError(t, s.Complete(ctx, k(i), tok, ok, time.Hour))
	}
	complete(0) // expires 1 h from now, by both clocks

	clk.set(30*time.Minute, -time.Hour) // the wall clock steps back an hour
	complete(1)                         // expires 90 min from the start; by the wall clock, 30 min

	clk.set(65*time.Minute, -time.Hour) // key 0 has expired, key 1 has not
	require.True(t, claim(t, s, k(2), "fp").Acquired, "key 0 expired and made room")
	assert.True(t, claim(t, s, k(1), "fp").Record.Completed, "key 1 is kept")
	_, err := s.Claim(ctx, k(3), "fp", time.Minute)
	require.ErrorIs(t, err, memstore.ErrFull)
}
