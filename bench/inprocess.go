package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"time"

	"github.com/idemhq/idem/internal/charges"
)

// inProcessResult is the charges handler timed in process: per block of
// requests, the time and heap allocations per request.
type inProcessResult struct {
	bare, first, replay    []float64 // nanoseconds per request, one per block
	bareA, firstA, replayA []float64 // allocations per request, one per block
}

// added is what a first execution adds over the bare handler: time and
// allocations per request (medians).
func (r *inProcessResult) added() (time.Duration, float64) {
	return time.Duration(medianFloat(r.first) - medianFloat(r.bare)), medianFloat(r.firstA) - medianFloat(r.bareA)
}

// inProcess measures what the middleware adds to the charges handler, in
// process (ServeHTTP on a recorder), with the in-memory store.
func inProcess(cfg config) *inProcessResult {
	svc, err := charges.New(context.Background(), charges.Config{Optional: true})
	must(err)
	h := svc.Handler()
	run := func(n int, key func(i int) string) (time.Duration, float64) {
		var before, after runtime.MemStats
		reqs := make([]*http.Request, n)
		for i := range reqs {
			r := httptest.NewRequest(http.MethodPost, "/charges", bytes.NewReader([]byte(chargeBody)))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set(charges.ClientHeader, "bench")
			if k := key(i); k != "" {
				r.Header.Set("Idempotency-Key", k)
			}
			reqs[i] = r
		}
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		for _, r := range reqs {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusCreated {
				must(fmt.Errorf("status %d", w.Code))
			}
		}
		d := time.Since(start)
		runtime.ReadMemStats(&after)
		return d / time.Duration(n), float64(after.Mallocs-before.Mallocs) / float64(n)
	}
	// Blocks of each kind alternate, so the in-memory ledger, which grows
	// with every charge, costs all kinds alike.
	const block = 100
	replayKey := newKey()
	run(1, func(int) string { return replayKey })
	res := &inProcessResult{}
	for r := range cfg.rounds * 10 {
		d, a := run(block, func(int) string { return "" })
		res.bare, res.bareA = append(res.bare, float64(d)), append(res.bareA, a)
		prefix := fmt.Sprintf("inproc-%d-", r)
		d, a = run(block, func(i int) string { return prefix + strconv.Itoa(i) })
		res.first, res.firstA = append(res.first, float64(d)), append(res.firstA, a)
		d, a = run(block, func(int) string { return replayKey })
		res.replay, res.replayA = append(res.replay, float64(d)), append(res.replayA, a)
	}
	return res
}

func (r *inProcessResult) print() {
	t := &table{title: "Server: the charges handler in process (ServeHTTP), middleware + memstore", head: []string{"request", "time/op (median)", "allocs/op", "added over bare"}}
	b, ba := medianFloat(r.bare), medianFloat(r.bareA)
	t.add("bare handler (no key: the middleware passes it through)", us(time.Duration(b)), fmt.Sprintf("%.0f", ba), "")
	t.add("first execution (new key)", us(time.Duration(medianFloat(r.first))), fmt.Sprintf("%.0f", medianFloat(r.firstA)),
		fmt.Sprintf("%s, %+.0f allocs", us(time.Duration(medianFloat(r.first)-b)), medianFloat(r.firstA)-ba))
	t.add("replay", us(time.Duration(medianFloat(r.replay))), fmt.Sprintf("%.0f", medianFloat(r.replayA)),
		fmt.Sprintf("%s, %+.0f allocs", us(time.Duration(medianFloat(r.replay)-b)), medianFloat(r.replayA)-ba))
	t.print()
}
