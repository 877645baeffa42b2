package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

var block = map[string]string{"X-Behave": "block"}

func TestRepeatWhileRunningIs409(t *testing.T) {
	t.Parallel()
	h := newHarness(t, server.Options{}, nil)
	key := newKey()
	first := h.async(call{key: key, header: block})
	h.waitEntered()

	requireProblem(t, h.do(call{key: key}), http.StatusConflict, server.ProblemInFlight)
	requireProblem(t, h.do(call{key: key, body: "other"}), http.StatusUnprocessableEntity, server.ProblemKeyReused)

	h.app.unblock()
	r := <-first
	require.Equal(t, 201, r.status)
	again := h.do(call{key: key})
	assert.True(t, again.replayed())
	assert.Equal(t, r.body, again.body)
	assert.Equal(t, int64(1), h.app.calls.Load())
}

// TestWaitModeReplays: repeats that wait for the first request are
// replayed its outcome, over HTTP. (That they take it from the local run,
// one claim each, is checked on a fake clock by
// TestWaitModeDuplicatesDoNotHammer: here a repeat that is slow to start
// waiting may read the store once more.)
func TestWaitModeReplays(t *testing.T) {
	t.Parallel()
	h := newHarness(t, server.Options{Wait: 5 * time.Second}, nil)
	key := newKey()
	first := h.async(call{key: key, header: block})
	h.waitEntered()
	var repeats []<-chan reply
	for range 10 {
		repeats = append(repeats, h.async(call{key: key}))
	}
	time.Sleep(20 * time.Millisecond) // let the repeats start waiting
	h.app.unblock()
	r := <-first
	require.Equal(t, 201, r.status)
	for _, ch := range repeats {
		rep := <-ch
		require.Equal(t, 201, rep.status, rep.body)
		assert.True(t, rep.replayed())
		assert.Equal(t, r.body, rep.body)
	}
	assert.Equal(t, int64(1), h.app.calls.Load())
}

func TestWaitModeRunsAfterRelease(t *testing.T) {
	t.Parallel()
	h := newHarness(t, server.Options{Wait: 5 * time.Second}, nil)
	key := newKey()
	first := h.async(call{key: key, header: map[string]string{"X-Behave": "block", "X-Status": "500"}})
	h.waitEntered()
	second := h.async(call{key: key})
	time.Sleep(20 * time.Millisecond)
	h.app.unblock()
	assert.Equal(t, 500, (<-first).status)
	r := <-second
	assert.Equal(t, 201, r.status, "the waiting repeat runs once the first is released")
	assert.False(t, r.replayed())
	assert.Equal(t, int64(2), h.app.calls.Load())
}

// TestWaitModeTimesOut: a repeat waits Options.Wait for the first, and
// is then told it is still in flight. On a fake clock.
func TestWaitModeTimesOut(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const wait = 30 * time.Millisecond
		finish := make(chan struct{})
		h := server.Middleware(newFakeStore(), server.Options{SingleTenant: true, Wait: wait})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				<-finish
				w.WriteHeader(http.StatusCreated)
			}))
		first := make(chan int, 1)
		go func() { first <- serveDirect(h, "waits-1", "x").Code }()
		synctest.Wait()
		start := time.Now()
		requireProblem(t, replyOf(serveDirect(h, "waits-1", "x")), http.StatusConflict, server.ProblemInFlight)
		assert.Equal(t, wait, time.Since(start))
		close(finish)
		assert.Equal(t, http.StatusCreated, <-first)
		idle()
	})
}

// Two middlewares over one store stand for two processes: the waiting
// side has no local run to wake it, so it polls the store. On a fake
// clock.
func TestWaitModeAcrossProcesses(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := newFakeStore()
		var calls [2]atomic.Int64
		handler := func(i int) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls[i].Add(1)
				time.Sleep(100 * time.Millisecond)
				w.WriteHeader(http.StatusCreated)
				w.Write([]byte("first"))
			})
		}
		a := server.Middleware(store, server.Options{SingleTenant: true})(handler(0))
		b := server.Middleware(store, server.Options{SingleTenant: true, Wait: 5 * time.Second})(handler(1))
		first := make(chan *httptest.ResponseRecorder, 1)
		go func() { first <- serveDirect(a, "across-1", "x") }()
		synctest.Wait()
		before, _ := store.counts()
		r := serveDirect(b, "across-1", "x")
		require.Equal(t, http.StatusCreated, r.Code, r.Body.String())
		assert.Equal(t, "true", r.Header().Get(server.ReplayedHeader))
		assert.Equal(t, (<-first).Body.String(), r.Body.String())
		assert.Zero(t, calls[1].Load())
		// Capped backoff: 100 ms of polling starting at 5 ms is a
		// handful of claims, not hundreds.
		after, _ := store.counts()
		assert.Less(t, after-before, 10)
		idle()
	})
}

// TestWaitModeDuplicatesDoNotHammer sends one request whose handler takes
// 50 ms and 99 duplicates while it runs: all are answered when the first
// is, from one execution, and each duplicate reads the store once. On a
// fake clock, so the duplicates are surely waiting before the first ends.
func TestWaitModeDuplicatesDoNotHammer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := newFakeStore()
		var calls atomic.Int64
		h := server.Middleware(store, server.Options{SingleTenant: true, Wait: 5 * time.Second})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				time.Sleep(50 * time.Millisecond)
				w.WriteHeader(http.StatusCreated)
			}))
		var wg sync.WaitGroup
		statuses := make([]int, 100)
		start := time.Now()
		for i := range 100 {
			wg.Go(func() { statuses[i] = serveDirect(h, "hammer-1", "").Code })
			if i == 0 {
				synctest.Wait() // the first runs: the duplicates arrive while it does
			}
		}
		wg.Wait()
		assert.Equal(t, 50*time.Millisecond, time.Since(start), "all answered when the first is")
		for i, s := range statuses {
			assert.Equal(t, http.StatusCreated, s, "request %d", i)
		}
		assert.Equal(t, int64(1), calls.Load())
		claims, _ := store.counts()
		assert.Equal(t, 100, claims, "one claim per request: waiters take the outcome from the local run")
		idle()
	})
}

// TestWaitModeReplaysOnlyItsOwnFingerprint: a repeat waits for the first
// request, which releases the key (503); before the repeat looks for the
// run to wait on, a request with another body claims the key. The repeat
// must not replay that request's outcome as its own: it is answered 422.
func TestWaitModeReplaysOnlyItsOwnFingerprint(t *testing.T) {
	t.Parallel()
	store := &pauseAfterClaim{Store: newMemstore(), paused: make(chan struct{}), resume: make(chan struct{})}
	first, other := `{"amount":1}`, `{"amount":999}`
	enteredFirst, enteredOther := make(chan struct{}), make(chan struct{})
	finishFirst, finishOther := make(chan struct{}), make(chan struct{})
	handler := server.Middleware(store, server.Options{SingleTenant: true, Wait: 5 * time.Second})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			if string(b) == first {
				close(enteredFirst)
				<-finishFirst
				w.WriteHeader(http.StatusServiceUnavailable) // released
				return
			}
			close(enteredOther)
			<-finishOther
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"charged":999}`)
		}))
	key := newKey()
	serve := func(body string) <-chan *httptest.ResponseRecorder {
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() { done <- serveDirect(handler, key, body) }()
		return done
	}

	firstDone := serve(first)
	<-enteredFirst
	store.pauseFP.Store(server.Fingerprint(httptest.NewRequest(http.MethodPost, "/orders", nil), []byte(first)))
	repeat := serve(first) // finds the first running, and pauses before waiting
	<-store.paused
	close(finishFirst)
	require.Equal(t, http.StatusServiceUnavailable, (<-firstDone).Code)
	otherDone := serve(other) // claims the released key with another body
	<-enteredOther
	close(store.resume)
	time.Sleep(50 * time.Millisecond) // the repeat now waits on the other request's run
	close(finishOther)
	require.Equal(t, http.StatusCreated, (<-otherDone).Code)

	rec := <-repeat
	assert.NotContains(t, rec.Body.String(), "999", "the other request's outcome replayed as this one's")
	assert.Equal(t, http.StatusUnprocessableEntity, rec.Code)
}

// pauseAfterClaim holds the first claim with fingerprint pauseFP that does
// not acquire its key, after the store answered, until resume is closed.
type pauseAfterClaim struct {
	server.Store
	pauseFP atomic.Value
	paused  chan struct{}
	resume  chan struct{}
	once    sync.Once
}

func (s *pauseAfterClaim) Claim(ctx context.Context, k server.Key, fp string, lease time.Duration) (server.Claim, error) {
	c, err := s.Store.Claim(ctx, k, fp, lease)
	if want, _ := s.pauseFP.Load().(string); want == fp && !c.Acquired {
		s.once.Do(func() {
			close(s.paused)
			<-s.resume
		})
	}
	return c, err
}
