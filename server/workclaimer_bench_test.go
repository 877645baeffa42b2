package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/idemhq/idem/server"
)

// BenchmarkWorkClaimer is BenchmarkMiddleware over a store that claims
// within its unit of work (WorkClaimer, as pgstore in transactional mode
// does), without a database: a first execution (a fresh key each
// operation, claimed, run and committed) and a replay. Each request has a
// context of its own, cancelled when it is answered, as net/http's are.
//
//	go test -run '^$' -bench BenchmarkWorkClaimer -benchmem ./server/
func BenchmarkWorkClaimer(b *testing.B) {
	for _, c := range []struct {
		name     string
		freshKey bool
	}{{"first", true}, {"replay", false}} {
		b.Run(c.name, func(b *testing.B) {
			h := server.Middleware(fakeWorkClaimer{newFakeStore()}, server.Options{SingleTenant: true})(benchHandler)
			keys := make([][]string, b.N)
			for i := range keys {
				keys[i] = []string{"bench-" + strconv.Itoa(i)}
				if !c.freshKey {
					keys[i] = []string{"bench"}
				}
			}
			body := bytes.NewReader(benchPayload)
			req := httptest.NewRequest(http.MethodPost, "/charges", io.NopCloser(body))
			req.Header.Set("Content-Type", "application/json")
			req.ContentLength = int64(len(benchPayload))
			w := &discardWriter{h: make(http.Header)}
			serve := func(i int) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				body.Reset(benchPayload)
				req.Header["Idempotency-Key"] = keys[i]
				clear(w.h)
				h.ServeHTTP(w, req.WithContext(ctx))
			}
			if !c.freshKey {
				serve(0) // record the outcome the loop replays
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				serve(i)
			}
			b.StopTimer()
			if w.status != http.StatusCreated {
				b.Fatalf("the last answer was %d, not the handler's 201", w.status)
			}
		})
	}
}
