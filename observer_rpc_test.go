// This file tests what the Observer hears of a gRPC call made through
// grpcidem: a request of URL scheme "grpc".

package idem

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type rpcTransport func(*http.Request) (*http.Response, error)

func (f rpcTransport) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestObserverHearsAnRPC: a gRPC call's events name its method, its
// target's host and, at the end, its gRPC code; an HTTP request's carry
// none of them.
func TestObserverHearsAnRPC(t *testing.T) {
	t.Parallel()
	n := 0
	answer := rpcTransport(func(r *http.Request) (*http.Response, error) {
		n++
		h := http.Header{"Grpc-Status": {"14"}}
		code := http.StatusServiceUnavailable
		if n > 1 {
			h, code = http.Header{"Grpc-Status": {"5"}}, http.StatusOK // NotFound, final
		}
		return &http.Response{StatusCode: code, Header: h, Body: http.NoBody, Request: r}, nil
	})
	var rec recorder
	c := newClient(t, quickOptions(Options{Observer: rec.observer(), Transport: answer}))
	for target, host := range map[string]string{"dns:///payments.internal:443": "payments.internal", "10.0.0.7:50051": "10.0.0.7",
		"dns:payments.internal:443": "payments.internal", "dns://8.8.8.8/payments.internal:443": "payments.internal",
		"passthrough:///10.0.0.7:50051": "10.0.0.7", "payments.internal": "payments.internal",
		"unix:///run/pay.sock": "/run/pay.sock", "unix:rel.sock": "rel.sock", "unix-abstract:pay": "pay",
		"[::1]:8443": "::1"} {
		rec = recorder{}
		n = 0
		req := (&http.Request{Method: http.MethodPost, URL: &url.URL{Scheme: "grpc", Path: "/pay.v1.Charges/Charge"}, Host: target,
			Header: http.Header{}, Body: http.NoBody}).WithContext(context.Background())
		resp, err := c.Do(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		require.Len(t, rec.starts, 1)
		assert.Equal(t, OperationStartInfo{Method: http.MethodPost, RPCMethod: "pay.v1.Charges/Charge", ServerAddress: host}, rec.starts[0])
		require.Len(t, rec.ends, 1)
		assert.Equal(t, "pay.v1.Charges/Charge", rec.ends[0].RPCMethod)
		assert.Equal(t, 5, rec.ends[0].RPCStatusCode)
		assert.Equal(t, host, rec.ends[0].ServerAddress)
		require.Len(t, rec.retries, 1)
		assert.Equal(t, "pay.v1.Charges/Charge", rec.retries[0].RPCMethod)
	}

	rec = recorder{}
	http200 := rpcTransport(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Grpc-Status": {"3"}}, Body: http.NoBody, Request: r}, nil
	})
	c = newClient(t, quickOptions(Options{Observer: rec.observer(), Transport: http200}))
	req, err := http.NewRequest(http.MethodPost, "https://api.example.com/grpc:/x", strings.NewReader("{}"))
	require.NoError(t, err)
	_, err = c.Do(req)
	require.NoError(t, err)
	require.Len(t, rec.ends, 1)
	assert.Empty(t, rec.ends[0].RPCMethod, "an HTTP request is no RPC, whatever its header")
	assert.Zero(t, rec.ends[0].RPCStatusCode)
}
