package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// discardWriter is a reusable ResponseWriter, so the benchmarks measure the
// middleware rather than the recorder. It keeps the last status.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

var benchPayload = []byte(`{"amount":1000,"currency":"EUR","customer":"cus_42","description":"tea"}`)

// benchHandler is a small JSON handler that reads its body.
var benchHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	w.Write([]byte(`{"id":"ch_1","status":"succeeded"}`))
})

// BenchmarkMiddleware measures, without a network, a bare handler, the
// middleware with memstore on a first execution (a fresh key each
// operation), the same with memstore wrapped as a [server.Transactor]
// (the shape of a transactional store: a unit of work begun under a
// start limit, and committed), and a replay. The first executions'
// outcomes are kept for a millisecond only, so the store never fills up
// (memstore refuses new keys when full); every answer must be the
// handler's 201. Besides time and allocations it reports the process's
// CPU time per operation (cpu-µs/op: user and system, all goroutines,
// the runtime's included).
//
//	go test -run '^$' -bench BenchmarkMiddleware -benchmem ./server/
func BenchmarkMiddleware(b *testing.B) {
	first := server.Middleware(newMemstore(), server.Options{SingleTenant: true, Retention: time.Millisecond})
	firstTx := server.Middleware(benchTx{newMemstore()}, server.Options{SingleTenant: true, Retention: time.Millisecond})
	replay := server.Middleware(newMemstore(), server.Options{SingleTenant: true})
	cases := []struct {
		name     string
		handler  http.Handler
		freshKey bool
	}{
		{"bare", benchHandler, true},
		{"first", first(benchHandler), true},
		{"first-tx", firstTx(benchHandler), true},
		{"replay", replay(benchHandler), false},
	}
	runs := 0 // testing runs each case several times, growing b.N
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			runs++ // so that no run finds its "fresh" keys stored by the one before
			keys := make([][]string, b.N)
			for i := range keys {
				keys[i] = []string{"bench-" + c.name + "-" + strconv.Itoa(runs) + "-" + strconv.Itoa(i)}
			}
			if !c.freshKey {
				for i := range keys {
					keys[i] = keys[0]
				}
			}
			body := bytes.NewReader(benchPayload)
			req := httptest.NewRequest(http.MethodPost, "/charges", io.NopCloser(body))
			req.Header.Set("Content-Type", "application/json")
			req.ContentLength = int64(len(benchPayload))
			w := &discardWriter{h: make(http.Header)}
			serve := func(i int) {
				body.Reset(benchPayload)
				req.Header["Idempotency-Key"] = keys[i]
				clear(w.h)
				c.handler.ServeHTTP(w, req)
			}
			if !c.freshKey {
				serve(0) // record the outcome the loop replays
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			for i := range b.N {
				serve(i)
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N)/1e3, "cpu-µs/op")
			if w.status != http.StatusCreated {
				b.Fatalf("the last answer was %d, not the handler's 201", w.status)
			}
		})
	}
}

// processCPU returns the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchTx is memstore as a Transactor whose units of work hold nothing: a
// Commit completes the claim, a Rollback does nothing (the key is
// released after it).
type benchTx struct{ *memstore.Store }

type benchWork struct {
	s     *memstore.Store
	k     server.Key
	token string
}

func (t benchTx) BeginWork(ctx context.Context, k server.Key, token string) (context.Context, server.Work, error) {
	return ctx, &benchWork{t.Store, k, token}, nil
}

func (w *benchWork) Commit(ctx context.Context, resp server.StoredResponse, retention time.Duration) error {
	return w.s.Complete(ctx, w.k, w.token, resp, retention)
}

func (w *benchWork) Rollback(context.Context) error { return nil }

// BenchmarkFingerprint measures fingerprinting a small JSON request.
//
//	go test -run '^$' -bench BenchmarkFingerprint -benchmem ./server/
func BenchmarkFingerprint(b *testing.B) {
	for _, ct := range []string{"application/json", "text/plain"} {
		b.Run(ct, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodPost, "/charges", nil)
			req.Header.Set("Content-Type", ct)
			b.ReportAllocs()
			for range b.N {
				server.Fingerprint(req, benchPayload)
			}
		})
	}
}
