package grpcidem_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemhq/idem/grpcidem/internal/h2fault"
	"github.com/idemhq/idem/grpcidem/internal/scenario"
)

// TestFaultsChargeOnce runs calls through a proxy that resets
// connections before the server sees a call and drops answers after the
// server acted, with the client interceptor retrying (scenario.Faults): on
// every store, each call charges exactly once and every call ends with an
// answer. The naive variant, the same client against a server without the
// interceptor, charges again for every dropped answer (and for every call
// in flight on a connection reset after the server ran it).
func TestFaultsChargeOnce(t *testing.T) {
	t.Parallel()
	for _, mk := range backends(t) {
		b := mk(t)
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			res := scenario.Faults(t, b.store, b.ledger)
			t.Logf("%d calls, %d charges; proxy %+v", scenario.FaultCalls, res.Effects, res.Proxy)
			assert.Empty(t, res.Errors)
			assert.Equal(t, scenario.FaultCalls, res.Effects, "one charge per call")
			assert.Positive(t, res.Proxy.Dropped, "answers were dropped after the server acted")
			assert.Positive(t, res.Proxy.Resets, "connections were reset before the server saw the call")
		})
	}
	t.Run("naive", func(t *testing.T) {
		t.Parallel()
		res := scenario.Faults(t, nil, &scenario.MemLedger{})
		t.Logf("%d calls, %d charges; proxy %+v", scenario.FaultCalls, res.Effects, res.Proxy)
		assert.Empty(t, res.Errors)
		assert.Positive(t, res.Proxy.Dropped)
		assert.GreaterOrEqual(t, int64(res.Effects), scenario.FaultCalls+res.Proxy.Dropped, "every dropped answer means another charge")
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
		svc := &scenario.Charges{Ledger: &scenario.MemLedger{}}
		tc.cfg.Upstream = serve(t, svc, nil)
		proxy, err := h2fault.Start(tc.cfg)
		require.NoError(t, err)
		_, err = dial(t, proxy.Addr()).Charge(t.Context(), charge("ann", 1))
		if tc.effects == 1 && name == "pass" {
			assert.NoError(t, err)
		} else {
			assert.Equal(t, codes.Unavailable, status.Code(err), name)
		}
		assert.Equal(t, tc.effects, svc.Ledger.Count(t, ""), name)
		require.NoError(t, proxy.Close())
	}
	_, err := h2fault.Start(h2fault.Config{Upstream: "192.0.2.1:80"})
	assert.Error(t, err, "loopback only")
}
