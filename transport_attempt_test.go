// This file tests attemptTransport against a transport that breaks
// net/http's contract.

package idem

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bothTransport returns a response and an error together, which
// http.RoundTripper forbids and some transports do all the same; it
// counts the bodies closed.
type bothTransport struct {
	sent, closed atomic.Int64
}

func (t *bothTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.sent.Add(1)
	body := &countingBody{Reader: strings.NewReader("partial"), closed: &t.closed}
	return &http.Response{StatusCode: http.StatusOK, Body: body, Header: http.Header{}, Request: r}, errBoth
}

var errBoth = errors.New("connection reset after the headers")

type countingBody struct {
	io.Reader
	closed *atomic.Int64
}

func (b *countingBody) Close() error { b.closed.Add(1); return nil }

// TestAttemptClosesTheResponseOfAFailedRoundTrip: a response that comes
// with an error is a transport error: it is not answered, and its body is
// closed, once per attempt.
func TestAttemptClosesTheResponseOfAFailedRoundTrip(t *testing.T) {
	t.Parallel()
	rt := &bothTransport{}
	c := newClient(t, quickOptions(Options{MaxAttempts: 3, Transport: rt}))
	_, err := c.Do(post(t, "http://127.0.0.1:1/", `{}`))
	require.Error(t, err, "the response that came with an error is not the answer")
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 3, e.Attempts)
	assert.Equal(t, int64(3), rt.sent.Load())
	assert.Equal(t, int64(3), rt.closed.Load(), "each attempt's response body is closed")
}
