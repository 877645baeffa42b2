package redisstore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/cachestore"
	"github.com/idemhq/idem/server/redisstore"
	"github.com/idemhq/idem/server/storetest"
)

// TestCacheConformance: a cache in front of redisstore is a store like
// any other.
func TestCacheConformance(t *testing.T) {
	forEachTarget(t, func(t *testing.T, rdb redis.UniversalClient) {
		storetest.Run(t, func(t *testing.T) server.Store {
			c, err := cachestore.New(newStore(t, rdb, redisstore.Options{}), cachestore.Options{})
			require.NoError(t, err)
			return c
		})
	})
}

// tripCounter counts the claims that reach a redisstore: one round trip
// (a script call) each.
type tripCounter struct {
	*redisstore.Store
	trips atomic.Int64
}

func (c *tripCounter) Claim(ctx context.Context, k server.Key, fp string, lease time.Duration) (server.Claim, error) {
	c.trips.Add(1)
	return c.Store.Claim(ctx, k, fp, lease)
}

// BenchmarkCachedReplay measures a replay through the middleware (no
// network between client and service) with redisstore alone and with a
// cachestore in front, side by side, on every target: 100 completed keys,
// each replayed once before the timer starts, then replayed in turn.
// trips/op counts the store claims a replay makes. Run with
//
//	IDEM_TEST_REDIS_SINGLE=127.0.0.1:6379 go test -run '^$' -bench CachedReplay -count 5 ./server/redisstore/
func BenchmarkCachedReplay(b *testing.B) {
	for _, env := range targets {
		b.Run(env, func(b *testing.B) {
			rdb := connect(b, env, nil)
			for _, cached := range []bool{false, true} {
				b.Run(fmt.Sprintf("cache=%v", cached), func(b *testing.B) {
					counter := &tripCounter{Store: newStore(b, rdb, redisstore.Options{})}
					var store server.Store = counter
					if cached {
						c, err := cachestore.New(counter, cachestore.Options{})
						require.NoError(b, err)
						store = c
					}
					benchReplay(b, store, counter.trips.Load)
				})
			}
		})
	}
}

// benchReplay completes 100 keys through the middleware over store,
// replays each once, then times replays; trips reads the store's claims.
// It reports the median and 99th percentile latency beside ns/op.
func benchReplay(b *testing.B, store server.Store, trips func() int64) {
	h := server.Middleware(store, server.Options{SingleTenant: true})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id":"ch_1","amount":1000,"currency":"eur"}`))
	}))
	const keys = 100
	serve := func(i int) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(`{"amount":1000,"currency":"eur"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("replay-%d", i%keys))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for i := range 2 * keys { // run each, then replay it once
		require.Equal(b, http.StatusCreated, serve(i).Code)
	}
	before := trips()
	var lat []time.Duration
	b.ResetTimer()
	n := 0
	for b.Loop() {
		start := time.Now()
		rec := serve(n)
		lat = append(lat, time.Since(start))
		if rec.Header().Get(server.ReplayedHeader) != "true" {
			b.Fatalf("not a replay: %d %s", rec.Code, rec.Body)
		}
		n++
	}
	b.StopTimer()
	b.ReportMetric(float64(trips()-before)/float64(n), "trips/op")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
