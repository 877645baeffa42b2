// This file tests waits under testing/synctest: Retry-After, backoff
// windows and the context's deadline.

package idem

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// handlerTransport serves requests in-process, so a test can run under
// testing/synctest, where time is virtual and waits are exact.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// clocked records when each attempt arrived, in the bubble's virtual time.
type clocked struct {
	mu    sync.Mutex
	times []time.Time
}

func (c *clocked) handler(reply func(n int, w http.ResponseWriter)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		n := len(c.times)
		c.times = append(c.times, time.Now())
		c.mu.Unlock()
		reply(n, w)
	})
}

func (c *clocked) gaps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(c.times); i++ {
		out = append(out, c.times[i].Sub(c.times[i-1]))
	}
	return out
}

func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		status    int
		value     func(now time.Time) string
		opts      Options
		wantGap   time.Duration
		exactOnly bool
	}{
		{name: "delta seconds on 503", status: 503, value: func(time.Time) string { return "3" }, wantGap: 3 * time.Second},
		{name: "delta seconds on 429", status: 429, value: func(time.Time) string { return "2" }, wantGap: 2 * time.Second},
		{name: "delta seconds on 409", status: 409, value: func(time.Time) string { return "1" }, wantGap: time.Second},
		{name: "IMF-fixdate", status: 503, value: func(now time.Time) string { return now.Add(5 * time.Second).UTC().Format(http.TimeFormat) }, wantGap: 5 * time.Second},
		{name: "RFC 850 date", status: 503, value: func(now time.Time) string {
			return now.Add(4 * time.Second).UTC().Format("Monday, 02-Jan-06 15:04:05 GMT")
		}, wantGap: 4 * time.Second},
		{name: "asctime date", status: 503, value: func(now time.Time) string { return now.Add(6 * time.Second).UTC().Format(time.ANSIC) }, wantGap: 6 * time.Second},
		{name: "clamped to MaxRetryAfter", status: 503, value: func(time.Time) string { return "86400" }, opts: Options{MaxRetryAfter: 7 * time.Second}, wantGap: 7 * time.Second},
		{name: "not shortened by a small backoff", status: 503, value: func(time.Time) string { return "9" }, opts: Options{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}, wantGap: 9 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				// The virtual clock starts on a whole second, so HTTP dates
				// (whole seconds) are exact.
				var clk clocked
				h := clk.handler(func(n int, w http.ResponseWriter) {
					if n == 0 {
						w.Header().Set("Retry-After", tc.value(time.Now()))
						w.WriteHeader(tc.status)
						return
					}
					w.WriteHeader(201)
				})
				o := tc.opts
				o.Transport = handlerTransport{h}
				c := newClient(t, o)
				resp, err := c.Do(post(t, "http://api.test/charges", `{}`))
				require.NoError(t, err)
				assert.Equal(t, 2, resp.Attempts)
				assert.Equal(t, []time.Duration{tc.wantGap}, clk.gaps())
			})
		})
	}
}

func TestBackoffWaitsStayInTheirWindows(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var clk clocked
		h := clk.handler(func(_ int, w http.ResponseWriter) { w.WriteHeader(503) })
		c := newClient(t, Options{Transport: handlerTransport{h}, MaxAttempts: 6, BaseDelay: time.Second, MaxDelay: 4 * time.Second})
		_, err := c.Do(post(t, "http://api.test/", `{}`))
		require.ErrorIs(t, err, ErrRetriesExhausted)
		gaps := clk.gaps()
		require.Len(t, gaps, 5)
		for i, ceiling := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second} {
			assert.Less(t, gaps[i], ceiling, "wait %d", i+1)
		}
	})
}

func TestNoWaitPastTheDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var clk clocked
		h := clk.handler(func(_ int, w http.ResponseWriter) {
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(503)
		})
		c := newClient(t, Options{Transport: handlerTransport{h}})
		ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
		defer cancel()
		start := time.Now()
		_, err := c.Do(post(t, "http://api.test/", `{}`).WithContext(ctx))
		require.ErrorIs(t, err, ErrDeadline)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, 3, e.Attempts, "waits of 5 s fit twice into 12 s, not a third time")
		assert.Equal(t, 10*time.Second, time.Since(start), "gave up at once instead of sleeping into the deadline")
		assert.Equal(t, 503, e.StatusCode)
	})
}

func TestBudgetRefundedWhenTheDeadlineStopsARetry(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(503)
		})
		c := newClient(t, Options{Transport: handlerTransport{h}, Budget: BudgetOptions{Capacity: 10}})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := c.Do(post(t, "http://api.test/", `{}`).WithContext(ctx))
		require.ErrorIs(t, err, ErrDeadline)
		assert.Equal(t, 10, c.budget.level())
	})
}
