package grpcidem_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
	"github.com/idemhq/idem/server"
)

// arrivals counts the calls that reached the server, in front of every
// other interceptor, and closes all when n have.
type arrivals struct {
	n    int64
	seen atomic.Int64
	all  chan struct{}
}

func newArrivals(n int64) *arrivals { return &arrivals{n: n, all: make(chan struct{})} }

func (a *arrivals) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if a.seen.Add(1) == a.n {
		close(a.all)
	}
	return h(ctx, req)
}

// wait blocks until every call has arrived. The bound only keeps a broken
// run from hanging; nothing is measured by it.
func (a *arrivals) wait(t *testing.T) {
	select {
	case <-a.all:
	case <-time.After(time.Minute):
		t.Errorf("only %d of %d calls arrived", a.seen.Load(), a.n)
	}
}

// TestConcurrentCallsRunOnce sends 100 identical calls with one key at
// once, on every store: each handler that runs holds until all 100 have
// reached the server, so the calls overlap by construction. Behind the
// interceptor the charge is taken once and all 100 get its answer;
// behind a naive server that has no idempotency, 100 charges.
func TestConcurrentCallsRunOnce(t *testing.T) {
	t.Parallel()
	const calls = 100
	run := func(t *testing.T, b backend, protect bool) (effects int, ids map[string]int, replays int) {
		arr := newArrivals(calls)
		svc := &charges{ledger: b.ledger, hold: func(context.Context, int64) { arr.wait(t) }}
		chain := []grpc.UnaryServerInterceptor{arr.intercept}
		if protect {
			chain = append(chain, grpcidem.UnaryServerInterceptor(b.store, grpcidem.ServerOptions{SingleTenant: true, Wait: time.Minute}))
		}
		c := dial(t, serve(t, svc, chain))
		var (
			mu sync.Mutex
			wg sync.WaitGroup
		)
		ids = map[string]int{}
		for range calls {
			wg.Go(func() {
				reply, err, replayed := call(withKey(t.Context(), "k-race"), c, charge("ann", 4200))
				mu.Lock()
				defer mu.Unlock()
				if !assert.NoError(t, err) {
					return
				}
				ids[reply.GetId()]++
				if replayed {
					replays++
				}
			})
		}
		wg.Wait()
		return b.ledger.count(t, "ann"), ids, replays
	}
	for _, mk := range backends(t) {
		b := mk(t)
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			effects, ids, replays := run(t, b, true)
			assert.Equal(t, 1, effects, "one charge")
			assert.Len(t, ids, 1, "every call got the one charge's answer")
			assert.Equal(t, calls-1, replays)
		})
	}
	t.Run("naive", func(t *testing.T) {
		t.Parallel()
		effects, ids, _ := run(t, backend{name: "none", ledger: &memLedger{}}, false)
		assert.Equal(t, calls, effects, "without idempotency every call charges")
		assert.Len(t, ids, calls)
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
		mem := &memLedger{} // the charge is a provider's: no rollback undoes it
		svc := &charges{ledger: mem}
		svc.answer = func(ctx context.Context, n int64, _ *testpb.ChargeRequest) error {
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
		_, err, _ := call(withKey(ctx, "k-outlive"), c, charge("ann", 1))
		require.Error(t, err, "the caller gave up")
		_, err, _ = call(withKey(t.Context(), "k-outlive"), c, charge("ann", 1))
		require.NoError(t, err)
		return mem.count(t, "")
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
