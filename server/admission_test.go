package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

// slowBegin is a Transactor whose BeginWork waits, as for a connection
// from an exhausted pool, until the test opens begin or the context ends.
type slowBegin struct {
	fakeTx
	begin  chan struct{}
	begins atomic.Int64
}

func newSlowBegin() *slowBegin {
	return &slowBegin{fakeTx: fakeTx{newFakeStore()}, begin: make(chan struct{})}
}

func (s *slowBegin) BeginWork(ctx context.Context, k server.Key, token string) (context.Context, server.Work, error) {
	s.begins.Add(1)
	select {
	case <-s.begin:
		return s.fakeTx.BeginWork(ctx, k, token)
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

// TestWorkThatCannotStartIsRefused: a first request whose unit of work
// does not begin within StartTimeout is answered 503 with Retry-After,
// its key released and its handler never run; while it waited, its lease
// was renewed, so no repeat took the key over. On a fake clock.
func TestWorkThatCannotStartIsRefused(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const lease = 3 * time.Second
		store := newSlowBegin()
		runs := 0
		h := server.Middleware(store, server.Options{SingleTenant: true, Lease: lease, StartTimeout: 10 * time.Second})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs++
				w.WriteHeader(http.StatusCreated)
			}))
		first := make(chan *httptest.ResponseRecorder, 1)
		go func() { first <- serveDirect(h, "slow-1", "x") }()
		time.Sleep(2 * lease) // past the lease, renewed meanwhile
		assert.Equal(t, http.StatusConflict, serveDirect(h, "slow-1", "x").Code, "the waiting request still holds its key")
		rec := <-first

		requireProblem(t, replyOf(rec),
			http.StatusServiceUnavailable, server.ProblemOverloaded)
		assert.Zero(t, runs, "the handler never ran")
		assert.Equal(t, []string{"Release"}, store.endsOf(server.Key{Key: "slow-1"}))
		_, renewals := store.counts()
		assert.GreaterOrEqual(t, renewals, 9, "renewed about once a second for the ten seconds it waited")

		close(store.begin) // the pool has room again
		again := serveDirect(h, "slow-1", "x")
		assert.Equal(t, http.StatusCreated, again.Code, "the released key runs on retry")
		assert.Equal(t, 1, runs)
		idle()
	})
}

// TestWorkThatStartsInTimeRuns: a unit of work that begins within
// StartTimeout, however late, runs the handler.
func TestWorkThatStartsInTimeRuns(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := newSlowBegin()
		h := server.Middleware(store, server.Options{SingleTenant: true, StartTimeout: 10 * time.Second})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
		first := make(chan int, 1)
		go func() { first <- serveDirect(h, "slow-2", "x").Code }()
		time.Sleep(9 * time.Second)
		close(store.begin)
		assert.Equal(t, http.StatusCreated, <-first)
		assert.Equal(t, []string{"Commit"}, store.endsOf(server.Key{Key: "slow-2"}))
		idle()
	})
}

// TestLeaseLostWhileWaitingToStart: if renewal finds the lease lost while
// the work waits to begin, the request is answered 409 and the handler
// never runs.
func TestLeaseLostWhileWaitingToStart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := newSlowBegin()
		store.loseLease = true
		runs := 0
		h := server.Middleware(store, server.Options{SingleTenant: true, Lease: 3 * time.Second, StartTimeout: time.Minute})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { runs++ }))
		rec := serveDirect(h, "slow-3", "x")
		requireProblem(t, replyOf(rec),
			http.StatusConflict, server.ProblemLeaseLost)
		assert.Zero(t, runs)
		assert.Equal(t, []string{"Release"}, store.endsOf(server.Key{Key: "slow-3"}), "the fenced release")
		idle()
	})
}

// TestMaxConcurrent: with MaxConcurrent 1 and one handler running, a
// second first request waits for the slot: it runs if the slot frees
// within StartTimeout, and is refused (503, key released) otherwise.
// Replays are not held back.
func TestMaxConcurrent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := newFakeStore()
		finish := make(chan struct{})
		var runs atomic.Int64
		h := server.Middleware(store, server.Options{SingleTenant: true, MaxConcurrent: 1, StartTimeout: 10 * time.Second})(
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
		synctest.Wait()
		refused := serveDirect(h, "refused", "x") // waits ten seconds for the slot
		requireProblem(t, replyOf(refused),
			http.StatusServiceUnavailable, server.ProblemOverloaded)
		assert.Equal(t, []string{"Release"}, store.endsOf(server.Key{Key: "refused"}))
		assert.Equal(t, "true", serveDirect(h, "done", "x").Header().Get(server.ReplayedHeader), "a replay takes no slot")

		waiting := make(chan int, 1)
		go func() { waiting <- serveDirect(h, "waiting", "x").Code }()
		time.Sleep(5 * time.Second)
		close(finish)
		assert.Equal(t, http.StatusCreated, <-busy)
		assert.Equal(t, http.StatusCreated, <-waiting, "the slot freed in time")
		assert.Equal(t, http.StatusCreated, serveDirect(h, "refused", "x").Code, "the refused key runs on retry")
		assert.Equal(t, int64(4), runs.Load(), "done, busy, waiting and the retry of refused; never refused itself")
		idle()
	})
}

// TestRunOnceWorkThatCannotStart: RunOnce returns ErrOverloaded, its work
// not run and its key released.
func TestRunOnceWorkThatCannotStart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := newSlowBegin()
		k := server.Key{Key: "slow-4"}
		var n atomic.Int64
		_, _, err := server.RunOnce(context.Background(), store, k, "fp", counted(&n, "done", nil), server.RunOptions{})
		require.ErrorIs(t, err, server.ErrOverloaded)
		assert.Zero(t, n.Load())
		assert.Equal(t, []string{"Release"}, store.endsOf(k))
		assert.Equal(t, int64(1), store.begins.Load())
	})
}
