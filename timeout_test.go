// This file tests the attempt timeout: hung attempts, stalled bodies and
// stalled writes.

package idem

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wrapped hides an *http.Transport behind another RoundTripper, so the
// client must bound attempts with a per-attempt context.
type wrapped struct{ rt http.RoundTripper }

func (w wrapped) RoundTrip(r *http.Request) (*http.Response, error) { return w.rt.RoundTrip(r) }

// forEachTransportPath runs f under testing/synctest twice: serve reaches
// a handler on an in-memory network through an *http.Transport, then
// through another RoundTripper. The per-attempt context must bound both
// alike. Time is the bubble's: an attempt timeout fires when every
// goroutine waits, exactly when it is due, however loaded the machine.
func forEachTransportPath(t *testing.T, f func(t *testing.T, serve func(http.Handler) http.RoundTripper)) {
	for _, wrap := range []bool{false, true} {
		name := "http.Transport"
		if wrap {
			name = "other RoundTripper (context)"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				f(t, func(h http.Handler) http.RoundTripper {
					tr := servePipes(t, h)
					if wrap {
						return wrapped{tr}
					}
					return tr
				})
			})
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
	forEachTransportPath(t, func(t *testing.T, serve func(http.Handler) http.RoundTripper) {
		release := make(chan struct{})
		defer close(release)
		s := &scripted{reply: func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 0 {
				select { // hang until the test ends or the client gives up
				case <-release:
				case <-r.Context().Done():
				}
				return
			}
			w.WriteHeader(201)
		}}
		c := newClient(t, Options{Transport: serve(s), AttemptTimeout: 100 * time.Millisecond,
			BaseDelay: time.Second, MaxDelay: time.Second})
		start := time.Now()
		resp, err := c.Do(post(t, "http://api.test/charges", `{}`))
		require.NoError(t, err)
		assert.Equal(t, 201, resp.StatusCode)
		assert.Equal(t, 2, resp.Attempts)
		elapsed := time.Since(start)
		assert.GreaterOrEqual(t, elapsed, 100*time.Millisecond, "the first attempt ran its whole timeout")
		assert.Less(t, elapsed, 1100*time.Millisecond, "and no more: then one wait under a second")
	})
}

// TestAttemptTimeoutBoundsTheBody: the first attempt's server sends its
// headers and part of the body, then stalls. The attempt timeout ends the
// reading on both transport paths, and the retry gets the answer.
func TestAttemptTimeoutBoundsTheBody(t *testing.T) {
	t.Parallel()
	forEachTransportPath(t, func(t *testing.T, serve func(http.Handler) http.RoundTripper) {
		release := make(chan struct{})
		defer close(release)
		s := &scripted{reply: func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 0 {
				stallBody(w, r, release)
				return
			}
			w.WriteHeader(201)
			io.WriteString(w, `{"id":"ch_1"}`)
		}}
		c := newClient(t, quickOptions(Options{Transport: serve(s), AttemptTimeout: 100 * time.Millisecond}))
		resp, err := c.Do(post(t, "http://api.test/charges", `{}`))
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
// request and never reads its body, so writing the body stalls (an
// in-memory pipe holds no byte the reader has not taken); the attempt
// timeout ends it and the retry gets the answer.
func TestAttemptTimeoutBoundsTheWrite(t *testing.T) {
	t.Parallel()
	forEachTransportPath(t, func(t *testing.T, serve func(http.Handler) http.RoundTripper) {
		release := make(chan struct{})
		defer close(release)
		var n atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				select { // never read the body
				case <-release:
				case <-r.Context().Done():
				}
				return
			}
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(201)
		})
		c := newClient(t, quickOptions(Options{Transport: serve(h), AttemptTimeout: time.Second}))
		req, err := http.NewRequest(http.MethodPost, "http://api.test/upload", bytes.NewReader(make([]byte, 1<<20)))
		require.NoError(t, err)
		resp, err := c.Do(req)
		require.NoError(t, err)
		assert.Equal(t, 201, resp.StatusCode)
		assert.Equal(t, 2, resp.Attempts)
	})
}
