package redisstore_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/internal/charges"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/redisstore"
)

// TestChargesServiceOnRedis: the example charges service with its records
// in Redis executes a charge once, replays its repeat, refuses the key
// reused with another body, and its store calls name Redis.
func TestChargesServiceOnRedis(t *testing.T) {
	forEachTarget(t, func(t *testing.T, rdb redis.UniversalClient) {
		var mu sync.Mutex
		results := map[server.Outcome]int{}
		systems := map[string]bool{}
		obs := &server.Observer{
			Request: func(_ context.Context, info server.RequestInfo) {
				mu.Lock()
				defer mu.Unlock()
				results[info.Outcome]++
			},
			StoreOp: func(_ context.Context, info server.StoreOpInfo) {
				mu.Lock()
				defer mu.Unlock()
				systems[info.System] = true
			},
		}
		svc, err := charges.New(context.Background(), charges.Config{Store: newStore(t, rdb, redisstore.Options{}), Observer: obs})
		require.NoError(t, err)
		srv := httptest.NewServer(svc.Handler())
		defer srv.Close()
		post := func(body string) (int, bool) {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/charges", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(charges.ClientHeader, "acme")
			req.Header.Set("Idempotency-Key", "order-1")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode, resp.Header.Get(server.ReplayedHeader) == "true"
		}
		status, replayed := post(`{"amount":1000}`)
		assert.Equal(t, http.StatusCreated, status)
		assert.False(t, replayed)
		status, replayed = post(`{"amount":1000}`)
		assert.Equal(t, http.StatusCreated, status)
		assert.True(t, replayed)
		status, _ = post(`{"amount":2000}`)
		assert.Equal(t, http.StatusUnprocessableEntity, status)

		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, map[server.Outcome]int{server.OutcomeExecuted: 1, server.OutcomeReplayed: 1, server.OutcomeKeyReused: 1}, results)
		assert.Equal(t, map[string]bool{"redis": true}, systems)
	})
}
