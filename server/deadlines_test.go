package server_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/idemhq/idem/server"
)

// TestWorkTimeoutIsEachRequestsOwn: the requests of one middleware share
// one queue for their work limit, and each is still cancelled at its own
// WorkTimeout, counted from its own claim: requests that start a second
// apart and run until cancelled each run exactly WorkTimeout, whether the
// requests before them ended early (the queue's head leaves) or ran to
// the limit; and a request that comes after the queue has emptied and its
// timer lapsed is bounded as well. On a fake clock.
func TestWorkTimeoutIsEachRequestsOwn(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const limit = 10 * time.Second
		var mu sync.Mutex
		took := map[string]time.Duration{}
		causes := map[string]error{}
		h := server.Middleware(newMemstore(), server.Options{SingleTenant: true, WorkTimeout: limit})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				k, _ := server.KeyFrom(r.Context())
				start := time.Now()
				if k.Key == "early" { // leaves the queue's head before its deadline
					time.Sleep(limit / 2)
					w.WriteHeader(http.StatusCreated)
					return
				}
				select { // bounded, so that a limit that never fires fails the test
				case <-r.Context().Done():
				case <-time.After(3 * limit):
				}
				mu.Lock()
				took[k.Key], causes[k.Key] = time.Since(start), context.Cause(r.Context())
				mu.Unlock()
				http.Error(w, "aborted", http.StatusServiceUnavailable)
			}))
		keys := []string{"early", "w1", "w2", "w3"}
		codes := make([]int, len(keys))
		var wg sync.WaitGroup
		for i, k := range keys {
			wg.Go(func() { codes[i] = serveDirect(h, k, "x").Code })
			time.Sleep(time.Second)
		}
		wg.Wait()
		assert.Equal(t, []int{http.StatusCreated, 503, 503, 503}, codes)
		for _, k := range keys[1:] {
			assert.Equal(t, limit, took[k], "%s runs exactly WorkTimeout", k)
			assert.ErrorIs(t, causes[k], server.ErrWorkTimeout, k)
		}

		// The queue is empty and its timer has lapsed: a new request sets
		// a new one.
		time.Sleep(time.Hour)
		assert.Equal(t, http.StatusServiceUnavailable, serveDirect(h, "late", "x").Code)
		assert.Equal(t, limit, took["late"])
		assert.ErrorIs(t, causes["late"], server.ErrWorkTimeout)

		// Requests that end in time are not cancelled, however many share
		// the queue: 100 on one middleware, a millisecond apart, each
		// running a millisecond short of its limit.
		quick := server.Middleware(newMemstore(), server.Options{SingleTenant: true, WorkTimeout: limit})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(limit - time.Millisecond)
				if err := r.Context().Err(); err != nil {
					http.Error(w, err.Error(), http.StatusServiceUnavailable)
					return
				}
				w.WriteHeader(http.StatusCreated)
			}))
		quickCodes := make([]int, 100)
		for i := range quickCodes {
			wg.Go(func() { quickCodes[i] = serveDirect(quick, "quick-"+strconv.Itoa(i), "x").Code })
			time.Sleep(time.Millisecond)
		}
		wg.Wait()
		for i, code := range quickCodes {
			assert.Equal(t, http.StatusCreated, code, "quick-%d", i)
		}
		idle()
	})
}

// TestStartTimeoutIsEachRequestsOwn: the start limit is one queue per
// middleware too, and each request waiting for a slot is refused at its
// own StartTimeout, counted from its own claim, while the one that got
// the slot runs on. On a fake clock.
func TestStartTimeoutIsEachRequestsOwn(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const limit = 10 * time.Second
		release := make(chan struct{})
		h := server.Middleware(newMemstore(), server.Options{SingleTenant: true, MaxConcurrent: 1, StartTimeout: limit})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if k, _ := server.KeyFrom(r.Context()); k.Key == "holder" {
					<-release
				}
				w.WriteHeader(http.StatusCreated)
			}))
		var wg sync.WaitGroup
		holder := 0
		wg.Go(func() { holder = serveDirect(h, "holder", "x").Code })
		synctest.Wait()
		var mu sync.Mutex
		took := map[string]time.Duration{}
		codes := map[string]int{}
		for i := range 3 {
			k := "waiter-" + strconv.Itoa(i)
			wg.Go(func() {
				start := time.Now()
				code := serveDirect(h, k, "x").Code
				mu.Lock()
				took[k], codes[k] = time.Since(start), code
				mu.Unlock()
			})
			time.Sleep(time.Second)
		}
		time.Sleep(limit)
		close(release)
		wg.Wait()
		assert.Equal(t, http.StatusCreated, holder)
		for i := range 3 {
			k := "waiter-" + strconv.Itoa(i)
			assert.Equal(t, http.StatusServiceUnavailable, codes[k], k)
			assert.Equal(t, limit, took[k], "%s is refused at its own StartTimeout", k)
		}
		assert.Equal(t, http.StatusCreated, serveDirect(h, "waiter-0", "x").Code, "released: the retry runs")
		idle()
	})
}

// untilCancelled is a handler that runs until its context is cancelled,
// or bound passes (so that a limit that never fires fails the test
// instead of hanging it), and reports how long it ran and the cause.
func untilCancelled(bound time.Duration, report func(took time.Duration, cause error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		select {
		case <-r.Context().Done():
		case <-time.After(bound):
		}
		report(time.Since(start), context.Cause(r.Context()))
		http.Error(w, "aborted", http.StatusServiceUnavailable)
	})
}

// TestWorkTimeoutAcrossBubbles: a middleware made outside any
// testing/synctest bubble (a package-level handler, one made in
// TestMain) and used by the tests of several bubbles, one after another
// and beside unbubbled requests, bounds each request's work at its own
// WorkTimeout on the clock of the goroutine that runs it: a bubble that
// ends while its request's limit is still pending does not take the
// limit of later requests with it, a bubble's request is never cancelled
// from outside its bubble (which the runtime kills the process for), and
// a bubble may end as soon as its requests are answered (no goroutine of
// the middleware's is left in it).
func TestWorkTimeoutAcrossBubbles(t *testing.T) {
	t.Parallel()
	const limit = 200 * time.Millisecond
	var mu sync.Mutex
	took := map[string]time.Duration{}
	causes := map[string]error{}
	tookOf := func(k string) time.Duration { mu.Lock(); defer mu.Unlock(); return took[k] }
	causeOf := func(k string) error { mu.Lock(); defer mu.Unlock(); return causes[k] }
	// A request on the real clock is bounded from when the middleware
	// got it, before its handler starts: what the handler measures is
	// shorter than the limit by that much. The time the handler saw the
	// cancellation is compared with a time taken before the request was
	// sent instead.
	ended := map[string]time.Time{}
	endedOf := func(k string) time.Time { mu.Lock(); defer mu.Unlock(); return ended[k] }
	began := make(chan struct{})
	h := server.Middleware(newMemstore(), server.Options{SingleTenant: true, WorkTimeout: limit})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			k, _ := server.KeyFrom(r.Context())
			switch {
			case strings.HasPrefix(k.Key, "quick"):
				w.WriteHeader(http.StatusCreated)
				return
			case k.Key == "real-beside":
				close(began)
			}
			untilCancelled(30*time.Second, func(d time.Duration, cause error) {
				mu.Lock()
				took[k.Key], causes[k.Key], ended[k.Key] = d, cause, time.Now()
				mu.Unlock()
			}).ServeHTTP(w, r)
		}))

	// A bubble whose request ends in time: the limit it armed is still
	// pending (on the bubble's clock) when the bubble ends.
	synctest.Test(t, func(t *testing.T) {
		assert.Equal(t, http.StatusCreated, serveDirect(h, "quick", "x").Code)
	})
	// The next bubble's request is bounded on its own clock.
	synctest.Test(t, func(t *testing.T) {
		assert.Equal(t, http.StatusServiceUnavailable, serveDirect(h, "bubbled", "x").Code)
		assert.Equal(t, limit, tookOf("bubbled"), "the bubble's request runs exactly WorkTimeout")
		assert.ErrorIs(t, causeOf("bubbled"), server.ErrWorkTimeout)
	})
	// So is a request outside any bubble, on the real clock.
	sent := time.Now()
	assert.Equal(t, http.StatusServiceUnavailable, serveDirect(h, "real", "x").Code)
	assert.GreaterOrEqual(t, endedOf("real").Sub(sent), limit)
	assert.Less(t, tookOf("real"), 30*time.Second, "cancelled, not ended by the handler's own bound")
	assert.ErrorIs(t, causeOf("real"), server.ErrWorkTimeout)

	// An unbubbled request runs (its limit on the real clock pending)
	// while a bubble's requests come and go: each is bounded on its own
	// clock.
	var wg sync.WaitGroup
	sent = time.Now()
	wg.Go(func() { assert.Equal(t, http.StatusServiceUnavailable, serveDirect(h, "real-beside", "x").Code) })
	<-began
	synctest.Test(t, func(t *testing.T) {
		assert.Equal(t, http.StatusCreated, serveDirect(h, "quick-again", "x").Code)
		assert.Equal(t, http.StatusServiceUnavailable, serveDirect(h, "bubbled-beside", "x").Code)
		assert.Equal(t, limit, tookOf("bubbled-beside"))
		assert.ErrorIs(t, causeOf("bubbled-beside"), server.ErrWorkTimeout)
	})
	wg.Wait()
	assert.GreaterOrEqual(t, endedOf("real-beside").Sub(sent), limit)
	assert.Less(t, tookOf("real-beside"), 30*time.Second)
	assert.ErrorIs(t, causeOf("real-beside"), server.ErrWorkTimeout)
}

// TestLimitsUnderLoad: 200 keyed requests on four middlewares, each with
// its own WorkTimeout, StartTimeout (some shorter than the WorkTimeout,
// some longer) and MaxConcurrent, start at random times and run for
// random durations, many exactly as long as their limit. Every request's
// work is cancelled at its own deadline, counted from its claim, never
// before and never after, with cause ErrWorkTimeout; work that ends
// first is never cancelled; a request that waits for a slot past either
// limit is refused 503 with ProblemOverloaded at that limit, the handler
// not run. On a fake clock, under -race in CI.
func TestLimitsUnderLoad(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const step = 100 * time.Millisecond
		t0 := time.Now()
		rng := rand.New(rand.NewPCG(1, 2))
		type mw struct {
			work, start time.Duration
			h           http.Handler
		}
		type result struct {
			mw                 int
			run                time.Duration // how long the handler means to run
			began, cancelled   bool
			startedAt, endedAt time.Duration // since the request began
			cause              error
			code               int
			problem            string
		}
		results := make([]result, 200)
		var mws []mw
		for _, o := range []server.Options{
			{WorkTimeout: 10 * step, StartTimeout: 30 * step, MaxConcurrent: 2}, // the work limit is the shorter
			{WorkTimeout: 30 * step, StartTimeout: 10 * step, MaxConcurrent: 3},
			{WorkTimeout: 20 * step, StartTimeout: 20 * step, MaxConcurrent: 5},
			{WorkTimeout: 40 * step, StartTimeout: 5 * step}, // no slots: nothing to wait for
		} {
			m := mw{work: o.WorkTimeout, start: o.StartTimeout}
			o.SingleTenant = true
			m.h = server.Middleware(newMemstore(), o)(
				http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					k, _ := server.KeyFrom(r.Context())
					n, _ := strconv.Atoi(k.Key)
					res := &results[n]
					res.began = true
					res.startedAt = time.Since(t0) // made relative below
					select {
					case <-r.Context().Done():
						res.cancelled, res.cause = true, context.Cause(r.Context())
					case <-time.After(res.run):
					}
					res.endedAt = time.Since(t0)
					w.WriteHeader(http.StatusCreated)
				}))
			mws = append(mws, m)
		}
		var wg sync.WaitGroup
		for n := range results {
			m := rng.IntN(len(mws))
			results[n].mw = m
			// Runs of whole steps, up to twice the limit: many end exactly
			// at their deadline.
			results[n].run = time.Duration(rng.IntN(int(2*mws[m].work/step)+1)) * step
			offset := time.Duration(rng.IntN(40)) * step
			wg.Go(func() {
				time.Sleep(offset)
				res := &results[n]
				began := time.Since(t0)
				rec := serveDirect(mws[m].h, strconv.Itoa(n), "x")
				res.code = rec.Code
				if !res.began {
					res.endedAt = time.Since(t0)
				}
				res.problem = rec.Body.String()
				res.startedAt -= began
				res.endedAt -= began
			})
		}
		wg.Wait()
		seen := map[string]int{}
		for n, res := range results {
			m := mws[res.mw]
			switch {
			case !res.began && m.work < m.start && res.endedAt == m.work:
				seen["refused at WorkTimeout"]++
			case !res.began:
				seen["refused at StartTimeout"]++
			case res.cancelled:
				seen["cancelled"]++
			case res.endedAt == m.work:
				seen["ended at the deadline"]++
			default:
				seen["ended in time"]++
			}
			if !res.began {
				assert.Equal(t, http.StatusServiceUnavailable, res.code, "request %d", n)
				assert.Contains(t, res.problem, server.ProblemOverloaded, "request %d, refused after waiting for a slot", n)
				assert.Equal(t, min(m.work, m.start), res.endedAt, "request %d refused at the shorter of its limits", n)
				continue
			}
			assert.LessOrEqual(t, res.startedAt, m.start, "request %d started past StartTimeout", n)
			if res.cancelled {
				assert.Equal(t, m.work, res.endedAt, "request %d cancelled at its own deadline", n)
				assert.ErrorIs(t, res.cause, server.ErrWorkTimeout, "request %d", n)
				assert.GreaterOrEqual(t, res.startedAt+res.run, m.work, "request %d cancelled before its work's end", n)
			} else {
				assert.LessOrEqual(t, res.endedAt, m.work, "request %d ran past its deadline uncancelled", n)
			}
		}
		t.Log(seen)
		assert.Len(t, seen, 5, "every case is met")
		idle()
	})
}
