// This file tests the RoundTripper and HTTPClient.

package idem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/internal/key"
)

// TestTransportForSDKs: an *http.Client built on net/http gets keys,
// retries and replays without knowing about idem.
func TestTransportForSDKs(t *testing.T) {
	t.Parallel()
	s := newScripted(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.WriteHeader(200)
			io.WriteString(w, "listed")
			return
		}
		if n == 0 {
			w.WriteHeader(503)
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(201)
		io.WriteString(w, `{"id":"ch_1"}`)
	})
	c := newClient(t, quickOptions(Options{Journal: openJournal(t, "")}))
	hc := c.HTTPClient()

	resp, err := hc.Post(s.srv.URL+"/charges", "application/json", stringsReader(`{"amount":1}`))
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, 201, resp.StatusCode)
	assert.Equal(t, `{"id":"ch_1"}`, string(body))
	assert.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"))
	seen := s.seen()
	require.Len(t, seen, 2)
	assert.NotEmpty(t, seen[0].Key)
	assert.Equal(t, seen[0].Key, seen[1].Key)

	get, err := hc.Get(s.srv.URL + "/charges")
	require.NoError(t, err)
	get.Body.Close()
	assert.Equal(t, 200, get.StatusCode)
	assert.Empty(t, s.seen()[2].Key, "GET passes through without a key")
}

func TestTransportReturnsLastResponseOrError(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(503))
	c := newClient(t, quickOptions(Options{MaxAttempts: 2}))
	resp, err := c.HTTPClient().Post(s.srv.URL, "application/json", stringsReader(`{}`))
	require.NoError(t, err, "never a response and an error together")
	resp.Body.Close()
	assert.Equal(t, 503, resp.StatusCode)

	s422 := newScripted(t, statuses(422))
	resp, err = c.HTTPClient().Post(s422.srv.URL, "application/json", stringsReader(`{}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 422, resp.StatusCode)

	_, err = c.HTTPClient().Post("http://127.0.0.1:1/", "application/json", stringsReader(`{}`))
	var e *Error
	require.True(t, errors.As(err, &e), "no response at all: the *Error, inside net/http's *url.Error")
	assert.ErrorIs(t, err, ErrRetriesExhausted)
}

// TestTransportNeverPassesOffAPartialBody: a status with a body over
// MaxResponseBody, or one cut off when the context ends, is an error from
// the RoundTripper, never a response with a nil error.
func TestTransportNeverPassesOffAPartialBody(t *testing.T) {
	t.Parallel()
	t.Run("over the limit", func(t *testing.T) {
		t.Parallel()
		s := newScripted(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(200)
			w.Write(bytes.Repeat([]byte("x"), 10000))
		})
		c := newClient(t, quickOptions(Options{MaxResponseBody: 5000}))
		resp, err := c.HTTPClient().Post(s.srv.URL, "application/json", strings.NewReader(`{}`))
		require.ErrorIs(t, err, ErrBodyTooLarge)
		assert.Nil(t, resp)
	})
	t.Run("cut off", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			s := &scripted{reply: func(_ int, w http.ResponseWriter, r *http.Request) { stallBody(w, r, release) }}
			c := newClient(t, quickOptions(Options{Transport: servePipes(t, s)}))
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://api.test/", strings.NewReader(`{}`))
			require.NoError(t, err)
			resp, err := c.HTTPClient().Do(req)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Nil(t, resp)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Zero(t, e.StatusCode, "a cut-off body is no response")
			assert.Len(t, s.seen(), 1, "the headers and part of the body arrived, then the deadline")
		})
	})
}

// TestHTTPClientRedirects: an operation's redirect is returned to the
// caller (the key is bound to the first URL); other requests follow them.
func TestHTTPClientRedirects(t *testing.T) {
	t.Parallel()
	s := newScripted(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/old":
			http.Redirect(w, r, "/new", http.StatusTemporaryRedirect)
		case "/page":
			http.Redirect(w, r, "/moved", http.StatusFound)
		default:
			w.WriteHeader(http.StatusCreated)
		}
	})
	c := newClient(t, quickOptions(Options{Journal: openJournal(t, "")}))
	req := post(t, s.srv.URL+"/old", `{}`)
	req.Header.Set("Idempotency-Key", "redirected-1")
	resp, err := c.HTTPClient().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusTemporaryRedirect, resp.StatusCode)
	assert.Equal(t, "/new", resp.Header.Get("Location"))

	resp, err = c.HTTPClient().Get(s.srv.URL + "/page")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusCreated, resp.StatusCode, "a GET follows its redirect")
	assert.Equal(t, "/moved", resp.Request.URL.Path)
}

// TestHeadWithAKey: a HEAD response has no body whatever its
// Content-Length says; it is an answer, not a cut-off body to retry.
func TestHeadWithAKey(t *testing.T) {
	t.Parallel()
	s := newScripted(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "5")
		w.WriteHeader(200)
	})
	c := newClient(t, quickOptions(Options{}))
	req, err := http.NewRequest(http.MethodHead, s.srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Idempotency-Key", "head-1")
	resp, err := c.HTTPClient().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Len(t, s.seen(), 1)
}

// TestRequestsThatGoStraightThroughKeepTheirOwnTimeouts: a GET is not an
// operation; idem adds no timeout to it, so a stream longer than the
// attempt timeout reads to its end.
func TestRequestsThatGoStraightThroughKeepTheirOwnTimeouts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{reply: func(_ int, w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(200)
			for range 4 {
				io.WriteString(w, "tick\n")
				w.(http.Flusher).Flush()
				time.Sleep(100 * time.Millisecond)
			}
		}}
		c := newClient(t, quickOptions(Options{Transport: servePipes(t, s), AttemptTimeout: 150 * time.Millisecond}))
		start := time.Now()
		resp, err := c.HTTPClient().Get("http://api.test/stream")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, strings.Repeat("tick\n", 4), string(b))
		assert.Equal(t, 400*time.Millisecond, time.Since(start), "read to its end, past the attempt timeout")
	})
}

// TestTransportPassesOnWholeBodies: the last response of an operation that
// ran out of retries is passed on whole, not cut to MaxErrorBody; and an
// answer from the journal that kept only part of its body is an error,
// not a short body passed off as whole.
func TestTransportPassesOnWholeBodies(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 10000)
	s := newScripted(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/busy" {
			w.WriteHeader(503)
		} else {
			w.WriteHeader(201)
		}
		io.WriteString(w, big)
	})
	c := newClient(t, quickOptions(Options{Journal: openJournal(t, ""), MaxAttempts: 2, MaxJournalBody: 5000}))
	resp, err := c.HTTPClient().Post(s.srv.URL+"/busy", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 503, resp.StatusCode)
	assert.Len(t, b, len(big))

	post := func() (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, s.srv.URL+"/ok", strings.NewReader(`{}`))
		require.NoError(t, err)
		req.Header.Set("Idempotency-Key", "long-answer-1")
		return c.HTTPClient().Do(req)
	}
	resp, err = post()
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Len(t, b, len(big), "the first answer is whole")
	_, err = post() // answered from the journal, which kept 5000 bytes
	require.ErrorIs(t, err, ErrBodyTooLarge)

	// The same for the server's answer that the key was reused, which Do
	// returns as an error.
	reused := newScripted(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(422)
		fmt.Fprintf(w, `{"type":%q,"detail":%q}`, key.ReusedProblemType, big)
	})
	send422 := func() (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, reused.srv.URL, strings.NewReader(`{}`))
		require.NoError(t, err)
		req.Header.Set("Idempotency-Key", "long-refusal-1")
		return c.HTTPClient().Do(req)
	}
	resp, err = send422()
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Greater(t, len(b), len(big))
	_, err = send422()
	require.Error(t, err, "a 422 the journal kept only part of is not passed off as whole")
}

// TestResponseRequestCarriesTheKey: through HTTPClient the caller learns
// the operation's key from resp.Request, as it was sent: minted, the
// caller's own, or quoted by option. The caller's request is unchanged.
func TestResponseRequestCarriesTheKey(t *testing.T) {
	t.Parallel()
	s := newScripted(t, statuses(503, 201))
	cases := []struct {
		name   string
		opts   Options
		header string // the caller's key header, if any
		want   func(t *testing.T, sent string)
	}{
		{"minted", Options{}, "", func(t *testing.T, sent string) { require.NoError(t, ValidateKey(sent)) }},
		{"the caller's", Options{}, "order-9", func(t *testing.T, sent string) { assert.Equal(t, "order-9", sent) }},
		{"quoted", Options{QuoteKey: true}, "order-9", func(t *testing.T, sent string) { assert.Equal(t, `"order-9"`, sent) }},
		{"another header", Options{Header: "X-Request-Id"}, "", func(t *testing.T, sent string) { require.NoError(t, ValidateKey(sent)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, quickOptions(tc.opts))
			before := len(s.seen())
			req, err := http.NewRequest(http.MethodPost, s.srv.URL, strings.NewReader(`{}`))
			require.NoError(t, err)
			if tc.header != "" {
				req.Header.Set(c.opts.Header, tc.header)
			}
			resp, err := c.HTTPClient().Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			sent := resp.Request.Header.Get(c.opts.Header)
			tc.want(t, sent)
			for _, r := range s.seen()[before:] {
				assert.Equal(t, sent, r.Header.Get(c.opts.Header), "the key the server saw")
			}
			assert.Equal(t, tc.header, req.Header.Get(c.opts.Header), "the caller's request is unchanged")
			assert.Equal(t, req.URL.String(), resp.Request.URL.String())
		})
	}
}
