// This file tests Client.Do against httptest servers: retries, keys,
// errors, budgets, refusals and expiry.

package idem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/idemhq/idem/internal/key"
)

// TestDoRetryTable drives every status class through the real Do against an
// httptest server: which are retried, what comes back, and that every
// attempt carries the same key and the same bytes.
func TestDoRetryTable(t *testing.T) {
	t.Parallel()
	type want struct {
		status   int   // final Response status, if no error
		err      error // or the error
		attempts int
	}
	cases := []struct {
		name  string
		codes []int
		want  want
	}{
		{"201 first time", []int{201}, want{status: 201, attempts: 1}},
		{"303 is final", []int{303}, want{status: 303, attempts: 1}},
		{"408 retried", []int{408, 408, 201}, want{status: 201, attempts: 3}},
		{"409 retried", []int{409, 409, 201}, want{status: 201, attempts: 3}},
		{"425 retried", []int{425, 201}, want{status: 201, attempts: 2}},
		{"429 retried", []int{429, 201}, want{status: 201, attempts: 2}},
		{"500 retried", []int{500, 201}, want{status: 201, attempts: 2}},
		{"502 retried", []int{502, 201}, want{status: 201, attempts: 2}},
		{"503 retried", []int{503, 201}, want{status: 201, attempts: 2}},
		{"504 retried", []int{504, 201}, want{status: 201, attempts: 2}},
		{"mixed then success", []int{503, 429, 500, 502, 200}, want{status: 200, attempts: 5}},
		{"400 final", []int{400, 201}, want{status: 400, attempts: 1}},
		{"401 final", []int{401, 201}, want{status: 401, attempts: 1}},
		{"403 final", []int{403, 201}, want{status: 403, attempts: 1}},
		{"404 final", []int{404, 201}, want{status: 404, attempts: 1}},
		{"410 final", []int{410, 201}, want{status: 410, attempts: 1}},
		{"412 final", []int{412, 201}, want{status: 412, attempts: 1}},
		{"501 final", []int{501, 201}, want{status: 501, attempts: 1}},
		{"505 final", []int{505, 201}, want{status: 505, attempts: 1}},
		{"422 is final", []int{422, 201}, want{status: 422, attempts: 1}},
		{"503 until exhausted", []int{503}, want{err: ErrRetriesExhausted, attempts: 5}},
		{"retried 4xx after 5xx is final", []int{503, 404, 201}, want{status: 404, attempts: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newScripted(t, statuses(tc.codes...))
			c := newClient(t, quickOptions(Options{}))
			const body = `{"amount":1000,"currency":"usd"}`
			resp, err := c.Do(post(t, s.srv.URL+"/charges", body))
			got := s.seen()
			require.Len(t, got, tc.want.attempts, "requests the server saw")
			for _, r := range got {
				assert.Equal(t, got[0].Key, r.Key, "same key on every attempt")
				assert.Equal(t, body, string(r.Body), "same bytes on every attempt")
				assert.Equal(t, http.MethodPost, r.Method)
			}
			require.NoError(t, ValidateKey(got[0].Key))
			if tc.want.err != nil {
				require.ErrorIs(t, err, tc.want.err)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, tc.want.attempts, e.Attempts)
				assert.Equal(t, got[0].Key, e.Key)
				assert.Equal(t, tc.codes[min(tc.want.attempts, len(tc.codes))-1], e.StatusCode)
				assert.NotEmpty(t, e.Body)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want.status, resp.StatusCode)
			assert.Equal(t, tc.want.attempts, resp.Attempts)
			assert.Equal(t, got[0].Key, resp.Key)
			assert.Equal(t, http.StatusText(tc.want.status), string(resp.Body))
		})
	}
}

func TestDoReplayedResponseIsFinal(t *testing.T) {
	t.Parallel()
	for _, code := range []int{201, 409, 500, 503} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			t.Parallel()
			s := newScripted(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Idempotent-Replayed", "true")
				w.WriteHeader(code)
			})
			c := newClient(t, quickOptions(Options{}))
			resp, err := c.Do(post(t, s.srv.URL, `{}`))
			require.NoError(t, err)
			assert.Equal(t, code, resp.StatusCode)
			assert.True(t, resp.Replayed)
			assert.Equal(t, 1, resp.Attempts)
			assert.Len(t, s.seen(), 1, "a replay will not change by asking again")
		})
	}
}

func TestDoKeepsCallersKey(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(503, 201))
	cases := []struct {
		name string
		opts Options
		in   string
		sent string
	}{
		{"bare stays bare", Options{}, "order-17", "order-17"},
		{"quoted in, bare out", Options{}, `"order-17"`, "order-17"},
		{"quoted by option", Options{QuoteKey: true}, "order-17", `"order-17"`},
		{"escaped by option", Options{QuoteKey: true}, `a"b`, `"a\"b"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, quickOptions(tc.opts))
			before := len(s.seen())
			req := post(t, s.srv.URL, `{}`)
			req.Header.Set("Idempotency-Key", tc.in)
			_, err := c.Do(req)
			require.NoError(t, err)
			for _, r := range s.seen()[before:] {
				assert.Equal(t, tc.sent, r.Key)
			}
		})
	}
}

func TestDoCustomHeaderAndULID(t *testing.T) {
	t.Parallel()
	var got atomic.Value
	s := newScripted(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("PayPal-Request-Id"))
		w.WriteHeader(201)
	})
	c := newClient(t, Options{Header: "paypal-request-id", KeyFormat: ULID})
	resp, err := c.Do(post(t, s.srv.URL, `{}`))
	require.NoError(t, err)
	assert.Len(t, resp.Key, 26)
	assert.Equal(t, resp.Key, got.Load())
	assert.Empty(t, s.seen()[0].Key, "no Idempotency-Key when another header is configured")
}

func TestDoRejectsBadInput(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	c := newClient(t, Options{MaxRequestBody: 8})
	req := post(t, s.srv.URL, `{}`)
	req.Header.Set("Idempotency-Key", "bad\x01key")
	_, err := c.Do(req)
	require.ErrorIs(t, err, ErrInvalidKey)
	_, err = c.Do(post(t, s.srv.URL, `{"too":"long"}`))
	require.ErrorIs(t, err, ErrBodyTooLarge)
	assert.Empty(t, s.seen(), "nothing is sent")
}

// TestDoRetriesTransportErrors closes the connection without an answer on
// the first two attempts.
func TestDoRetriesTransportErrors(t *testing.T) {
	t.Parallel()
	s := newScripted(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n < 2 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.WriteHeader(201)
	})
	c := newClient(t, quickOptions(Options{}))
	resp, err := c.Do(post(t, s.srv.URL, `{"a":1}`))
	require.NoError(t, err)
	assert.Equal(t, 201, resp.StatusCode)
	got := s.seen()
	assert.Equal(t, len(got), resp.Attempts, "attempts match what the server saw")
	assert.GreaterOrEqual(t, len(got), 3)
	for _, r := range got {
		assert.Equal(t, got[0].Key, r.Key)
	}
}

// TestDoCountsSilentResends: net/http resends a request carrying
// Idempotency-Key on its own when a reused keep-alive connection dies
// before the response. The count must include that resend.
func TestDoCountsSilentResends(t *testing.T) {
	t.Parallel()
	s := newScripted(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 { // the POST, on the connection the warm-up left idle
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.WriteHeader(201)
	})
	var attempts []Attempt
	c := newClient(t, Options{MaxAttempts: 1, OnAttempt: func(a Attempt) { attempts = append(attempts, a) }})
	// Warm up: leave one idle keep-alive connection in the pool.
	warm, err := c.HTTPClient().Get(s.srv.URL)
	require.NoError(t, err)
	io.Copy(io.Discard, warm.Body)
	warm.Body.Close()

	resp, err := c.Do(post(t, s.srv.URL, `{"a":1}`))
	require.NoError(t, err, "net/http resent the request itself")
	assert.Equal(t, 201, resp.StatusCode)
	require.Len(t, s.seen(), 3, "warm-up, the lost POST, the resend")
	assert.Equal(t, 2, resp.Attempts, "both POSTs the server saw are counted")
	require.Len(t, attempts, 1, "one attempt of our own loop")
	assert.Equal(t, 2, attempts[0].N)
}

func TestDoBodyCutOffIsRetried(t *testing.T) {
	t.Parallel()
	s := newScripted(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 0 {
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(201)
			io.WriteString(w, "partial")
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err == nil {
				buf.Flush()
				conn.Close()
			}
			return
		}
		w.WriteHeader(201)
		io.WriteString(w, "whole")
	})
	c := newClient(t, quickOptions(Options{}))
	resp, err := c.Do(post(t, s.srv.URL, `{}`))
	require.NoError(t, err)
	assert.Equal(t, "whole", string(resp.Body))
	assert.Equal(t, 2, resp.Attempts)
}

func TestDoBudget(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(503))
	c := newClient(t, quickOptions(Options{MaxAttempts: 10, Budget: BudgetOptions{Capacity: 12, RetryCost: 5, SuccessRefund: 1}}))
	_, err := c.Do(post(t, s.srv.URL, `{}`))
	require.ErrorIs(t, err, ErrBudgetExhausted)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 3, e.Attempts, "two retries fit a budget of 12 at 5 each")
	assert.Equal(t, 503, e.StatusCode)
	assert.Equal(t, 2, c.budget.level())

	_, err = c.Do(post(t, s.srv.URL, `{}`))
	require.ErrorIs(t, err, ErrBudgetExhausted)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 1, e.Attempts, "first attempts still go out on an empty budget")

	ok := newScripted(t, statuses(201))
	for range 3 {
		_, err := c.Do(post(t, ok.srv.URL, `{}`))
		require.NoError(t, err)
	}
	assert.Equal(t, 5, c.budget.level(), "first-try successes refund")

	unlimited := newClient(t, quickOptions(Options{MaxAttempts: 4, Budget: BudgetOptions{Capacity: -1}}))
	_, err = unlimited.Do(post(t, s.srv.URL, `{}`))
	require.ErrorIs(t, err, ErrRetriesExhausted)
}

// TestBudgetRefundsRetriesNeverSent: a retry is paid for when it is
// decided; if it is never sent (the context ends during its wait,
// PrepareRequest fails on it, the operation is abandoned meanwhile), the
// budget gets its tokens back. In a synctest bubble, the wait is virtual.
func TestBudgetRefundsRetriesNeverSent(t *testing.T) {
	t.Parallel()
	for _, stop := range []string{"cancelled", "PrepareRequest", "abandoned"} {
		t.Run(stop, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Retry-After", "5")
					w.WriteHeader(503)
				})
				j := openJournal(t, "")
				var prepared int
				o := Options{Journal: j, Transport: handlerTransport{h}, Budget: BudgetOptions{Capacity: 100},
					PrepareRequest: func(*http.Request) error {
						if prepared++; prepared > 1 && stop == "PrepareRequest" {
							return errors.New("signing failed")
						}
						return nil
					}}
				c := newClient(t, o)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan error, 1)
				go func() {
					_, err := c.Do(keyedPost(t, "k", `{}`).WithContext(ctx))
					done <- err
				}()
				synctest.Wait() // waiting five seconds to retry, the retry paid for
				assert.Equal(t, 95, c.budget.level())
				switch stop {
				case "cancelled":
					cancel()
				case "abandoned":
					_, err := j.Abandon("k")
					require.NoError(t, err)
				}
				require.Error(t, <-done)
				assert.Equal(t, 100, c.budget.level(), "the retry never sent costs nothing")
			})
		})
	}
}

func TestDoErrorBodyIsBounded(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 10000)
	s := newScripted(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(503)
		io.WriteString(w, big)
	})
	c := newClient(t, quickOptions(Options{MaxAttempts: 2, MaxErrorBody: 100}))
	_, err := c.Do(post(t, s.srv.URL, `{}`))
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, big[:100], string(e.Body))
	assert.Contains(t, e.Error(), "retries exhausted after 2 attempts, last status 503")
}

// TestDoCancelledWhileWaiting: cancelling the context cuts a 30 s wait
// short at once (in a synctest bubble, to the nanosecond).
func TestDoCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(503)
		})
		c := newClient(t, Options{Transport: handlerTransport{h}})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		_, err := c.Do(post(t, "http://api.test/", `{}`).WithContext(ctx))
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 50*time.Millisecond, time.Since(start), "cancellation cuts the 30 s wait short")
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, 1, e.Attempts)
		assert.NotEmpty(t, e.Key)
	})
}

func TestDoCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	c := newClient(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Do(post(t, s.srv.URL, `{}`).WithContext(ctx))
	require.ErrorIs(t, err, context.Canceled)
}

func TestDoTransportErrorClasses(t *testing.T) {
	t.Parallel()
	// An address nobody listens on is a retryable transport error...
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	c := newClient(t, quickOptions(Options{MaxAttempts: 3}))
	_, err = c.Do(post(t, "http://"+addr, `{}`))
	require.ErrorIs(t, err, ErrRetriesExhausted)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 3, e.Attempts)
	var opErr *net.OpError
	assert.ErrorAs(t, err, &opErr, "the last transport error is kept as Cause")

	// ...an unsupported scheme is not.
	_, err = c.Do(post(t, "ftp://"+addr, `{}`))
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 1, e.Attempts)
	assert.False(t, errors.Is(err, ErrRetriesExhausted))
}

// TestPrepareRequestLeavesTheCallersURL: the hook works on the attempt's
// own copy of the URL; the caller's request is not changed, and a secret
// the hook adds is neither kept for the next operation nor journaled.
func TestPrepareRequestLeavesTheCallersURL(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	j := openJournal(t, "")
	c := newClient(t, quickOptions(Options{Journal: j, PrepareRequest: func(r *http.Request) error {
		q := r.URL.Query()
		q.Set("api_key", "sk_live_SECRET")
		r.URL.RawQuery = q.Encode()
		return nil
	}}))
	u, err := url.Parse(s.srv.URL + "/charges")
	require.NoError(t, err)
	for i := range 2 {
		req := &http.Request{Method: http.MethodPost, URL: u, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(fmt.Sprint(i)))}
		_, err := c.Do(req)
		require.NoError(t, err)
		assert.Empty(t, req.URL.RawQuery, "the caller's URL is unchanged")
	}
	for _, r := range s.seen() {
		assert.Equal(t, "sk_live_SECRET", r.Query.Get("api_key"), "the hook's change went on the wire")
	}
	require.NoError(t, j.Close())
	raw, err := os.ReadFile(j.Path())
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "sk_live_SECRET")
}

// TestPrepareRequestStartsAfreshOnEveryAttempt: what the hook changes on
// one attempt (an added header, a query parameter, the Host) is not there
// on the next: each attempt starts from the request as the call made it,
// so a hook that adds a signature signs each attempt once.
func TestPrepareRequestStartsAfreshOnEveryAttempt(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(503, 503, 201))
	var n atomic.Int32
	c := newClient(t, quickOptions(Options{PrepareRequest: func(r *http.Request) error {
		i := n.Add(1)
		r.Header.Add("X-Signature", fmt.Sprint("sig-", i))
		r.Header.Del("X-Drop-Once")
		q := r.URL.Query()
		q.Add("ts", fmt.Sprint(i))
		r.URL.RawQuery = q.Encode()
		r.Host = fmt.Sprint("attempt-", i, ".example")
		return nil
	}}))
	req := post(t, s.srv.URL+"/charges?a=1", `{}`)
	req.Header.Set("X-Drop-Once", "kept for every attempt")
	_, err := c.Do(req)
	require.NoError(t, err)
	seen := s.seen()
	require.Len(t, seen, 3)
	for i, r := range seen {
		assert.Equal(t, []string{fmt.Sprint("sig-", i+1)}, r.Header.Values("X-Signature"), "attempt %d", i+1)
		assert.Equal(t, []string{fmt.Sprint(i + 1)}, r.Query["ts"], "attempt %d", i+1)
		assert.Equal(t, []string{"1"}, r.Query["a"], "attempt %d", i+1)
		assert.Equal(t, fmt.Sprint("attempt-", i+1, ".example"), r.Host, "attempt %d", i+1)
	}
	assert.Equal(t, "kept for every attempt", req.Header.Get("X-Drop-Once"), "the caller's header is its own")
}

// TestDoCancelledBeforeItStarts: a call whose context has already ended
// sends nothing and journals nothing, so Resume cannot send it later.
func TestDoCancelledBeforeItStarts(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	j := openJournal(t, "")
	c := newClient(t, quickOptions(Options{Journal: j}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Do(post(t, s.srv.URL, `{}`).WithContext(ctx))
	require.ErrorIs(t, err, context.Canceled)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Zero(t, e.Attempts)
	assert.Empty(t, s.seen())
	pending, err := j.Pending()
	require.NoError(t, err)
	assert.Empty(t, pending)
}

// TestErrorCauseIsTheLastAttempts: Error.Cause is the last attempt's
// transport error, not one left over from an earlier attempt.
func TestErrorCauseIsTheLastAttempts(t *testing.T) {
	t.Parallel()
	s := newScripted(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 0 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close() // a transport error
			return
		}
		w.WriteHeader(200)
		w.Write(bytes.Repeat([]byte("x"), 10000))
	})
	c := newClient(t, quickOptions(Options{MaxResponseBody: 5000}))
	_, err := c.Do(post(t, s.srv.URL, `{}`))
	require.ErrorIs(t, err, ErrBodyTooLarge)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 2, e.Attempts)
	assert.Nil(t, e.Cause, "the last attempt had no transport error")
	assert.Equal(t, 200, e.StatusCode)
}

// TestDoNamedRefusesAnEmptyName: DoNamed with no name is an error, not Do
// under a fresh key that no name is bound to.
func TestDoNamedRefusesAnEmptyName(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	c := newClient(t, quickOptions(Options{Journal: openJournal(t, "")}))
	_, err := c.DoNamed("", post(t, s.srv.URL, `{}`))
	require.Error(t, err)
	assert.Empty(t, s.seen())
}

// TestErrorStatusIsTheLastAttempts: when the context ends during an
// attempt that got no response, Error.StatusCode is 0, not the status of
// an earlier attempt.
func TestErrorStatusIsTheLastAttempts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		s := &scripted{reply: func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 0 {
				w.WriteHeader(503)
				return
			}
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}}
		c := newClient(t, quickOptions(Options{Transport: servePipes(t, s)}))
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := c.Do(post(t, "http://api.test/", `{}`).WithContext(ctx))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Zero(t, e.StatusCode, "the last attempt got no response")
		assert.Equal(t, 2, e.Attempts)
	})
}

// TestDoContinuesWithTheURLsUserInformation: user information is not
// journaled, but Do called again for a pending operation sends the live
// URL's, on every attempt.
func TestDoContinuesWithTheURLsUserInformation(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(503, 503, 201))
	c := newClient(t, quickOptions(Options{Journal: openJournal(t, ""), MaxAttempts: 2}))
	u := strings.Replace(s.srv.URL, "http://", "http://alice:secret@", 1)
	send := func() (*Response, error) {
		req := post(t, u, `{}`)
		req.Header.Set("Idempotency-Key", "basic-auth-1")
		return c.Do(req)
	}
	_, err := send()
	require.ErrorIs(t, err, ErrRetriesExhausted)
	resp, err := send()
	require.NoError(t, err)
	assert.Equal(t, 201, resp.StatusCode)
	require.Len(t, s.seen(), 3)
	for i, r := range s.seen() {
		assert.NotEmpty(t, r.Header.Get("Authorization"), "attempt %d", i)
	}
}

// TestDoContinuesAnOlderJournalsPendingOperation: journals written before
// user information was left out of URLs fingerprinted the URL with it;
// their pending operations still continue, rather than being refused as
// a reused key.
func TestDoContinuesAnOlderJournalsPendingOperation(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	j := openJournal(t, "")
	u := strings.Replace(s.srv.URL, "http://", "http://alice:secret@", 1)
	now := time.Now()
	op := &Operation{Key: "older", Method: http.MethodPost, URL: u, State: Pending, Body: []byte(`{}`),
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}
	op.Fingerprint = rawFingerprint(op.Method, op.URL, op.Body) // as journals before fingerprint wrote it
	_, err := j.begin(op)
	require.NoError(t, err)
	c := newClient(t, quickOptions(Options{Journal: j}))
	req := post(t, u, `{}`)
	req.Header.Set("Idempotency-Key", "older")
	resp, err := c.Do(req)
	require.NoError(t, err)
	assert.Equal(t, 201, resp.StatusCode)
}

// TestKeyHeaderReadAsTheWireCarriesIt: HTTP drops a field value's
// leading and trailing spaces on the wire, so the client reads a key
// header set by hand the same way: the key it journals and reports is the
// key the server sees. A value of spaces alone is no key.
func TestKeyHeaderReadAsTheWireCarriesIt(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(201))
	c := newClient(t, quickOptions(Options{}))
	for i, v := range []string{" abc", "abc ", "\t abc \t", `"abc"`} {
		req := post(t, s.srv.URL, `{}`)
		req.Header.Set("Idempotency-Key", v)
		resp, err := c.Do(req)
		require.NoError(t, err, "header %q", v)
		assert.Equal(t, "abc", resp.Key, "header %q", v)
		got, p := key.Parse(s.seen()[i].Key)
		require.Equal(t, key.OK, p)
		assert.Equal(t, "abc", got, "header %q on the wire", v)
	}
	req := post(t, s.srv.URL, `{}`)
	req.Header.Set("Idempotency-Key", "   ")
	_, err := c.Do(req)
	require.ErrorIs(t, err, ErrInvalidKey)
}

// TestRetriesStopAtTheKeysRetention: a retry that would reach the server
// after the key's retention (the server may have forgotten it) is not
// sent; the operation is expired. In a synctest bubble, every attempt's
// time is exact.
func TestRetriesStopAtTheKeysRetention(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var clk clocked
		h := clk.handler(func(_ int, w http.ResponseWriter) { w.WriteHeader(503) })
		j := openJournal(t, "")
		const retention, attemptTimeout = 300 * time.Millisecond, 50 * time.Millisecond
		c := newClient(t, Options{Journal: j, Transport: handlerTransport{h}, KeyRetention: retention,
			AttemptTimeout: attemptTimeout, BaseDelay: 50 * time.Millisecond, MaxDelay: 100 * time.Millisecond, MaxAttempts: 50})
		start := time.Now()
		_, err := c.Do(post(t, "http://api.test/", `{}`))
		require.ErrorIs(t, err, ErrExpired)
		var e *Error
		require.ErrorAs(t, err, &e)
		clk.mu.Lock()
		times := clk.times
		clk.mu.Unlock()
		require.Greater(t, len(times), 2)
		for i, at := range times {
			assert.LessOrEqual(t, at.Sub(start)+attemptTimeout, retention, "attempt %d could arrive after the retention", i)
		}
		assert.Equal(t, len(times), e.Attempts)
		op, ok, err := j.Lookup(e.Key)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, Expired, op.State)
		assert.Equal(t, Expired, onDisk(t, j, e.Key).State, "on disk before Do returned: Resume must not undo it")
	})
}

// onDisk reads key's record as committed, without the lazy overlay.
func onDisk(t *testing.T, j *Journal, key string) *Operation {
	t.Helper()
	var op *Operation
	require.NoError(t, j.db.View(func(tx *bolt.Tx) error {
		var err error
		op, err = j.read(tx, key)
		return err
	}))
	require.NotNil(t, op)
	return op
}

// TestRefusalIsContinuedBySameKeyCall: the first attempt's answer is lost
// (the server may have run it), the retry is refused with 401 because the
// credentials expired meanwhile. The 401 is returned and recorded, so
// Resume leaves it alone; but a call with the same key and fresh
// credentials continues the operation instead of getting the 401 back.
func TestRefusalIsContinuedBySameKeyCall(t *testing.T) {
	t.Parallel()
	var j *Journal
	var onDisk []State // the record as committed when each attempt arrives
	s := newScripted(t, func(n int, w http.ResponseWriter, r *http.Request) {
		var op *Operation
		require.NoError(t, j.db.View(func(tx *bolt.Tx) error {
			var err error
			op, err = j.read(tx, "refused-1")
			return err
		}))
		onDisk = append(onDisk, op.State)
		statuses(503, 401, 201)(n, w, r)
	})
	j = openJournal(t, "")
	c := newClient(t, quickOptions(Options{Journal: j, ResumeJitter: -1}))
	send := func() (*Response, error) {
		req := post(t, s.srv.URL, `{"amount":5}`)
		req.Header.Set("Idempotency-Key", "refused-1")
		return c.Do(req)
	}
	resp, err := send()
	require.NoError(t, err)
	assert.Equal(t, 401, resp.StatusCode)
	res, err := c.Resume(context.Background())
	require.NoError(t, err)
	assert.Empty(t, res, "Resume does not resend what the caller was told was refused")

	// Resume's own snapshot may predate the refusal: Resume still does not
	// continue it, it answers from the journal.
	op, _, err := j.Lookup("refused-1")
	require.NoError(t, err)
	cl := &call{c: c, origin: fromResume, own: *op}
	resp, err = c.do(context.Background(), cl, &cl.own, op.Header)
	require.NoError(t, err)
	assert.True(t, resp.FromJournal)

	resp, err = send()
	require.NoError(t, err)
	assert.Equal(t, 201, resp.StatusCode)
	assert.False(t, resp.FromJournal)
	assert.Len(t, s.seen(), 3)
	assert.Equal(t, []State{Pending, Pending, Pending}, onDisk, "pending on disk before every attempt, the continued one included")
	op, _, err = j.Lookup("refused-1")
	require.NoError(t, err)
	assert.Equal(t, Completed, op.State)
}

// TestRefusalOfAMintedKeyIsNotResent: a 401 on an operation whose key was
// minted for the call is final; the caller resends under a new key, and
// Resume never sends the refused one again.
func TestRefusalOfAMintedKeyIsNotResent(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(401, 201))
	c := newClient(t, quickOptions(Options{Journal: openJournal(t, ""), ResumeJitter: -1}))
	resp, err := c.Do(post(t, s.srv.URL, `{"amount":5}`))
	require.NoError(t, err)
	require.Equal(t, 401, resp.StatusCode)
	assert.Equal(t, Refused, onDisk(t, c.journal, resp.Key).State, "on disk before Do returned: a crash must not leave it pending")
	resp, err = c.Do(post(t, s.srv.URL, `{"amount":5}`)) // fresh token, new key
	require.NoError(t, err)
	require.Equal(t, 201, resp.StatusCode)
	res, err := c.Resume(context.Background())
	require.NoError(t, err)
	assert.Empty(t, res)
	assert.Len(t, s.seen(), 2)
}

// TestAnswersFromTheJournalAreCopies: two callers answered from one record
// get their own header and body; one changing its answer changes nothing
// for the other.
func TestAnswersFromTheJournalAreCopies(t *testing.T) {
	t.Parallel()
	s := newScripted(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Charge", "ch_1")
		w.WriteHeader(201)
		io.WriteString(w, "Created")
	})
	c := newClient(t, quickOptions(Options{Journal: openJournal(t, "")}))
	send := func() *Response {
		req := post(t, s.srv.URL, `{}`)
		req.Header.Set("Idempotency-Key", "copied-1")
		resp, err := c.Do(req)
		require.NoError(t, err)
		return resp
	}
	resp := send()
	looked, _, err := c.journal.Lookup(resp.Key)
	require.NoError(t, err)
	looked.Response.Body[0] = 'Y' // a Lookup result is the caller's too
	first := send()
	require.True(t, first.FromJournal)
	first.Body[0] = 'X'
	first.Header.Set("X-Charge", "changed")
	second := send()
	assert.Equal(t, "Created", string(second.Body))
	assert.Equal(t, "ch_1", second.Header.Get("X-Charge"))
}
