package grpcidem_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/scenario"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
	"github.com/idemhq/idem/server"
)

// TestConcurrentCallsRunOnce sends 100 identical calls with one key at
// once, on every store (scenario.Race): each handler that runs holds until
// all 100 have reached the server, so the calls overlap by construction.
// Behind the interceptor the charge is taken once and all 100 get its
// answer; behind a naive server that has no idempotency, 100 charges.
func TestConcurrentCallsRunOnce(t *testing.T) {
	t.Parallel()
	const calls = 100
	for _, mk := range backends(t) {
		b := mk(t)
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			res := scenario.Race(t, b.store, b.ledger, calls)
			assert.Empty(t, res.Errors)
			assert.Equal(t, 1, res.Effects, "one charge")
			assert.Len(t, res.Answers, 1, "every call got the one charge's answer")
			assert.Equal(t, calls-1, res.Replays)
		})
	}
	t.Run("naive", func(t *testing.T) {
		t.Parallel()
		res := scenario.Race(t, nil, &scenario.MemLedger{}, calls)
		assert.Empty(t, res.Errors)
		assert.Equal(t, calls, res.Effects, "without idempotency every call charges")
		assert.Len(t, res.Answers, calls)
	})
}

// TestWorkOutlivesTheCaller: the caller gives up while its charge runs;
// the handler's context is not cancelled, the outcome is recorded, and the
// caller's retry collects it. The naive variant gives the handler the
// connection's context, as a server without the interceptor does: the
// cancellation aborts the handler after the charge was taken, nothing is
// recorded, and the retry charges again.
func TestWorkOutlivesTheCaller(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, b backend, naive bool) int {
		entered := make(chan struct{})
		mem := &scenario.MemLedger{} // the charge is a provider's: no rollback undoes it
		svc := &scenario.Charges{Ledger: mem}
		svc.Answer = func(ctx context.Context, n int64, _ *testpb.ChargeRequest) error {
			if n == 1 {
				close(entered)
				<-server.ClientContext(ctx).Done() // the provider answers after the caller left
			}
			if err := ctx.Err(); err != nil {
				return status.FromContextError(err).Err()
			}
			return nil
		}
		chain := []grpc.UnaryServerInterceptor{grpcidem.UnaryServerInterceptor(b.store, grpcidem.ServerOptions{SingleTenant: true, Wait: time.Minute})}
		if naive {
			chain = append(chain, func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				return h(server.ClientContext(ctx), req)
			})
		}
		c := dial(t, serve(t, svc, chain))
		ctx, cancel := context.WithCancel(t.Context())
		go func() { <-entered; cancel() }()
		_, _, err := call(withKey(ctx, "k-outlive"), c, charge("ann", 1))
		require.Error(t, err, "the caller gave up")
		_, _, err = call(withKey(t.Context(), "k-outlive"), c, charge("ann", 1))
		require.NoError(t, err)
		return mem.Count(t, "")
	}
	for _, mk := range backends(t) {
		b := mk(t)
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, 1, run(t, b, false))
		})
	}
	t.Run("naive", func(t *testing.T) {
		t.Parallel()
		assert.Equal(t, 2, run(t, backends(t)[0](t), true), "the aborted work charged, and its retry charged again")
	})
}
