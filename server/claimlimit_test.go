package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

// slowClaims is a WorkClaimer whose ClaimWork waits, as for a connection
// from an exhausted pool, until the test opens claims or the context
// ends; or, with late set, waits that long whatever the context and then
// claims, as a store whose connection came only as the limit passed.
type slowClaims struct {
	fakeWorkClaimer
	open chan struct{}
	late time.Duration
}

func newSlowClaims(late time.Duration) *slowClaims {
	return &slowClaims{fakeWorkClaimer: fakeWorkClaimer{newFakeStore()}, open: make(chan struct{}), late: late}
}

func (s *slowClaims) ClaimWork(ctx context.Context, k server.Key, fp string) (server.Claim, context.Context, server.Work, error) {
	if s.late > 0 {
		time.Sleep(s.late)
		return s.fakeWorkClaimer.ClaimWork(ctx, k, fp)
	}
	select {
	case <-s.open:
		return s.fakeWorkClaimer.ClaimWork(ctx, k, fp)
	case <-ctx.Done():
		return server.Claim{}, nil, nil, ctx.Err()
	}
}

// results records the Results an Observer hears of.
type results struct {
	mu  sync.Mutex
	all []server.Outcome
}

func (r *results) observer() *server.Observer {
	return &server.Observer{Request: func(_ context.Context, info server.RequestInfo) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.all = append(r.all, info.Outcome)
	}}
}

func (r *results) take() []server.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := r.all
	r.all = nil
	return all
}

// serveWithin is serveDirect with a request that lasts at most d: without
// a limit on the claim, a stuck one waits that long.
func serveWithin(handler http.Handler, key, body string, d time.Duration) *httptest.ResponseRecorder {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/orders", strings.NewReader(body))
	req.Header.Set("Idempotency-Key", key)
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	return rec
}

// TestClaimWorkThatCannotStartIsRefused: with a WorkClaimer, the claim is
// the start of the work, and StartTimeout bounds it. A ClaimWork that
// does not answer in time (its pool exhausted) is answered 503 with
// ProblemOverloaded and Retry-After at the limit, observed as overloaded,
// the handler not run and nothing held; one that acquires only as the
// limit passes has its work rolled back. Either way a retry runs. On a
// fake clock.
func TestClaimWorkThatCannotStartIsRefused(t *testing.T) {
	t.Parallel()
	const limit = 10 * time.Second
	tests := []struct {
		name string
		late time.Duration
		ends []string
	}{
		{name: "no answer: nothing claimed"},
		{name: "acquired too late: rolled back", late: limit + time.Second, ends: []string{"Rollback"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				store := newSlowClaims(tt.late)
				var got results
				runs := 0
				handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					runs++
					w.WriteHeader(http.StatusCreated)
				})
				h := server.Middleware(store, server.Options{SingleTenant: true, StartTimeout: limit, Observer: got.observer()})(handler)
				began := time.Now()
				rec := serveWithin(h, "stuck-1", "x", time.Minute)
				refusedAt := time.Since(began)

				requireProblem(t, replyOf(rec), http.StatusServiceUnavailable, server.ProblemOverloaded)
				assert.NotEmpty(t, rec.Header().Get("Retry-After"))
				assert.Equal(t, []server.Outcome{server.OutcomeOverloaded}, got.take())
				assert.Zero(t, runs, "the handler never ran")
				assert.Equal(t, tt.ends, store.endsOf(server.Key{Key: "stuck-1"}))
				if tt.late == 0 {
					assert.Equal(t, limit, refusedAt, "refused at the limit, on the fake clock")
				}

				// The pool has room again.
				close(store.open)
				again := server.Middleware(store.fakeWorkClaimer, server.Options{SingleTenant: true})(handler)
				assert.Equal(t, http.StatusCreated, serveDirect(again, "stuck-1", "x").Code, "the key runs on retry")
				assert.Equal(t, 1, runs)
				idle()
			})
		})
	}
}

// TestClaimWorkStartsWithinOneLimit: the limit covers the claim and the
// wait for a slot (MaxConcurrent) together: work whose claim took most of
// StartTimeout is refused at the limit, not a whole StartTimeout after
// its claim; and a repeat is not held back by the running work's slot.
func TestClaimWorkStartsWithinOneLimit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const limit = 10 * time.Second
		store := newSlowClaims(6 * time.Second)
		finish := make(chan struct{})
		var runs atomic.Int64
		h := server.Middleware(store, server.Options{SingleTenant: true, MaxConcurrent: 1, StartTimeout: limit})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				if r.Header.Get("Idempotency-Key") == "busy" {
					<-finish
				}
				w.WriteHeader(http.StatusCreated)
			}))
		assert.Equal(t, http.StatusCreated, serveDirect(h, "done", "x").Code)
		busy := make(chan int, 1)
		go func() { busy <- serveDirect(h, "busy", "x").Code }()
		time.Sleep(7 * time.Second) // busy runs, holding the slot

		began := time.Now()
		refused := serveWithin(h, "refused", "x", time.Minute)
		requireProblem(t, replyOf(refused), http.StatusServiceUnavailable, server.ProblemOverloaded)
		assert.Equal(t, limit, time.Since(began), "refused at the limit, on the fake clock")
		assert.Equal(t, []string{"Rollback"}, store.endsOf(server.Key{Key: "refused"}))
		assert.Equal(t, "true", serveDirect(h, "done", "x").Header().Get(server.ReplayedHeader), "a replay takes no slot")

		close(finish)
		assert.Equal(t, http.StatusCreated, <-busy)
		assert.Equal(t, int64(2), runs.Load(), "done and busy; never refused")
		idle()
	})
}

// TestRunOnceClaimWorkThatCannotStart: RunOnce over a WorkClaimer whose
// ClaimWork does not answer within RunOptions.StartTimeout returns
// ErrOverloaded, its work not run and its key not held.
func TestRunOnceClaimWorkThatCannotStart(t *testing.T) {
	t.Parallel()
	for _, late := range []time.Duration{0, 11 * time.Second} {
		synctest.Test(t, func(t *testing.T) {
			store := newSlowClaims(late)
			var got results
			k := server.Key{Key: "stuck-2"}
			var n atomic.Int64
			opts := server.RunOptions{StartTimeout: 10 * time.Second, Observer: got.observer()}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // without a limit, the claim waits this long
			defer cancel()
			_, _, err := server.RunOnce(ctx, store, k, "fp", counted(&n, "done", nil), opts)
			require.ErrorIs(t, err, server.ErrOverloaded)
			assert.Zero(t, n.Load())
			assert.Equal(t, []server.Outcome{server.OutcomeOverloaded}, got.take())
			if late > 0 {
				assert.Equal(t, []string{"Rollback"}, store.endsOf(k))
			} else {
				assert.Empty(t, store.endsOf(k))
			}

			close(store.open)
			result, replayed, err := server.RunOnce(context.Background(), store.fakeWorkClaimer, k, "fp", counted(&n, "done", nil), server.RunOptions{})
			require.NoError(t, err)
			assert.False(t, replayed)
			assert.Equal(t, "done", string(result))
			assert.Equal(t, int64(1), n.Load())
		})
	}
}
