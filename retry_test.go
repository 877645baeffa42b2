// This file tests the retry engine: classify and next as tables, and the
// adapter's departures from go-retryablehttp through Do.

package idem

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestClassify(t *testing.T) {
	t.Parallel()
	status := func(code int, h ...string) *http.Response {
		r := &http.Response{StatusCode: code, Header: http.Header{}}
		for i := 0; i+1 < len(h); i += 2 {
			r.Header.Set(h[i], h[i+1])
		}
		return r
	}
	cases := []struct {
		name string
		resp *http.Response
		err  error
		want outcome
	}{
		{"201", status(201), nil, outAnswer},
		{"303", status(303), nil, outAnswer},
		{"400", status(400), nil, outAnswer},
		{"422", status(422), nil, outAnswer},
		{"501", status(501), nil, outAnswer},
		{"408", status(408), nil, outRetryable},
		{"409", status(409), nil, outRetryable},
		{"425", status(425), nil, outRetryable},
		{"429", status(429), nil, outRetryable},
		{"500", status(500), nil, outRetryable},
		{"502", status(502), nil, outRetryable},
		{"503", status(503), nil, outRetryable},
		{"504", status(504), nil, outRetryable},
		{"503 replayed", status(503, "Idempotent-Replayed", "true"), nil, outAnswer},
		{"409 replayed, any case", status(409, "Idempotent-Replayed", "TRUE"), nil, outAnswer},
		{"connection reset", nil, errors.New("read: connection reset by peer"), outFailed},
		{"body cut off", nil, io.ErrUnexpectedEOF, outFailed},
		{"attempt timed out", nil, context.DeadlineExceeded, outTimeout},
		{"net timeout", nil, &net.OpError{Op: "dial", Err: timeoutError{}}, outTimeout},
		{"unknown CA", nil, fmt.Errorf("tls: %w", &x509.UnknownAuthorityError{}), outBroken},
		{"bad scheme", nil, errors.New(`unsupported protocol scheme "ftp"`), outBroken},
		{"body over the limit", status(200), ErrBodyTooLarge, outTooLarge},
	}
	for _, tc := range cases {
		replayed := tc.resp != nil && isReplayed(tc.resp.Header)
		assert.Equal(t, tc.want, classify(tc.resp, tc.err, replayed, nil), tc.name)
	}
}

// TestClassifyHints: an explicit hint turns a retryable status into a stop
// and a final error into a retry; a replay is final whatever it says.
func TestClassifyHints(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	cases := []struct {
		name     string
		status   int
		replayed bool
		hint     *bool
		want     outcome
	}{
		{"503, no hint", 503, false, nil, outRetryable},
		{"503, hint true", 503, false, &yes, outRetryable},
		{"503, hint false", 503, false, &no, outNoRetry},
		{"409, hint false", 409, false, &no, outNoRetry},
		{"429, hint false", 429, false, &no, outNoRetry},
		{"400, hint true", 400, false, &yes, outRetryable},
		{"422, hint true", 422, false, &yes, outRetryable},
		{"400, hint false", 400, false, &no, outAnswer},
		{"400, no hint", 400, false, nil, outAnswer},
		{"201, hint true", 201, false, &yes, outAnswer},
		{"302, hint true", 302, false, &yes, outAnswer},
		{"503 replayed, hint true", 503, true, &yes, outAnswer},
		{"409 replayed (IsReplayed), no hint", 409, true, nil, outAnswer},
		{"500 replayed, hint false", 500, true, &no, outAnswer},
	}
	for _, tc := range cases {
		resp := &http.Response{StatusCode: tc.status, Header: http.Header{}}
		assert.Equal(t, tc.want, classify(resp, nil, tc.replayed, tc.hint), tc.name)
	}
	// A transport error is classified the same whatever the hint.
	assert.Equal(t, outFailed, classify(nil, errors.New("connection reset"), false, &no))
}

func TestRetryHint(t *testing.T) {
	t.Parallel()
	names := []string{"Stripe-Should-Retry", "X-Should-Retry"}
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			out.Add(kv[i], kv[i+1])
		}
		return out
	}
	cases := []struct {
		name   string
		header http.Header
		names  []string
		want   string // "true", "false" or "" for none
	}{
		{"true", h("Stripe-Should-Retry", "true"), names, "true"},
		{"false, any case and spaces", h("Stripe-Should-Retry", " FALSE "), names, "false"},
		{"the second name", h("X-Should-Retry", "false"), names, "false"},
		{"the first present decides", h("Stripe-Should-Retry", "true", "X-Should-Retry", "false"), names, "true"},
		{"junk is no hint", h("Stripe-Should-Retry", "maybe", "X-Should-Retry", "false"), names, ""},
		{"an empty value is no hint", h("Stripe-Should-Retry", ""), names, ""},
		{"not listed: never read", h("X-Should-Retry", "false"), []string{"Stripe-Should-Retry"}, ""},
		{"no names: no hints", h("Stripe-Should-Retry", "false"), nil, ""},
	}
	for _, tc := range cases {
		got := retryHint(tc.header, tc.names)
		if tc.want == "" {
			assert.Nil(t, got, tc.name)
			continue
		}
		require.NotNil(t, got, tc.name)
		assert.Equal(t, tc.want == "true", *got, tc.name)
	}
}

func TestNext(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 25, 10, 0, 0, 0, time.UTC)
	base := retryState{outcome: outRetryable, attempts: 1, maxAttempts: 5, maxRetryAfter: time.Minute,
		backoff: 300 * time.Millisecond, now: now, attemptTimeout: 30 * time.Second}
	broken := errors.New("x509: unknown authority")
	cases := []struct {
		name     string
		mutate   func(*retryState)
		wantWait time.Duration
		wantStop error
	}{
		{"retryable status: backoff", func(*retryState) {}, 300 * time.Millisecond, nil},
		{"transport error: backoff", func(s *retryState) { s.outcome = outFailed }, 300 * time.Millisecond, nil},
		{"timeout: backoff", func(s *retryState) { s.outcome = outTimeout }, 300 * time.Millisecond, nil},
		{"final answer", func(s *retryState) { s.outcome = outAnswer }, 0, errAnswered},
		{"final answer beats a cancelled context", func(s *retryState) { s.outcome, s.ctxErr = outAnswer, context.Canceled }, 0, errAnswered},
		{"final answer on the last attempt", func(s *retryState) { s.outcome, s.attempts = outAnswer, 5 }, 0, errAnswered},
		{"body too large", func(s *retryState) { s.outcome = outTooLarge }, 0, ErrBodyTooLarge},
		{"context ended", func(s *retryState) { s.ctxErr = context.Canceled }, 0, context.Canceled},
		{"broken transport", func(s *retryState) { s.outcome, s.err = outBroken, broken }, 0, broken},
		{"server said not to retry", func(s *retryState) { s.outcome = outNoRetry }, 0, ErrServerSaidNoRetry},
		{"no-retry hint on the first attempt, Retry-After set", func(s *retryState) {
			s.outcome, s.retryAfter, s.attempts = outNoRetry, "1", 1
		}, 0, ErrServerSaidNoRetry},
		{"context ended beats the hint", func(s *retryState) { s.outcome, s.ctxErr = outNoRetry, context.Canceled }, 0, context.Canceled},
		{"attempts used up", func(s *retryState) { s.attempts = 5 }, 0, ErrRetriesExhausted},
		{"resends count as attempts", func(s *retryState) { s.attempts = 6 }, 0, ErrRetriesExhausted},
		{"Retry-After seconds", func(s *retryState) { s.retryAfter = "7" }, 7 * time.Second, nil},
		{"Retry-After is not shortened", func(s *retryState) { s.retryAfter, s.backoff = "2", 9*time.Second }, 2 * time.Second, nil},
		{"Retry-After date", func(s *retryState) { s.retryAfter = now.Add(4 * time.Second).Format(http.TimeFormat) }, 4 * time.Second, nil},
		{"Retry-After clamped", func(s *retryState) { s.retryAfter = "86400" }, time.Minute, nil},
		{"Retry-After unreadable: backoff", func(s *retryState) { s.retryAfter = "soon" }, 300 * time.Millisecond, nil},
		{"wait fits the deadline", func(s *retryState) { s.retryAfter, s.deadline = "5", now.Add(5*time.Second) }, 5 * time.Second, nil},
		{"wait ends after the deadline", func(s *retryState) { s.retryAfter, s.deadline = "5", now.Add(4*time.Second) }, 0, ErrDeadline},
		{"deadline beats retention", func(s *retryState) {
			s.retryAfter, s.deadline, s.retainUntil = "5", now.Add(time.Second), now
		}, 0, ErrDeadline},
		{"retry arrives within retention", func(s *retryState) { s.retainUntil = now.Add(31 * time.Second) }, 300 * time.Millisecond, nil},
		{"retry could arrive after retention", func(s *retryState) { s.retainUntil = now.Add(30 * time.Second) }, 0, ErrExpired},
		{"the wait counts towards retention", func(s *retryState) {
			s.retryAfter, s.retainUntil = "10", now.Add(35*time.Second)
		}, 0, ErrExpired},
	}
	for _, tc := range cases {
		s := base
		tc.mutate(&s)
		wait, stop := next(s)
		assert.Equal(t, tc.wantWait, wait, tc.name)
		assert.Equal(t, tc.wantStop, stop, tc.name)
	}
}

// TestGivingUpKeepsThePool: a call that gives up leaves the connections
// in the pool for the other calls of the client. retryablehttp closes its
// http.Client's idle connections whenever it gives up; attemptTransport
// does not pass that on.
func TestGivingUpKeepsThePool(t *testing.T) {
	t.Parallel()
	s := newScripted(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader([]int{201, 503, 201}[min(n, 2)])
	})
	var dials atomic.Int32
	tr := http.DefaultTransport.(*http.Transport).Clone()
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, addr)
	}
	c := newClient(t, Options{Transport: tr, MaxAttempts: 1})
	_, err := c.Do(post(t, s.srv.URL, `{}`))
	require.NoError(t, err)
	_, err = c.Do(post(t, s.srv.URL, `{}`))
	require.ErrorIs(t, err, ErrRetriesExhausted, "this call gives up")
	_, err = c.Do(post(t, s.srv.URL, `{}`))
	require.NoError(t, err)
	assert.Equal(t, int32(1), dials.Load(), "every call used the one pooled connection")
	assert.Len(t, s.seen(), 3)
}

// TestAttemptsReportedOncePerAttempt: OnAttempt hears of every attempt
// once, with Retry and Wait for those that are followed by another.
func TestAttemptsReportedOncePerAttempt(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(503)
	}))
	t.Cleanup(srv.Close)
	var got []Attempt
	c := newClient(t, Options{MaxAttempts: 3, OnAttempt: func(a Attempt) { got = append(got, a) }})
	_, err := c.Do(post(t, srv.URL, `{}`))
	require.ErrorIs(t, err, ErrRetriesExhausted)
	require.Len(t, got, 3)
	for i, a := range got {
		assert.Equal(t, i+1, a.N)
		assert.Equal(t, 503, a.StatusCode)
		assert.Equal(t, i < 2, a.Retry)
		assert.Zero(t, a.Wait)
	}
}
