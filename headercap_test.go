// This file tests that a transport that appends to a request header
// cannot write into the caller's header.

package idem

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTransportAppendingToAHeader: a transport that appends to a header
// value on every attempt (which http.RoundTripper forbids, and some
// transports do) leaves the caller's header and its storage as they were.
func TestTransportAppendingToAHeader(t *testing.T) {
	t.Parallel()
	n := 0
	rt := rpcTransport(func(r *http.Request) (*http.Response, error) {
		n++
		r.Header["Accept"] = append(r.Header["Accept"], "text/mine")
		code := http.StatusServiceUnavailable
		if n == 3 {
			code = http.StatusCreated
		}
		return &http.Response{StatusCode: code, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})
	c := newClient(t, quickOptions(Options{Transport: rt}))
	req, err := http.NewRequest(http.MethodPost, "http://api.example/charges", strings.NewReader("{}"))
	require.NoError(t, err)
	accept := make([]string, 1, 4)
	accept[0] = "application/json"
	req.Header["Accept"] = accept
	_, err = c.Do(req)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Equal(t, []string{"application/json"}, req.Header["Accept"])
	assert.Equal(t, []string{"application/json", "", "", ""}, accept[:4], "nothing written past the caller's value")
}
