package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/cachestore"
	"github.com/idemhq/idem/server/pgstore"
	"github.com/idemhq/idem/server/storetest"
)

// TestCacheConformance: a cache in front of pgstore is a store like any
// other, its units of work (transactional mode) included.
func TestCacheConformance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts pgstore.Options
	}{
		{"lease", pgstore.Options{}},
		{"transactional", pgstore.Options{Transactional: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) server.Store {
				c, err := cachestore.New(newStore(t, newPool(t, poolConfig(t, 20)), tc.opts), cachestore.Options{})
				require.NoError(t, err)
				return c
			})
		})
	}
}

// tripCounter counts the claims that reach a pgstore: each is one round
// trip for a replay (see the package's round-trip table).
type tripCounter struct {
	*pgstore.Store
	trips atomic.Int64
}

func (c *tripCounter) Claim(ctx context.Context, k server.Key, fp string, lease time.Duration) (server.Claim, error) {
	c.trips.Add(1)
	return c.Store.Claim(ctx, k, fp, lease)
}

func (c *tripCounter) ClaimWork(ctx context.Context, k server.Key, fp string) (server.Claim, context.Context, server.Work, error) {
	cl, wctx, work, err := c.Store.ClaimWork(ctx, k, fp)
	if !errors.Is(err, errors.ErrUnsupported) {
		c.trips.Add(1)
	}
	return cl, wctx, work, err
}

// BenchmarkCachedReplay measures a replay through the middleware (no
// network between client and service) with pgstore alone and with a
// cachestore in front, side by side, in both modes: 100 completed keys,
// each replayed once before the timer starts, then replayed in turn.
// trips/op counts the store claims a replay makes. Run with
//
//	IDEM_TEST_DATABASE=postgres://... go test -run '^$' -bench CachedReplay -count 5 ./server/pgstore/
func BenchmarkCachedReplay(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts pgstore.Options
	}{
		{"lease", pgstore.Options{}},
		{"transactional", pgstore.Options{Transactional: true}},
	} {
		for _, cached := range []bool{false, true} {
			b.Run(fmt.Sprintf("mode=%s/cache=%v", mode.name, cached), func(b *testing.B) {
				counter := &tripCounter{Store: newStore(b, newPool(b, poolConfig(b, 4)), mode.opts)}
				var store server.Store = counter
				if cached {
					c, err := cachestore.New(counter, cachestore.Options{})
					require.NoError(b, err)
					store = c
				}
				benchReplay(b, store, func() int64 { return counter.trips.Load() })
			})
		}
	}
}

// benchReplay completes 100 keys through the middleware over store,
// replays each once, then times replays; trips reads the store's claims.
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
		rec := serve(i)
		require.Equal(b, http.StatusCreated, rec.Code)
	}
	before := trips()
	var lat latencies
	b.ResetTimer()
	n := 0
	for b.Loop() {
		lat.time(func() {
			if rec := serve(n); rec.Header().Get(server.ReplayedHeader) != "true" {
				b.Fatalf("not a replay: %d %s", rec.Code, rec.Body)
			}
		})
		n++
	}
	b.StopTimer()
	b.ReportMetric(float64(trips()-before)/float64(n), "trips/op")
	lat.report(b)
}
