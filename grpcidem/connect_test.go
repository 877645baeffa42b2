package grpcidem_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/grpcidem/internal/scenario"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
	"github.com/idemhq/idem/internal/faultproxy"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// TestConnectOverIdemHTTPClient shows that unary Connect calls need no
// gRPC interceptor at all: Connect's protocol is a POST with the message
// as its body, so idem's Client.HTTPClient gives every call a key header
// and retries it, and server.Middleware runs it once, through the HTTP
// fault proxy that drops answers after the server acted. Connect's
// generic client and handler need no generated code. The naive server
// without the middleware charges again for dropped answers.
func TestConnectOverIdemHTTPClient(t *testing.T) {
	t.Parallel()
	const calls, procedure = 30, "/idem.test.v1.Charges/Charge"
	run := func(t *testing.T, protect bool) (effects int, replays int, st faultproxy.Stats) {
		svc := &scenario.Charges{Ledger: &scenario.MemLedger{}}
		var h http.Handler = connect.NewUnaryHandler(procedure,
			func(ctx context.Context, req *connect.Request[testpb.ChargeRequest]) (*connect.Response[testpb.ChargeReply], error) {
				reply, err := svc.Charge(ctx, req.Msg)
				if err != nil {
					return nil, err
				}
				return connect.NewResponse(reply), nil
			})
		if protect {
			h = server.Middleware(memstore.New(memstore.Options{}), server.Options{SingleTenant: true})(h)
		}
		mux := http.NewServeMux()
		mux.Handle(procedure, h)
		upstream := httptest.NewServer(mux)
		t.Cleanup(upstream.Close)
		proxy, err := faultproxy.Start(faultproxy.Config{Upstream: upstream.URL, Drop: 0.3, Seed: 7})
		require.NoError(t, err)
		t.Cleanup(func() { proxy.Close() })

		ic, err := idem.New(idem.Options{MaxAttempts: 30, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, Budget: idem.BudgetOptions{Capacity: -1}})
		require.NoError(t, err)
		client := connect.NewClient[testpb.ChargeRequest, testpb.ChargeReply](ic.HTTPClient(), proxy.URL()+procedure)
		var (
			mu sync.Mutex
			wg sync.WaitGroup
		)
		for i := range calls {
			wg.Go(func() {
				resp, err := client.CallUnary(t.Context(), connect.NewRequest(charge(fmt.Sprint("customer-", i), 100)))
				if !assert.NoError(t, err) {
					return
				}
				if resp.Header().Get(server.ReplayedHeader) == "true" {
					mu.Lock()
					replays++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return svc.Ledger.Count(t, ""), replays, proxy.Stats()
	}
	t.Run("middleware", func(t *testing.T) {
		t.Parallel()
		effects, replays, st := run(t, true)
		t.Logf("%d calls, %d charges, %d replays; proxy %+v", calls, effects, replays, st)
		assert.Equal(t, calls, effects)
		assert.Positive(t, st.Dropped)
	})
	t.Run("naive", func(t *testing.T) {
		t.Parallel()
		effects, _, st := run(t, false)
		t.Logf("%d calls, %d charges; proxy %+v", calls, effects, st)
		assert.Equal(t, int64(calls)+st.Dropped, int64(effects), "every dropped answer charged again")
	})
}
