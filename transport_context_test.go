// This file tests the attempts' contexts (attempts and attemptCtx, in
// transport.go): their deadlines, values and ends, the contexts derived
// from them, the one timer a call re-arms for each attempt, the watch on
// the call's context, and what net/http can still reach of an attempt
// once it is over.

package idem

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func answer(r *http.Request, status int) *http.Response {
	return &http.Response{StatusCode: status, Header: http.Header{}, Body: http.NoBody, Request: r}
}

// TestAttemptContextCarriesTheTrace: an attempt's context serves its
// client trace under httptrace's key, so writes are counted (two writes
// in one RoundTrip, as net/http's silent resend makes them), and a
// caller's own trace still hears every write.
func TestAttemptContextCarriesTheTrace(t *testing.T) {
	t.Parallel()
	require.NotNil(t, traceKey, "httptrace's key is known: attempts need no context.WithValue")
	for _, own := range []bool{false, true} {
		name := "no trace of the caller's"
		if own {
			name = "the caller's own trace"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var heard atomic.Int32
			ctx := context.Background()
			if own {
				ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
					WroteRequest: func(httptrace.WroteRequestInfo) { heard.Add(1) },
				})
			}
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				tr := httptrace.ContextClientTrace(r.Context())
				if tr == nil || tr.WroteRequest == nil {
					return nil, io.ErrUnexpectedEOF
				}
				tr.WroteRequest(httptrace.WroteRequestInfo{})
				tr.WroteRequest(httptrace.WroteRequestInfo{})
				return answer(r, 201), nil
			})
			c := newClient(t, Options{Transport: rt, MaxAttempts: 2})
			resp, err := c.Do(post(t, "http://api.test/charges", `{}`).WithContext(ctx))
			require.NoError(t, err)
			assert.Equal(t, 2, resp.Attempts, "both writes are counted")
			if own {
				assert.Equal(t, int32(2), heard.Load(), "the caller's trace hears both")
			}
		})
	}
}

// TestAttemptContextIsTheAttempts: each attempt runs under a context of
// its own, with the caller's values, a deadline AttemptTimeout after it
// began (or the caller's, if earlier), and no error while it runs; each
// is cancelled once its attempt is over.
func TestAttemptContextIsTheAttempts(t *testing.T) {
	t.Parallel()
	type key struct{}
	for _, callerDeadline := range []time.Duration{0, 300 * time.Millisecond} {
		t.Run("caller's deadline "+callerDeadline.String(), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx := context.WithValue(context.Background(), key{}, "v")
				var want time.Time
				if callerDeadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, callerDeadline)
					defer cancel()
					want, _ = ctx.Deadline()
				}
				var ctxs []context.Context
				rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
					ctx := r.Context()
					ctxs = append(ctxs, ctx)
					d, ok := ctx.Deadline()
					assert.True(t, ok)
					if callerDeadline > 0 {
						assert.Equal(t, want, d, "the caller's deadline is the earlier")
					} else {
						assert.Equal(t, time.Now().Add(time.Second), d, "AttemptTimeout from the attempt's start")
					}
					assert.Equal(t, "v", ctx.Value(key{}))
					assert.NoError(t, ctx.Err())
					select {
					case <-ctx.Done():
						t.Error("an attempt's context is done while it runs")
					default:
					}
					if len(ctxs) == 1 {
						return answer(r, 503), nil
					}
					return answer(r, 201), nil
				})
				c := newClient(t, Options{Transport: rt, AttemptTimeout: time.Second,
					BaseDelay: 10 * time.Millisecond, MaxDelay: 10 * time.Millisecond})
				resp, err := c.Do(post(t, "http://api.test/charges", `{}`).WithContext(ctx))
				require.NoError(t, err)
				assert.Equal(t, 2, resp.Attempts)
				require.Len(t, ctxs, 2)
				assert.NotSame(t, ctxs[0], ctxs[1], "a retry has a context of its own")
				for _, ctx := range ctxs {
					<-ctx.Done()
					assert.ErrorIs(t, ctx.Err(), context.Canceled, "ended with its attempt")
				}
			})
		})
	}
}

// TestAttemptContextEndsWhatDerivesFromIt: a transport that is not
// net/http's derives contexts from the attempt's and waits on them. The
// attempt's timeout ends them (with the attempt's error, as the context
// package says) and runs the AfterFunc registered on it; a derived
// context cancelled first is let go of, its AfterFunc stopped.
func TestAttemptContextEndsWhatDerivesFromIt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var n int
		var ran, stoppedRan atomic.Bool
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			n++
			if n > 1 {
				return answer(r, 201), nil
			}
			early, cancelEarly := context.WithCancel(r.Context())
			cancelEarly()
			stop := context.AfterFunc(r.Context(), func() { stoppedRan.Store(true) })
			assert.True(t, stop(), "stopped before the attempt ended")
			context.AfterFunc(r.Context(), func() { ran.Store(true) })
			<-early.Done()

			derived, cancel := context.WithCancel(r.Context())
			defer cancel()
			start := time.Now()
			<-derived.Done()
			assert.Equal(t, 100*time.Millisecond, time.Since(start), "the attempt's timeout ended it")
			assert.ErrorIs(t, derived.Err(), context.DeadlineExceeded)
			assert.ErrorIs(t, context.Cause(derived), context.DeadlineExceeded)
			return nil, derived.Err()
		})
		c := newClient(t, quickOptions(Options{Transport: rt, AttemptTimeout: 100 * time.Millisecond}))
		resp, err := c.Do(post(t, "http://api.test/charges", `{}`))
		require.NoError(t, err)
		assert.Equal(t, 2, resp.Attempts)
		synctest.Wait()
		assert.True(t, ran.Load(), "the AfterFunc ran when the attempt timed out")
		assert.False(t, stoppedRan.Load(), "a stopped AfterFunc never runs")
	})
}

// TestAttemptTimerFiringLateSparesTheNextAttempt: a call re-arms one
// timer for each attempt. When the last attempt's firing comes anyway
// (its Stop too late to keep it from running), it must leave the next
// attempt be, which has not run its time. A naive timer, cancelling
// whichever attempt is current, ends the next attempt at once.
func TestAttemptTimerFiringLateSparesTheNextAttempt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		twoAttempts := func() (*attempts, *attemptCtx) {
			as := new(attempts)
			first := as.init(context.Background())
			first.begin(100 * time.Millisecond)
			time.Sleep(50 * time.Millisecond)
			first.end()
			second := as.next()
			second.begin(100 * time.Millisecond)
			return as, second
		}

		as, second := twoAttempts()
		as.expire() // the first attempt's timer, running late
		assert.NoError(t, second.Err(), "the next attempt has not run its time")
		time.Sleep(99 * time.Millisecond)
		assert.NoError(t, second.Err())
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.ErrorIs(t, second.Err(), context.DeadlineExceeded, "the re-armed timer ends it on time")
		as.close()

		naiveExpire := func(as *attempts) { as.cur.Load().cancel(context.DeadlineExceeded) }
		naive, second := twoAttempts()
		naiveExpire(naive)
		assert.ErrorIs(t, second.Err(), context.DeadlineExceeded, "the naive timer ends an attempt 0 ms into its 100")
		naive.close()

		// Between attempts, before the next begins, there is no deadline to pass.
		as = new(attempts)
		as.init(context.Background()).end()
		waiting := as.next()
		as.expire()
		assert.NoError(t, waiting.Err())
		as.close()
	})
}

// TestAttemptsWatchTheCallsContext: the call's context ending cancels the
// attempt running, and an attempt made after it starts cancelled.
func TestAttemptsWatchTheCallsContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		as := new(attempts)
		a := as.init(ctx)
		a.begin(time.Hour)
		done := a.Done()
		errStop := io.ErrClosedPipe
		cancel(errStop)
		<-done
		assert.ErrorIs(t, a.Err(), context.Canceled)
		assert.ErrorIs(t, context.Cause(a), errStop, "the cause is the call's context's")
		b := as.next()
		assert.ErrorIs(t, b.Err(), context.Canceled, "a retry made after the call's context ended")
		<-b.Done()
		as.close()
	})
}

// TestLateCallbacksReachOnlyTheirAttempt: net/http's write loop can read
// an attempt's body and report its write after RoundTrip has returned,
// while the next attempt runs. Each attempt has a body and a trace of its
// own, so the late reader still reads the whole first body, the retry
// sends its own whole, and the late write is not counted against the
// retry; nor, once the call is over, against the next call. The naive
// variant, one body and one counter for every attempt of the call, gets
// both wrong.
func TestLateCallbacksReachOnlyTheirAttempt(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("x", 4096)
	var late func() // what the write loop still does for the first attempt
	var lateBody []byte
	var sent []string // what each attempt's request carried
	var lastCall func()
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		tr := httptrace.ContextClientTrace(r.Context())
		switch len(sent) {
		case 0: // answered before its body was written
			sent = append(sent, "")
			late = func() {
				lateBody, _ = io.ReadAll(r.Body)
				tr.WroteRequest(httptrace.WroteRequestInfo{})
			}
			return answer(r, 503), nil
		case 1: // the retry: the first attempt's write loop finishes meanwhile
			half := make([]byte, len(body)/2)
			io.ReadFull(r.Body, half)
			late()
			rest, _ := io.ReadAll(r.Body)
			sent = append(sent, string(half)+string(rest))
			tr.WroteRequest(httptrace.WroteRequestInfo{})
			lastCall = func() { tr.WroteRequest(httptrace.WroteRequestInfo{}) }
			return answer(r, 201), nil
		default: // the next call, with the last call's write reported late
			lastCall()
			tr.WroteRequest(httptrace.WroteRequestInfo{})
			sent = append(sent, "")
			return answer(r, 201), nil
		}
	})
	c := newClient(t, quickOptions(Options{Transport: rt}))
	resp, err := c.Do(post(t, "http://api.test/charges", body))
	require.NoError(t, err)
	assert.Equal(t, body, string(lateBody), "the first attempt's body, read late, is whole")
	assert.Equal(t, body, sent[1], "so is the retry's")
	assert.Equal(t, 2, resp.Attempts, "the first attempt's late write is its own, not the retry's")
	resp, err = c.Do(post(t, "http://api.test/charges", `{}`))
	require.NoError(t, err)
	assert.Equal(t, 1, resp.Attempts, "nor is the last call's counted in the next")

	// The naive variant: one reader and one write counter for the call's
	// attempts, the counter reset as each attempt ends.
	shared := strings.NewReader(body)
	var wrote int
	half := make([]byte, len(body)/2)
	io.ReadFull(shared, half)          // the retry's write, half done
	lateNaive, _ := io.ReadAll(shared) // the first attempt's write loop, late
	wrote++                            // and its write reported
	rest, _ := io.ReadAll(shared)      // the retry's write, the rest
	wrote++
	assert.NotEqual(t, body, string(lateNaive), "naive: the late reader takes the retry's bytes")
	assert.NotEqual(t, body, string(half)+string(rest), "naive: the retry sends a body cut short")
	assert.Equal(t, 2, wrote, "naive: the retry counts two writes for its one")
}

// TestAttemptTransportWithoutAnAttemptContext: a request that does not
// carry an attempt's context is bounded by a context.WithTimeout that
// ends when its body is closed.
func TestAttemptTransportWithoutAnAttemptContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var got context.Context
		rt := attemptTransport{timeout: 100 * time.Millisecond, rt: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			got = r.Context()
			if r.Method == http.MethodGet {
				return answer(r, 200), nil
			}
			<-r.Context().Done()
			return nil, r.Context().Err()
		})}
		start := time.Now()
		req, err := http.NewRequest(http.MethodPost, "http://api.test/", nil)
		require.NoError(t, err)
		_, err = rt.RoundTrip(req)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 100*time.Millisecond, time.Since(start))

		req, err = http.NewRequest(http.MethodGet, "http://api.test/", nil)
		require.NoError(t, err)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		assert.NoError(t, got.Err(), "the timeout runs until the body is closed")
		resp.Body.Close()
		assert.ErrorIs(t, got.Err(), context.Canceled)
	})
}
