package otelidem_test

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/otelidem"
	"github.com/idemhq/idem/server"
)

// grpcAnswers answers as grpcidem's Transport does for a gRPC call: an
// Unavailable (503), then a final NotFound (200 with Grpc-Status 5).
type grpcAnswers struct{ n int }

func (g *grpcAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	g.n++
	if g.n == 1 {
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Grpc-Status": {"14"}}, Body: http.NoBody, Request: r}, nil
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Grpc-Status": {"5"}}, Body: http.NoBody, Request: r}, nil
}

// TestClientObserverRPC: a gRPC call made through grpcidem (a request of
// scheme grpc) is measured and traced under rpc.system.name, rpc.method
// and rpc.response.status_code, as OpenTelemetry's RPC conventions name
// them, in place of the HTTP method and status its transport stands them
// in with; the instruments are the HTTP requests' own.
func TestClientObserverRPC(t *testing.T) {
	t.Parallel()
	tel := newTelemetry()
	obs, _ := tel.clientObservers(t)
	c, err := idem.New(idem.Options{Observer: obs, Transport: &grpcAnswers{}, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
	require.NoError(t, err)
	req := (&http.Request{Method: http.MethodPost, URL: &url.URL{Scheme: "grpc", Path: "/pay.v1.Charges/Charge"},
		Host: "dns:///payments.internal:443", Header: http.Header{}, Body: http.NoBody}).WithContext(context.Background())
	_, err = c.Do(req)
	require.NoError(t, err)

	got := tel.collect(t)
	const call = "idem.from_journal=false,idem.outcome=completed,idem.replayed=false,idem.resumed=false," +
		"rpc.method=pay.v1.Charges/Charge,rpc.response.status_code=NOT_FOUND,rpc.system.name=grpc,server.address=payments.internal"
	assert.Equal(t, points{call: 1}, got[otelidem.ClientOperationDuration])
	assert.Equal(t, points{call: 2}, got[otelidem.ClientAttempts])
	assert.Equal(t, points{"idem.retry.reason=status,rpc.method=pay.v1.Charges/Charge,rpc.system.name=grpc": 1}, got[otelidem.ClientRetries],
		"no HTTP status: it is the transport's, not the server's")
	assert.Equal(t, points{"idem.retry_after=false,rpc.method=pay.v1.Charges/Charge,rpc.system.name=grpc": 1}, got[otelidem.ClientRetryDelay])

	spans := tel.spans.Ended()
	require.Len(t, spans, 1)
	attrs := attribute.NewSet(spans[0].Attributes()...)
	v, _ := attrs.Value("rpc.response.status_code")
	assert.Equal(t, "NOT_FOUND", v.AsString())
	v, _ = attrs.Value("rpc.method")
	assert.Equal(t, "pay.v1.Charges/Charge", v.AsString())
	assert.False(t, attrs.HasValue("http.response.status_code"))
	assert.False(t, attrs.HasValue("http.request.method"))
}

// resentUnavailable answers every attempt of a gRPC call Unavailable
// (503 with Grpc-Status 14), and writes the first one twice, as net/http
// does on its own when a reused keep-alive connection turns out dead.
type resentUnavailable struct{ n atomic.Int64 }

func (u *resentUnavailable) RoundTrip(r *http.Request) (*http.Response, error) {
	writes := 1
	if u.n.Add(1) == 1 {
		writes = 2
	}
	if tr := httptrace.ContextClientTrace(r.Context()); tr != nil && tr.WroteRequest != nil {
		for range writes {
			tr.WroteRequest(httptrace.WroteRequestInfo{})
		}
	}
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Grpc-Status": {"14"}}, Body: http.NoBody, Request: r}, nil
}

// TestClientObserverRPCResendAndBudget: a gRPC call's resend of its first
// attempt is a retry counted under rpc.method, as its other retries are,
// and the retry budget's refusal is counted under it too: no instrument
// counts a gRPC call under http.request.method.
func TestClientObserverRPCResendAndBudget(t *testing.T) {
	t.Parallel()
	tel := newTelemetry()
	obs, _ := tel.clientObservers(t)
	c, err := idem.New(idem.Options{Observer: obs, Transport: &resentUnavailable{}, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond,
		MaxAttempts: 10, Budget: idem.BudgetOptions{Capacity: 12, RetryCost: 5, SuccessRefund: 1}})
	require.NoError(t, err)
	req := (&http.Request{Method: http.MethodPost, URL: &url.URL{Scheme: "grpc", Path: "/pay.v1.Charges/Charge"},
		Host: "dns:///payments.internal:443", Header: http.Header{}, Body: http.NoBody}).WithContext(context.Background())
	_, err = c.Do(req)
	require.ErrorIs(t, err, idem.ErrBudgetExhausted)

	got := tel.collect(t)
	const rpc = "rpc.method=pay.v1.Charges/Charge,rpc.system.name=grpc"
	assert.Equal(t, points{
		"idem.retry.reason=transport_error," + rpc: 1, // the resend
		"idem.retry.reason=status," + rpc:          2, // 12 tokens pay two retries at 5
	}, got[otelidem.ClientRetries])
	assert.Equal(t, points{rpc: 1}, got[otelidem.ClientBudgetExhausted])
	for name, p := range got {
		assert.Zero(t, p.with("http.request.method=POST"), "%s counts a gRPC call under its HTTP method", name)
	}
}

// TestServerObserverRPC: a gRPC call grpcidem's server interceptor
// answered is counted under rpc.system.name and rpc.method, without an
// HTTP route or method.
func TestServerObserverRPC(t *testing.T) {
	t.Parallel()
	tel := newTelemetry()
	obs := tel.observer(t, false)
	obs.Request(context.Background(), server.RequestInfo{Route: "/pay.v1.Charges/Charge", RPCMethod: "pay.v1.Charges/Charge", Outcome: server.OutcomeReplayed})
	obs.Request(context.Background(), server.RequestInfo{Method: http.MethodPost, Route: "/charges", Outcome: server.OutcomeReplayed})
	assert.Equal(t, points{
		"idem.result=replayed,rpc.method=pay.v1.Charges/Charge,rpc.system.name=grpc": 1,
		"http.request.method=POST,http.route=/charges,idem.result=replayed":          1,
	}, tel.collect(t)[otelidem.ServerRequests])
}
