package server_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

// delayedClaims is a WorkClaimer whose every ClaimWork takes d, whatever
// its context, and then answers as fakeWorkClaimer does.
type delayedClaims struct {
	fakeWorkClaimer
	d time.Duration
}

func (s delayedClaims) ClaimWork(ctx context.Context, k server.Key, fp string) (server.Claim, context.Context, server.Work, error) {
	time.Sleep(s.d)
	return s.fakeWorkClaimer.ClaimWork(ctx, k, fp)
}

// claimEvents records, in order, the Request, ClaimStart and ClaimEnd
// events an Observer hears of.
type claimEvents struct {
	mu  sync.Mutex
	all []string
}

func (e *claimEvents) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, s)
}

func (e *claimEvents) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	all := e.all
	e.all = nil
	return all
}

func (e *claimEvents) observer() *server.Observer {
	return &server.Observer{
		Request: func(_ context.Context, i server.RequestInfo) { e.add("request " + string(i.Outcome)) },
		ClaimStart: func(ctx context.Context, _ server.ClaimStartInfo) context.Context {
			e.add("claim start")
			return ctx
		},
		ClaimEnd: func(_ context.Context, i server.ClaimEndInfo) { e.add("claim end " + string(i.Outcome)) },
	}
}

// TestClaimWorkLimitEndsAtTheStart: the start limit's timer, which bounds
// ClaimWork and the wait for a slot, is stopped once the work starts: a
// handler (or RunOnce's work) that runs long past StartTimeout keeps a
// live context, and its work commits and is answered as executed, never
// as overloaded. Whether its claim was quick or took most of the limit.
// On a fake clock.
func TestClaimWorkLimitEndsAtTheStart(t *testing.T) {
	t.Parallel()
	const limit = 10 * time.Second
	for _, claim := range []time.Duration{0, limit - time.Second} {
		synctest.Test(t, func(t *testing.T) {
			fs := newFakeStore()
			store := delayedClaims{fakeWorkClaimer{fs}, claim}
			var ev claimEvents
			var ctxErr error
			h := server.Middleware(store, server.Options{SingleTenant: true, StartTimeout: limit, MaxConcurrent: 1, Observer: ev.observer()})(
				http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					time.Sleep(6 * limit)
					ctxErr = context.Cause(r.Context())
					w.WriteHeader(http.StatusCreated)
				}))
			assert.Equal(t, http.StatusCreated, serveWithin(h, "long", "x", time.Hour).Code)
			assert.NoError(t, ctxErr, "the handler's context outlived the limit")
			assert.Equal(t, []string{"Commit"}, fs.endsOf(server.Key{Key: "long"}))
			assert.Equal(t, []string{"claim start", "claim end executed", "request executed"}, ev.take())

			k := server.Key{Key: "long-run-once"}
			result, _, err := server.RunOnce(context.Background(), store, k, "fp", func(ctx context.Context) ([]byte, error) {
				time.Sleep(6 * limit)
				return []byte("done"), context.Cause(ctx)
			}, server.RunOptions{StartTimeout: limit, Observer: ev.observer()})
			require.NoError(t, err, "the work's context outlived the limit")
			assert.Equal(t, "done", string(result))
			assert.Equal(t, []string{"Commit"}, fs.endsOf(k))
			assert.Equal(t, []string{"claim start", "claim end executed", "request executed"}, ev.take())
			idle()
		})
	}
}

// TestClaimWorkLateAnswerStands: a ClaimWork that acquires nothing and
// answers only after StartTimeout is answered as it is: a replay, 409 for
// a key in flight, 422 for another body; never 503 overloaded, since
// nothing had to start. On a fake clock.
func TestClaimWorkLateAnswerStands(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const limit = 10 * time.Second
		fs := newFakeStore()
		hold := make(chan struct{})
		quick := server.Middleware(fakeWorkClaimer{fs}, server.Options{SingleTenant: true})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Idempotency-Key") == "held" {
					<-hold
				}
				w.WriteHeader(http.StatusCreated)
			}))
		assert.Equal(t, http.StatusCreated, serveDirect(quick, "done", "x").Code)
		held := make(chan int, 1)
		go func() { held <- serveDirect(quick, "held", "x").Code }()
		synctest.Wait() // held holds its key

		var ev claimEvents
		late := server.Middleware(delayedClaims{fakeWorkClaimer{fs}, limit + time.Second},
			server.Options{SingleTenant: true, StartTimeout: limit, Observer: ev.observer()})(http.NotFoundHandler())
		rec := serveWithin(late, "done", "x", time.Minute)
		assert.Equal(t, http.StatusCreated, rec.Code)
		assert.Equal(t, "true", rec.Header().Get(server.ReplayedHeader))
		requireProblem(t, replyOf(serveWithin(late, "held", "x", time.Minute)), http.StatusConflict, server.ProblemInFlight)
		requireProblem(t, replyOf(serveWithin(late, "done", "other", time.Minute)), http.StatusUnprocessableEntity, server.ProblemKeyReused)
		assert.Equal(t, []string{"request replayed", "request in_flight", "request key_reused"}, ev.take())

		close(hold)
		assert.Equal(t, http.StatusCreated, <-held)
		idle()
	})
}
