// Package httpbench is the benchmark etcdstore's stores are compared on:
// requests through server.Middleware, served in the process (no network
// between the client and the handler, so the store's round trips are
// what is measured), for a new key (claim and complete), a replay (a
// completed key sent again), and new keys from 16 concurrent clients.
package httpbench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemhq/idem/server"
)

// Clients is how many clients the throughput benchmark runs at once.
const Clients = 16

// Run runs the three benchmarks on store, each key under a fresh scope
// of its own run.
func Run(b *testing.B, store server.Store) {
	h := server.Middleware(store, server.Options{SingleTenant: true})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"ch_1","amount":100}`))
	}))
	run := fmt.Sprintf("%d", time.Now().UnixNano())
	var n atomic.Int64
	key := func() string { return fmt.Sprintf("bench-%s-%d", run, n.Add(1)) }

	b.Run("new key", func(b *testing.B) {
		for b.Loop() {
			send(b, h, key(), http.StatusCreated)
		}
	})
	b.Run("replay", func(b *testing.B) {
		k := key()
		send(b, h, k, http.StatusCreated)
		for b.Loop() {
			send(b, h, k, http.StatusCreated)
		}
	})
	b.Run(fmt.Sprintf("new keys, %d clients", Clients), func(b *testing.B) {
		var (
			next atomic.Int64
			wg   sync.WaitGroup
		)
		total := int64(b.N)
		start := time.Now()
		b.ResetTimer()
		for range Clients {
			wg.Go(func() {
				for next.Add(1) <= total {
					send(b, h, key(), http.StatusCreated)
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		b.ReportMetric(float64(total)/time.Since(start).Seconds(), "req/s")
	})
}

// send serves one POST with key through h and fails the benchmark unless
// it is answered with want.
func send(b *testing.B, h http.Handler, key string, want int) {
	req := httptest.NewRequest(http.MethodPost, "/charges", strings.NewReader(`{"amount":100}`))
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != want {
		b.Errorf("key %s: status %d, want %d: %s", key, rec.Code, want, rec.Body)
	}
}
