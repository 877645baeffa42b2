// This file tests the attempt timeout: hung attempts, stalled bodies and
// stalled writes.

package idem

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wrapped hides an *http.Transport behind another RoundTripper, so the
// client must bound attempts with a per-attempt context.
type wrapped struct{ rt http.RoundTripper }

func (w wrapped) RoundTrip(r *http.Request) (*http.Response, error) { return w.rt.RoundTrip(r) }

// forEachTransportPath runs f with an *http.Transport and with another
// RoundTripper: the per-attempt context must bound both alike.
func forEachTransportPath(t *testing.T, f func(t *testing.T, rt http.RoundTripper)) {
	for name, rt := range map[string]http.RoundTripper{
		"http.Transport":               http.DefaultTransport.(*http.Transport).Clone(),
		"other RoundTripper (context)": wrapped{http.DefaultTransport.(*http.Transport).Clone()},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, rt)
		})
	}
}

// stallBody answers 201 with headers promising 100 bytes, sends ten of
// them, and waits until release is closed or the client goes away.
func stallBody(w http.ResponseWriter, r *http.Request, release <-chan struct{}) {
	w.Header().Set("Content-Length", "100")
	w.WriteHeader(201)
	io.WriteString(w, `{"id":"ch_`)
	w.(http.Flusher).Flush()
	select {
	case <-release:
	case <-r.Context().Done():
	}
}

// TestAttemptTimeoutRetriesAHungAttempt: the first attempt's server never
// answers; AttemptTimeout ends it and the retry gets the answer.
func TestAttemptTimeoutRetriesAHungAttempt(t *testing.T) {
	t.Parallel()
	forEachTransportPath(t, func(t *testing.T, rt http.RoundTripper) {
		release := make(chan struct{})
		defer close(release)
		s := newScripted(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 0 {
				select { // hang until the test ends or the client gives up
				case <-release:
				case <-r.Context().Done():
				}
				return
			}
			w.WriteHeader(201)
		})
		c := newClient(t, quickOptions(Options{Transport: rt, AttemptTimeout: 100 * time.Millisecond}))
		// Without the attempt timeout the call would hang until this
		// deadline and fail.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := c.Do(post(t, s.srv.URL, `{}`).WithContext(ctx))
		require.NoError(t, err)
		assert.Equal(t, 201, resp.StatusCode)
		assert.Equal(t, 2, resp.Attempts)
	})
}

// TestAttemptTimeoutBoundsTheBody: the first attempt's server sends its
// headers and part of the body, then stalls. The attempt timeout ends the
// reading on both transport paths, and the retry gets the answer.
func TestAttemptTimeoutBoundsTheBody(t *testing.T) {
	t.Parallel()
	forEachTransportPath(t, func(t *testing.T, rt http.RoundTripper) {
		release := make(chan struct{})
		defer close(release)
		s := newScripted(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 0 {
				stallBody(w, r, release)
				return
			}
			w.WriteHeader(201)
			io.WriteString(w, `{"id":"ch_1"}`)
		})
		c := newClient(t, quickOptions(Options{Transport: rt, AttemptTimeout: 100 * time.Millisecond}))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := c.Do(post(t, s.srv.URL, `{}`).WithContext(ctx))
		require.NoError(t, err)
		assert.Equal(t, `{"id":"ch_1"}`, string(resp.Body))
		assert.Equal(t, 2, resp.Attempts)
	})
}

func TestReadAtMost(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		data        string
		size, limit int64
		want        string
		err         error
	}{
		{"exact size", "hello", 5, 10, "hello", nil},
		{"unknown size", "hello", -1, 10, "hello", nil},
		{"size understated", "hello world", 5, 20, "hello world", nil},
		{"size understated, over the limit", "hello world", 5, 8, "", ErrBodyTooLarge},
		{"unknown size, over the limit", "hello world", -1, 8, "", ErrBodyTooLarge},
		{"declared over the limit", "hello world", 11, 8, "", ErrBodyTooLarge},
		{"size overstated", "hi", 5, 10, "", io.ErrUnexpectedEOF},
		{"empty", "", 0, 10, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := readAtMost(strings.NewReader(tc.data), tc.size, tc.limit)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
	// Do refuses an understated body that runs over MaxRequestBody.
	c := newClient(t, Options{MaxRequestBody: 8})
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/", bytes.NewReader([]byte("0123456789")))
	req.ContentLength = 4
	_, err := c.Do(req)
	require.ErrorIs(t, err, ErrBodyTooLarge)
}

// TestAttemptTimeoutBoundsTheWrite: the first attempt's server accepts the
// request and never reads its body, so writing a large body stalls; the
// attempt timeout ends it and the retry gets the answer.
func TestAttemptTimeoutBoundsTheWrite(t *testing.T) {
	t.Parallel()
	forEachTransportPath(t, func(t *testing.T, rt http.RoundTripper) {
		release := make(chan struct{})
		var n atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				select { // never read the body
				case <-release:
				case <-r.Context().Done():
				}
				return
			}
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(201)
		}))
		defer srv.Close()
		defer close(release)
		c := newClient(t, quickOptions(Options{Transport: rt, AttemptTimeout: time.Second, MaxRequestBody: 64 << 20}))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, bytes.NewReader(make([]byte, 16<<20)))
		require.NoError(t, err)
		resp, err := c.Do(req)
		require.NoError(t, err)
		assert.Equal(t, 201, resp.StatusCode)
		assert.Equal(t, 2, resp.Attempts)
	})
}
