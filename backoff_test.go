// This file tests Backoff and the budget's arithmetic at their limits.

package idem

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBackoffStaysUnderItsCeiling(t *testing.T) {
	t.Parallel()
	base, maxDelay := 200*time.Millisecond, 10*time.Second
	ceilings := map[int]time.Duration{1: 200 * time.Millisecond, 2: 400 * time.Millisecond, 3: 800 * time.Millisecond, 4: 1600 * time.Millisecond, 6: 6400 * time.Millisecond, 7: maxDelay, 60: maxDelay, 1000: maxDelay}
	for n, ceiling := range ceilings {
		var top time.Duration
		for range 2000 {
			d := Backoff(n, base, maxDelay)
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.Less(t, d, ceiling, "retry %d", n)
			top = max(top, d)
		}
		// Full jitter uses the whole window, not a sliver of it.
		assert.Greater(t, top, ceiling*3/4, "retry %d: largest of 2000 draws", n)
	}
	assert.Zero(t, Backoff(0, base, maxDelay))
	assert.Zero(t, Backoff(3, 0, maxDelay))
}

// TestBackoffAndBudgetDoNotOverflow: a maximum meant as "no cap" does not
// wrap the doubling ceiling round to zero (retries in a tight loop), and a
// huge refund does not wrap the budget negative (no retries ever again).
func TestBackoffAndBudgetDoNotOverflow(t *testing.T) {
	t.Parallel()
	var top time.Duration
	for range 100 {
		d := Backoff(100, time.Second, math.MaxInt64)
		require.GreaterOrEqual(t, d, time.Duration(0))
		top = max(top, d)
	}
	assert.Greater(t, top, time.Hour, "retry 100 with no cap waits long, not zero")

	b := newBudget(BudgetOptions{SuccessRefund: math.MaxInt}.withDefaults())
	_, ok := b.reserve(false)
	require.True(t, ok)
	b.refund(math.MaxInt)
	assert.Equal(t, 500, b.level())
}

// TestBudgetReservation: a retry's tokens come back if it is cancelled
// (never sent), once only, and stay spent once it is sent.
func TestBudgetReservation(t *testing.T) {
	t.Parallel()
	b := newBudget(BudgetOptions{Capacity: 12}.withDefaults())
	r, ok := b.reserve(true)
	require.True(t, ok)
	assert.Equal(t, 2, b.level(), "a timeout's retry costs 10")
	_, ok = b.reserve(false)
	assert.False(t, ok, "5 more cannot be paid")
	r.Cancel()
	r.Cancel()
	assert.Equal(t, 12, b.level(), "cancelled once, given back once")

	r, _ = b.reserve(false)
	assert.Equal(t, 5, r.Spend())
	r.Cancel()
	assert.Equal(t, 7, b.level(), "sent: spent, nothing to cancel")

	var zero reservation
	zero.Cancel()
	assert.Equal(t, 0, zero.Spend())

	off := newBudget(BudgetOptions{Capacity: -1}.withDefaults())
	r, ok = off.reserve(true)
	require.True(t, ok, "a disabled budget pays for every retry")
	r.Cancel()
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	later := now.Add(90 * time.Second)
	cases := []struct {
		name string
		in   string
		want time.Duration
		ok   bool
	}{
		{"delta seconds", "120", 120 * time.Second, true},
		{"zero", "0", 0, true},
		{"padded", " 7 ", 7 * time.Second, true},
		{"IMF-fixdate", later.Format(http.TimeFormat), 90 * time.Second, true},
		{"RFC 850", later.Format("Monday, 02-Jan-06 15:04:05 GMT"), 90 * time.Second, true},
		{"asctime", later.Format("Mon Jan _2 15:04:05 2006"), 90 * time.Second, true},
		{"date in the past", now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"huge delta saturates", "99999999999999999999999", maxDuration, true},
		{"large delta saturates", "9223372036854775807", maxDuration, true},
		{"negative", "-5", 0, false},
		{"fraction", "1.5", 0, false},
		{"garbage", "soon", 0, false},
		{"empty", "", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := ParseRetryAfter(tc.in, now)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "0", "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "-1", "1e9", "99999999999999999999"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, in string) {
		d, ok := ParseRetryAfter(in, now)
		require.GreaterOrEqual(t, d, time.Duration(0))
		if !ok {
			require.Zero(t, d)
		}
	})
}
