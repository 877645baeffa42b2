package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
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

func singleTenant() server.Options { return server.Options{SingleTenant: true} }

// TestCancelledRequestWithoutAnswerIsReleased: the client goes away and
// the handler, seeing its context cancelled, returns without writing. No
// outcome is recorded (an empty 200 would tell every retry the work was
// done): the key is released and the retry runs the handler.
func TestCancelledRequestWithoutAnswerIsReleased(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	entered := make(chan struct{})
	handler := server.Middleware(newMemstore(), singleTenant())(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			close(entered)
			<-server.ClientContext(r.Context()).Done() // a handler that stops when its client leaves
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "charged")
	}))
	srv := newServer(t, handler)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	post := func(ctx context.Context) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("x"))
		require.NoError(t, err)
		req.Header.Set("Idempotency-Key", "cancelled-1")
		return client.Do(req)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-entered; cancel() }()
	_, err := post(ctx)
	require.Error(t, err)

	// The first request's release races this retry: until it lands, the
	// retry is told the first is still running.
	var resp *http.Response
	for deadline := time.Now().Add(5 * time.Second); ; {
		resp, err = post(context.Background())
		require.NoError(t, err)
		if resp.StatusCode != http.StatusConflict || time.Now().After(deadline) {
			break
		}
		resp.Body.Close()
		time.Sleep(5 * time.Millisecond)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, "charged", string(body))
	assert.Empty(t, resp.Header.Get(server.ReplayedHeader))
	assert.Equal(t, int64(2), calls.Load(), "the retry ran the work that never happened")
}

// TestCancelledRequestWithAnAnswerIsRecorded: a handler that did its work
// after its client left and answers (a header set, or WriteHeader, with no
// body) is recorded: the retry replays it instead of running again.
func TestCancelledRequestWithAnAnswerIsRecorded(t *testing.T) {
	t.Parallel()
	for name, answer := range map[string]func(http.ResponseWriter){
		"a header":    func(w http.ResponseWriter) { w.Header().Set("Location", "/charges/1") },
		"WriteHeader": func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int64
			ctx, cancel := context.WithCancel(context.Background())
			h := server.Middleware(newMemstore(), singleTenant())(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				cancel() // the client goes away while the work runs
				answer(w)
			}))
			req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/orders", strings.NewReader("x"))
			req.Header.Set("Idempotency-Key", "answered-1")
			h.ServeHTTP(httptest.NewRecorder(), req)
			again := serveDirect(h, "answered-1", "x")
			assert.Equal(t, "true", again.Header().Get(server.ReplayedHeader))
			assert.Equal(t, int64(1), calls.Load())
		})
	}
}

// TestHeadersOfTheSurroundingChain: headers set around the middleware (a
// CORS layer's Vary, a default Content-Type, a request ID) are seen and
// kept by the handler as without the middleware, and a replay records
// only what the handler set: the request ID is the replay's own.
func TestHeadersOfTheSurroundingChain(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	outer := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Vary", "Origin")
			w.Header().Set("X-Request-Id", strings.Repeat("r", int(n.Add(1))))
			w.Header().Set("X-Removed", "by the handler")
			h.ServeHTTP(w, r)
		})
	}
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Accept-Encoding")
		w.Header().Del("X-Removed")
		w.Write([]byte(`{"ok":true}`))
	})
	plain := serveDirect(outer(inner), "chain-1", "x").Header()
	protected := outer(server.Middleware(newMemstore(), singleTenant())(inner))
	first := serveDirect(protected, "chain-1", "x").Header()
	again := serveDirect(protected, "chain-1", "x").Header()

	for name, h := range map[string]http.Header{"first answer": first, "replay": again} {
		assert.Equal(t, "application/json", h.Get("Content-Type"), name)
		assert.Equal(t, plain.Values("Vary"), h.Values("Vary"), name)
	}
	assert.Empty(t, first.Get("X-Removed"), "the handler deleted it")
	assert.Equal(t, "rr", first.Get("X-Request-Id"))
	assert.Equal(t, "true", again.Get(server.ReplayedHeader))
	assert.Equal(t, "rrr", again.Get("X-Request-Id"), "the replay's own request ID, not the first's")
}

// TestBodyCutByAnOuterLimitIs413: an http.MaxBytesHandler around the
// middleware, below its MaxBody, cuts the body off. That is 413, not a 400
// that invites a retry doomed to fail the same way.
func TestBodyCutByAnOuterLimitIs413(t *testing.T) {
	t.Parallel()
	h := http.MaxBytesHandler(server.Middleware(newMemstore(), singleTenant())(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})), 100)
	for _, chunked := range []bool{false, true} {
		var body io.Reader = strings.NewReader(strings.Repeat("a", 200))
		if chunked {
			body = io.MultiReader(body) // no length known
		}
		req := httptest.NewRequest(http.MethodPost, "/", body)
		req.Header.Set("Idempotency-Key", "cut-1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, "chunked %v", chunked)
		assert.Contains(t, rec.Body.String(), server.ProblemBodyTooLarge)
	}
}

// TestFlushFixesTheStatus: as in net/http, Flush before any status fixes
// it at 200, and a later WriteHeader(500) changes nothing.
func TestFlushFixesTheStatus(t *testing.T) {
	t.Parallel()
	h := server.Middleware(newMemstore(), singleTenant())(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "done")
	}))
	first := serveDirect(h, "flush-1", "x")
	assert.Equal(t, http.StatusOK, first.Code)
	again := serveDirect(h, "flush-1", "x")
	assert.Equal(t, http.StatusOK, again.Code)
	assert.Equal(t, "true", again.Header().Get(server.ReplayedHeader), "a 200 is recorded")
}

// TestMethodsAreCaseSensitive: Methods: {"post"} would protect nothing,
// since methods are case-sensitive; Middleware refuses it.
func TestMethodsAreCaseSensitive(t *testing.T) {
	t.Parallel()
	assert.Panics(t, func() {
		server.Middleware(newMemstore(), server.Options{SingleTenant: true, Methods: []string{"post"}})
	})
	assert.NotPanics(t, func() {
		server.Middleware(newMemstore(), server.Options{SingleTenant: true, Methods: []string{"POST", "PURGE"}})
	})
}

// slowRenewals is a store whose Renew takes long and ignores its context;
// it records the most Renew calls under way at once.
type slowRenewals struct {
	server.Store
	mu            sync.Mutex
	running, most int
}

func (s *slowRenewals) Renew(ctx context.Context, k server.Key, token string, lease time.Duration) error {
	s.mu.Lock()
	s.running++
	s.most = max(s.most, s.running)
	s.mu.Unlock()
	time.Sleep(150 * time.Millisecond)
	s.mu.Lock()
	s.running--
	s.mu.Unlock()
	return s.Store.Renew(ctx, k, token, lease)
}

// TestSlowRenewalsDoNotPileUp: while the store's Renew is slow, an attempt
// has one renewal under way at a time, not one more per tick.
func TestSlowRenewalsDoNotPileUp(t *testing.T) {
	t.Parallel()
	store := &slowRenewals{Store: newMemstore()}
	h := server.Middleware(store, server.Options{SingleTenant: true, Lease: 30 * time.Millisecond})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(400 * time.Millisecond)
		w.WriteHeader(http.StatusCreated)
	}))
	serveDirect(h, "slow-renew-1", "x")
	store.mu.Lock()
	defer store.mu.Unlock()
	assert.Equal(t, 1, store.most)
}

// outsideWork is a store that runs work outside any transaction (its
// BeginWork returns no Work, as pgstore without Transactional does) and
// whose Complete fails.
type outsideWork struct{ server.Store }

func (outsideWork) BeginWork(ctx context.Context, _ server.Key, _ string) (context.Context, server.Work, error) {
	return ctx, nil, nil
}

func (outsideWork) Complete(context.Context, server.Key, string, server.StoredResponse, time.Duration) error {
	return errors.New("store down")
}

// TestFailedCompleteAfterOutsideWorkKeepsTheKey: the work happened outside
// the store, then recording it failed. The key stays held (a retry waits
// for the lease, rather than running the work again), and the client gets
// the handler's answer; RunOnce returns the result with the error.
func TestFailedCompleteAfterOutsideWorkKeepsTheKey(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	store := outsideWork{newMemstore()}
	h := server.Middleware(store, singleTenant())(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	assert.Equal(t, http.StatusCreated, serveDirect(h, "outside-1", "x").Code)
	assert.Equal(t, http.StatusConflict, serveDirect(h, "outside-1", "x").Code, "the key is still held")
	assert.Equal(t, int64(1), calls.Load())

	k := server.Key{Scope: "queue", Key: "outside-2"}
	work := func(context.Context) ([]byte, error) { calls.Add(1); return []byte("done"), nil }
	got, _, err := server.RunOnce(context.Background(), store, k, "fp", work, server.RunOptions{})
	require.Error(t, err)
	assert.Equal(t, "done", string(got), "the work happened: its result comes back with the error")
	_, _, err = server.RunOnce(context.Background(), store, k, "fp", work, server.RunOptions{})
	require.ErrorIs(t, err, server.ErrInFlight)
	assert.Equal(t, int64(2), calls.Load(), "each work ran once")
}

// hangingComplete is a store whose Complete does not answer until its
// context ends, as over a silent network partition.
type hangingComplete struct{ server.Store }

func (hangingComplete) Complete(ctx context.Context, _ server.Key, _ string, _ server.StoredResponse, _ time.Duration) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestRecordingTheOutcomeIsBounded: a store that does not answer the
// completion holds the request for a lease, not for ever. On a fake clock.
func TestRecordingTheOutcomeIsBounded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const lease = time.Second
		h := server.Middleware(hangingComplete{newFakeStore()}, server.Options{SingleTenant: true, Lease: lease})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
		start := time.Now()
		rec := serveDirect(h, "bounded-1", "x")
		assert.Equal(t, lease, time.Since(start), "the completion waits one lease")
		assert.Equal(t, http.StatusCreated, rec.Code, "the work happened: the handler's answer")
		idle()
	})
}

// failingRenewals is a store whose Renew fails, without saying the lease
// was lost, as when the database is out of reach.
type failingRenewals struct{ server.Store }

func (failingRenewals) Renew(context.Context, server.Key, string, time.Duration) error {
	return errors.New("database unreachable")
}

// TestWorkStopsWhenRenewalsFailForALease: once no renewal has got through
// for a whole lease, the key may be another worker's: the handler's
// context is cancelled with cause ErrLeaseLost, at the first failed
// renewal a lease or more after the claim. On a fake clock.
func TestWorkStopsWhenRenewalsFailForALease(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const lease = 3 * time.Second
		var cause error
		var stopped time.Duration
		start := time.Now()
		h := server.Middleware(failingRenewals{newFakeStore()}, server.Options{SingleTenant: true, Lease: lease})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				<-r.Context().Done()
				cause, stopped = context.Cause(r.Context()), time.Since(start)
			}))
		serveDirect(h, "unrenewed-1", "x")
		assert.ErrorIs(t, cause, server.ErrLeaseLost)
		assert.GreaterOrEqual(t, stopped, lease)
		assert.LessOrEqual(t, stopped, lease+lease/3, "within a renewal interval of the lease's end")
		idle()
	})
}

// failingBegin is a store whose BeginWork fails and whose Release does not
// answer until its context ends, as over a partition.
type failingBegin struct{ server.Store }

func (failingBegin) BeginWork(ctx context.Context, _ server.Key, _ string) (context.Context, server.Work, error) {
	return ctx, nil, errors.New("database unreachable")
}

func (failingBegin) Release(ctx context.Context, _ server.Key, _ string) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestReleaseAfterAFailedBeginIsBounded: the release after a failed
// BeginWork is bounded by a lease, like every store call that ends a
// request.
func TestReleaseAfterAFailedBeginIsBounded(t *testing.T) {
	t.Parallel()
	h := server.Middleware(failingBegin{newMemstore()}, server.Options{SingleTenant: true, Lease: 100 * time.Millisecond})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	done := make(chan int, 1)
	go func() { done <- serveDirect(h, "begin-fails-1", "x").Code }()
	select {
	case code := <-done:
		assert.Equal(t, http.StatusServiceUnavailable, code)
	case <-time.After(5 * time.Second):
		t.Fatal("the request still waits on the store")
	}
}

// failingCommit is a store whose unit of work fails to commit.
type failingCommit struct{ server.Store }

type failingWork struct{}

func (failingWork) Commit(context.Context, server.StoredResponse, time.Duration) error {
	return errors.New("commit failed: connection reset")
}
func (failingWork) Rollback(context.Context) error { return nil }

func (failingCommit) BeginWork(ctx context.Context, _ server.Key, _ string) (context.Context, server.Work, error) {
	return ctx, failingWork{}, nil
}

// TestFailedCommitIsLogged: a failed commit is answered 503 and logged
// (while the client is still there).
func TestFailedCommitIsLogged(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	h := server.Middleware(failingCommit{newMemstore()}, server.Options{SingleTenant: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	rec := serveDirect(h, "commit-fails-1", "x")
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, logs.String(), "commit failed")
}
