// This file tests the server's retry hints through Do: a "do not retry"
// hint stops at once, a "retry" hint retries a final status, and neither is
// read unless Options.RetryHints names its header.

package idem

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shouldRetry answers every request with status, the header name: value,
// and a small JSON body.
func shouldRetry(status int, name, value string) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(name, value)
		w.WriteHeader(status)
		io.WriteString(w, `{"error":{"type":"api_error","message":"overloaded"}}`)
	}
}

// TestStripeShouldRetryFalseStopsAtOnce: Stripe-Should-Retry: false on a
// 503 ends the call after one attempt, with the reason and the response in
// the error, and the operation pending in the journal. The same answer to
// a client without Stripe's hints is retried until attempts run out: the
// test would fail if the hint were not read.
func TestStripeShouldRetryFalseStopsAtOnce(t *testing.T) {
	t.Parallel()
	s := newScripted(t, shouldRetry(503, "Stripe-Should-Retry", "false"))
	j := openJournal(t, t.TempDir()+"/j")
	var attempts []Attempt
	c := newClient(t, quickOptions(Options{Profile: Stripe(), Journal: j, OnAttempt: func(a Attempt) { attempts = append(attempts, a) }}))
	_, err := c.Do(post(t, s.srv.URL, `{"amount":100}`))
	require.ErrorIs(t, err, ErrServerSaidNoRetry)
	var e *Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, 1, e.Attempts)
	assert.Equal(t, 503, e.StatusCode)
	assert.Equal(t, "false", e.Header.Get("Stripe-Should-Retry"))
	assert.Contains(t, string(e.Body), "overloaded")
	assert.Contains(t, err.Error(), "the server said not to retry")
	assert.Len(t, s.seen(), 1, "no retry was sent")
	require.Len(t, attempts, 1)
	require.NotNil(t, attempts[0].RetryHint)
	assert.False(t, *attempts[0].RetryHint)
	assert.False(t, attempts[0].Retry)

	pending, err := j.Pending()
	require.NoError(t, err)
	require.Len(t, pending, 1, "the server gave no answer: the operation stays pending")
	assert.Equal(t, e.Key, pending[0].Key)

	naive := newScripted(t, shouldRetry(503, "Stripe-Should-Retry", "false"))
	plain := newClient(t, quickOptions(Options{MaxAttempts: 3}))
	_, err = plain.Do(post(t, naive.srv.URL, `{"amount":100}`))
	require.ErrorIs(t, err, ErrRetriesExhausted, "without the profile's hints the header means nothing")
	assert.Len(t, naive.seen(), 3)
}

// TestRetryHintTrueRetriesAFinalStatus: a hint of true on a 400 retries it
// with the same key and bytes, until the server answers.
func TestRetryHintTrueRetriesAFinalStatus(t *testing.T) {
	t.Parallel()
	s := newScripted(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n < 2 {
			shouldRetry(400, "Stripe-Should-Retry", "true")(n, w, r)
			return
		}
		w.WriteHeader(201)
	})
	c := newClient(t, quickOptions(Options{Profile: Stripe()}))
	resp, err := c.Do(post(t, s.srv.URL, `{"amount":100}`))
	require.NoError(t, err)
	assert.Equal(t, 201, resp.StatusCode)
	assert.Equal(t, 3, resp.Attempts)
	assert.Nil(t, resp.RetryHint, "the answer itself carries no hint")
	seen := s.seen()
	require.Len(t, seen, 3)
	for _, r := range seen[1:] {
		assert.Equal(t, seen[0].Key, r.Key)
		assert.Equal(t, seen[0].Body, r.Body)
	}
}

// TestGenericRetryHintHeader: X-Should-Retry is honoured when
// Options.RetryHints names it, and only then.
func TestGenericRetryHintHeader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		hints    []string
		wantErr  error
		wantSent int
	}{
		{"named", []string{"x-should-retry"}, ErrServerSaidNoRetry, 1},
		{"not named", nil, ErrRetriesExhausted, 3},
		{"another header named", []string{"Stripe-Should-Retry"}, ErrRetriesExhausted, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newScripted(t, shouldRetry(502, "X-Should-Retry", "false"))
			c := newClient(t, quickOptions(Options{RetryHints: tc.hints, MaxAttempts: 3}))
			_, err := c.Do(post(t, s.srv.URL, `{}`))
			require.ErrorIs(t, err, tc.wantErr)
			assert.Len(t, s.seen(), tc.wantSent)
		})
	}
}

// TestNoRetryHintThroughTheTransport: an SDK on the RoundTripper gets the
// server's response, as for exhausted retries, not an error.
func TestNoRetryHintThroughTheTransport(t *testing.T) {
	t.Parallel()
	s := newScripted(t, shouldRetry(503, "Stripe-Should-Retry", "false"))
	c := newClient(t, quickOptions(Options{Profile: Stripe()}))
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.srv.URL, stringsReader(`{}`))
	require.NoError(t, err)
	resp, err := c.HTTPClient().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, "false", resp.Header.Get("Stripe-Should-Retry"))
	assert.Len(t, s.seen(), 1)
}
