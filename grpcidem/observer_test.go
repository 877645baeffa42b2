package grpcidem_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/scenario"
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
