package grpcidem_test

import (
	"context"
	"fmt"
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
	"github.com/idemhq/idem/grpcidem/internal/h2fault"
)

// TestFaultsChargeOnce runs calls through a proxy that resets
// connections before the server sees a call and drops answers after the
// server acted, with the client interceptor retrying: on every store,
// each call charges exactly once and every call ends with an answer. The
// naive variant, the same client against a server without the
// interceptor, charges again for every dropped answer (and for every call
// in flight on a connection reset after the server ran it).
func TestFaultsChargeOnce(t *testing.T) {
	t.Parallel()
	const calls, workers = 40, 2
	run := func(t *testing.T, b backend, protect bool) (effects int, st h2fault.Stats) {
		svc := &charges{ledger: b.ledger}
		var chain []grpc.UnaryServerInterceptor
		if protect {
			chain = append(chain, grpcidem.UnaryServerInterceptor(b.store, grpcidem.ServerOptions{SingleTenant: true}))
		}
		proxy, err := h2fault.Start(h2fault.Config{Upstream: serve(t, svc, chain), ResetEvery: 7, DropEvery: 4})
		require.NoError(t, err)
		t.Cleanup(func() { proxy.Close() })
		ic := interceptor(t, grpcidem.ClientOptions{
			MaxAttempts: 100, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond,
			MaxRetryDelay: 5 * time.Millisecond, Budget: idem.BudgetOptions{Capacity: -1},
		})
		c := dial(t, proxy.Addr(), grpc.WithUnaryInterceptor(ic))
		work := make(chan int)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for i := range work {
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					_, err := c.Charge(ctx, charge(fmt.Sprint("customer-", i), 100))
					cancel()
					assert.NoError(t, err, "call %d", i)
				}
			})
		}
		for i := range calls {
			work <- i
		}
		close(work)
		wg.Wait()
		return b.ledger.count(t, ""), proxy.Stats()
	}
	for _, mk := range backends(t) {
		b := mk(t)
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			effects, st := run(t, b, true)
			t.Logf("%d calls, %d charges; proxy %+v", calls, effects, st)
			assert.Equal(t, calls, effects, "one charge per call (proxy: %+v)", st)
			assert.Positive(t, st.Dropped, "answers were dropped after the server acted")
			assert.Positive(t, st.Resets, "connections were reset before the server saw the call")
		})
	}
	t.Run("naive", func(t *testing.T) {
		t.Parallel()
		effects, st := run(t, backends(t)[0](t), false)
		t.Logf("%d calls, %d charges; proxy %+v", calls, effects, st)
		assert.Positive(t, st.Dropped)
		assert.GreaterOrEqual(t, effects, int(int64(calls)+st.Dropped), "every dropped answer means another charge (proxy: %+v)", st)
	})
}

// TestProxyDropsAfterTheServerActed pins the proxy's two faults: a reset
// call never reaches the server, a dropped answer was acted on.
func TestProxyDropsAfterTheServerActed(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		cfg     h2fault.Config
		effects int
	}{
		"reset": {h2fault.Config{ResetEvery: 1}, 0},
		"drop":  {h2fault.Config{DropEvery: 1}, 1},
		"pass":  {h2fault.Config{}, 1},
	} {
		svc := &charges{ledger: &memLedger{}}
		tc.cfg.Upstream = serve(t, svc, nil)
		proxy, err := h2fault.Start(tc.cfg)
		require.NoError(t, err)
		_, err = dial(t, proxy.Addr()).Charge(t.Context(), charge("ann", 1))
		if tc.effects == 1 && name == "pass" {
			assert.NoError(t, err)
		} else {
			assert.Equal(t, codes.Unavailable, status.Code(err), name)
		}
		assert.Equal(t, tc.effects, svc.ledger.count(t, ""), name)
		require.NoError(t, proxy.Close())
	}
	_, err := h2fault.Start(h2fault.Config{Upstream: "192.0.2.1:80"})
	assert.Error(t, err, "loopback only")
}
