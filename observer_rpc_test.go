// This file tests what the Observer hears of a gRPC call made through
// grpcidem: a request of URL scheme "grpc".

package idem

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
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

// rpcCall is the method of the gRPC calls these tests make, and rpcPost
// a request for it as grpcidem's interceptor makes one, to target.
const rpcCall = "pay.v1.Charges/Charge"

func rpcPost(ctx context.Context, target string) *http.Request {
	return (&http.Request{Method: http.MethodPost, URL: &url.URL{Scheme: "grpc", Path: "/" + rpcCall}, Host: target,
		Header: http.Header{}, Body: http.NoBody}).WithContext(ctx)
}

// rpcAnswer is an answer of grpcidem's Transport: an HTTP status and the
// Grpc-Status it stands for ("" for none).
func rpcAnswer(r *http.Request, code int, grpcStatus string) *http.Response {
	h := http.Header{}
	if grpcStatus != "" {
		h.Set("Grpc-Status", grpcStatus)
	}
	return &http.Response{StatusCode: code, Header: h, Body: http.NoBody, Request: r}
}

// journalRPC leaves one gRPC call pending in j, as a process that saw
// only an Unavailable before it stopped would: a grpc:///pay.v1.Charges/Charge
// operation to the target dns:///payments.internal:443.
func journalRPC(t *testing.T, j *Journal) {
	t.Helper()
	unavailable := rpcTransport(func(r *http.Request) (*http.Response, error) {
		return rpcAnswer(r, http.StatusServiceUnavailable, "14"), nil
	})
	first := newClient(t, quickOptions(Options{Journal: j, Transport: unavailable, MaxAttempts: 1}))
	_, err := first.Do(rpcPost(context.Background(), "dns:///payments.internal:443"))
	require.ErrorIs(t, err, ErrRetriesExhausted)
	pending, err := j.Pending()
	require.NoError(t, err)
	require.Len(t, pending, 1)
	require.Equal(t, "grpc:///"+rpcCall, pending[0].URL)
}

// TestObserverHearsAResumedRPC: a gRPC call resumed from the journal, with
// no live request to read its method from, names it on every event (its
// start, each attempt, its retry, its end), and its end carries the final
// answer's gRPC code.
func TestObserverHearsAResumedRPC(t *testing.T) {
	t.Parallel()
	j, err := OpenJournal(t.TempDir()+"/j", JournalOptions{})
	require.NoError(t, err)
	defer j.Close()
	journalRPC(t, j)

	var n atomic.Int64
	answer := rpcTransport(func(r *http.Request) (*http.Response, error) {
		if n.Add(1) == 1 {
			return rpcAnswer(r, http.StatusServiceUnavailable, "14"), nil // Unavailable
		}
		return rpcAnswer(r, http.StatusOK, "5"), nil // NotFound: final
	})
	var rec recorder
	c := newClient(t, quickOptions(Options{Journal: j, Transport: answer, Observer: rec.observer(), ResumeJitter: -1}))
	res, err := c.Resume(context.Background())
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Equal(t, []OperationStartInfo{{Method: http.MethodPost, RPCMethod: rpcCall, ServerAddress: "payments.internal", Resumed: true}}, rec.starts)
	assert.Equal(t, []AttemptInfo{
		{Method: http.MethodPost, RPCMethod: rpcCall, N: 1, Sent: 1, StatusCode: http.StatusServiceUnavailable},
		{Method: http.MethodPost, RPCMethod: rpcCall, N: 2, Sent: 1, StatusCode: http.StatusOK},
	}, rec.attempts)
	require.Len(t, rec.retries, 1)
	assert.Equal(t, rpcCall, rec.retries[0].RPCMethod)
	require.Len(t, rec.ends, 1)
	e := rec.ends[0]
	assert.Equal(t, rpcCall, e.RPCMethod)
	assert.Equal(t, 5, e.RPCStatusCode)
	assert.Equal(t, "payments.internal", e.ServerAddress)
	assert.True(t, e.Resumed)
	assert.Equal(t, OutcomeCompleted, e.Outcome)
	assert.Equal(t, 2, e.Attempts)
}

// TestObserverHearsAnRPCsBudgetRefuse: the retry budget's refusal of a
// resumed gRPC call's retry names the call's method, and its end the
// last response's gRPC code.
func TestObserverHearsAnRPCsBudgetRefuse(t *testing.T) {
	t.Parallel()
	j, err := OpenJournal(t.TempDir()+"/j", JournalOptions{})
	require.NoError(t, err)
	defer j.Close()
	journalRPC(t, j)

	unavailable := rpcTransport(func(r *http.Request) (*http.Response, error) {
		return rpcAnswer(r, http.StatusServiceUnavailable, "14"), nil
	})
	var rec recorder
	c := newClient(t, quickOptions(Options{Journal: j, Transport: unavailable, Observer: rec.observer(), ResumeJitter: -1,
		MaxAttempts: 10, Budget: BudgetOptions{Capacity: 12, RetryCost: 5, SuccessRefund: 1}}))
	res, err := c.Resume(context.Background())
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.ErrorIs(t, res[0].Err, ErrBudgetExhausted)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Equal(t, []BudgetInfo{{Method: http.MethodPost, RPCMethod: rpcCall, Attempt: 3}}, rec.budget, "12 tokens pay two retries at 5")
	require.Len(t, rec.ends, 1)
	assert.Equal(t, OutcomeBudgetExhausted, rec.ends[0].Outcome)
	assert.Equal(t, rpcCall, rec.ends[0].RPCMethod)
	assert.Equal(t, 14, rec.ends[0].RPCStatusCode)
}

// TestObserverRPCStatusCodeNone: a gRPC call's end carries RPCStatusCode
// -1 when it has no gRPC code to give: no response came, the last one had
// no Grpc-Status or an unreadable one, or nothing was sent. A Grpc-Status
// of 0 is OK, a code like any other.
func TestObserverRPCStatusCodeNone(t *testing.T) {
	t.Parallel()
	refused := errors.New("connection refused")
	for _, tc := range []struct {
		name       string
		status     int    // the answer's HTTP status, and OperationEndInfo.StatusCode; 0: no response
		grpcStatus string // the answer's Grpc-Status, "" for none
		canceled   bool   // the call's context is cancelled before it begins
		outcome    Outcome
		code       int // OperationEndInfo.RPCStatusCode
	}{
		{name: "no response", outcome: OutcomeRetriesExhausted, code: -1},
		{name: "no Grpc-Status", status: http.StatusServiceUnavailable, outcome: OutcomeRetriesExhausted, code: -1},
		{name: "unreadable Grpc-Status", status: http.StatusOK, grpcStatus: "OK", outcome: OutcomeCompleted, code: -1},
		{name: "Grpc-Status past 16 bits", status: http.StatusOK, grpcStatus: "65536", outcome: OutcomeCompleted, code: -1},
		{name: "nothing sent", status: 0, canceled: true, outcome: OutcomeCanceled, code: -1},
		{name: "OK", status: http.StatusOK, grpcStatus: "0", outcome: OutcomeCompleted, code: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var sent atomic.Int64
			answer := rpcTransport(func(r *http.Request) (*http.Response, error) {
				sent.Add(1)
				if tc.status == 0 {
					return nil, refused
				}
				return rpcAnswer(r, tc.status, tc.grpcStatus), nil
			})
			var rec recorder
			c := newClient(t, quickOptions(Options{Observer: rec.observer(), Transport: answer, MaxAttempts: 2}))
			ctx, cancel := context.WithCancel(context.Background())
			if tc.canceled {
				cancel()
			}
			defer cancel()
			c.Do(rpcPost(ctx, "payments.internal:443"))
			require.Len(t, rec.ends, 1)
			e := rec.ends[0]
			assert.Equal(t, rpcCall, e.RPCMethod)
			assert.Equal(t, tc.outcome, e.Outcome)
			assert.Equal(t, tc.status, e.StatusCode)
			assert.Equal(t, tc.code, e.RPCStatusCode)
			if tc.canceled {
				assert.Zero(t, sent.Load(), "a cancelled call sends nothing")
			}
		})
	}
}
