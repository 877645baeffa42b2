package grpcidem_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/scenario"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// TestObserverEvents: server.Observer hears one Request event per
// protected call, with the full method name as its Route, and the claims
// of first calls.
func TestObserverEvents(t *testing.T) {
	t.Parallel()
	var (
		mu       sync.Mutex
		events   []server.RequestInfo
		starts   int
		ends     []server.Outcome
		storeOps int
	)
	obs := &server.Observer{
		Request: func(_ context.Context, info server.RequestInfo) {
			mu.Lock()
			events = append(events, info)
			mu.Unlock()
		},
		ClaimStart: func(ctx context.Context, _ server.ClaimStartInfo) context.Context {
			mu.Lock()
			starts++
			mu.Unlock()
			return ctx
		},
		ClaimEnd: func(_ context.Context, info server.ClaimEndInfo) {
			mu.Lock()
			ends = append(ends, info.Outcome)
			mu.Unlock()
		},
		StoreOp: func(context.Context, server.StoreOpInfo) {
			mu.Lock()
			storeOps++
			mu.Unlock()
		},
	}
	svc := &scenario.Charges{Ledger: &scenario.MemLedger{}}
	opts := grpcidem.ServerOptions{SingleTenant: true, Observer: obs}
	c := dial(t, serve(t, svc, []grpc.UnaryServerInterceptor{grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), opts)}))
	_, _, err := call(withKey(t.Context(), "k-obs"), c, charge("ann", 1))
	require.NoError(t, err)
	_, _, err = call(withKey(t.Context(), "k-obs"), c, charge("ann", 1))
	require.NoError(t, err)
	_, _, err = call(withKey(t.Context(), "k-obs"), c, charge("ann", 2))
	require.Error(t, err)
	_, _, err = call(t.Context(), c, charge("ann", 1))
	require.Error(t, err)

	mu.Lock()
	defer mu.Unlock()
	want := []server.Outcome{server.OutcomeExecuted, server.OutcomeReplayed, server.OutcomeKeyReused, server.OutcomeKeyMissing}
	require.Len(t, events, len(want))
	for i, e := range events {
		assert.Equal(t, want[i], e.Outcome)
		assert.Equal(t, chargeMethod, e.Route)
		assert.Equal(t, chargeMethod[1:], e.RPCMethod, "the method without its slash, as rpc.method")
		assert.Empty(t, e.Method)
	}
	assert.Equal(t, 1, starts)
	assert.Equal(t, []server.Outcome{server.OutcomeExecuted}, ends)
	assert.Positive(t, storeOps)
}

// TestClientObserverHearsAResumedCall: a call journaled by one process
// and resumed by the next through Client.Resume, which has only the
// journal's grpc:///idem.test.v1.Charges/Charge to go by, is heard by
// idem's Observer under its gRPC method on every event, and its end
// carries the final answer's gRPC code.
func TestClientObserverHearsAResumedCall(t *testing.T) {
	t.Parallel()
	svc := &scenario.Charges{Ledger: &scenario.MemLedger{}, Answer: func(_ context.Context, n int64, _ *testpb.ChargeRequest) error {
		if n == 1 {
			return status.Error(codes.Unavailable, "warming up")
		}
		return status.Error(codes.NotFound, "no such customer")
	}}
	addr := serve(t, svc, nil)
	j := openJournal(t)
	first, err := idem.New(idem.Options{Journal: j, Transport: grpcidem.NewTransport(nil), MaxAttempts: 1})
	require.NoError(t, err)
	_, err = dial(t, "127.0.0.1:1", grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{Client: first}))).Charge(t.Context(), charge("ann", 5))
	require.ErrorIs(t, err, idem.ErrRetriesExhausted)

	var (
		mu       sync.Mutex
		starts   []idem.OperationStartInfo
		attempts []idem.AttemptInfo
		retries  []idem.RetryInfo
		ends     []idem.OperationEndInfo
	)
	obs := &idem.Observer{
		OperationStart: func(ctx context.Context, i idem.OperationStartInfo) context.Context {
			mu.Lock()
			defer mu.Unlock()
			starts = append(starts, i)
			return ctx
		},
		Attempt: func(_ context.Context, i idem.AttemptInfo) {
			mu.Lock()
			defer mu.Unlock()
			attempts = append(attempts, i)
		},
		Retry: func(_ context.Context, i idem.RetryInfo) {
			mu.Lock()
			defer mu.Unlock()
			retries = append(retries, i)
		},
		OperationEnd: func(_ context.Context, i idem.OperationEndInfo) {
			mu.Lock()
			defer mu.Unlock()
			ends = append(ends, i)
		},
	}
	tr := grpcidem.NewTransport(nil)
	next, err := idem.New(idem.Options{Journal: j, Transport: tr, Observer: obs, ResumeJitter: -1,
		BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
	require.NoError(t, err)
	tr.Register("127.0.0.1:1", conn(t, addr)) // the call's target, served at addr now
	res, err := next.Resume(t.Context())
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err)
	assert.Equal(t, codes.NotFound, status.Code(grpcidem.Answer(res[0].Response, &testpb.ChargeReply{})))

	mu.Lock()
	defer mu.Unlock()
	method := chargeMethod[1:]
	assert.Equal(t, []idem.OperationStartInfo{{Method: "POST", RPCMethod: method, ServerAddress: "127.0.0.1", Resumed: true}}, starts)
	require.Len(t, attempts, 2)
	for _, a := range attempts {
		assert.Equal(t, method, a.RPCMethod)
	}
	require.Len(t, retries, 1)
	assert.Equal(t, method, retries[0].RPCMethod)
	require.Len(t, ends, 1)
	assert.Equal(t, method, ends[0].RPCMethod)
	assert.Equal(t, int(codes.NotFound), ends[0].RPCStatusCode)
	assert.Equal(t, idem.OutcomeCompleted, ends[0].Outcome)
	assert.True(t, ends[0].Resumed)
	assert.Equal(t, 2, svc.Ledger.Count(t, ""), "the Unavailable and the NotFound")
}
