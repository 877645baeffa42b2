package server_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

// eventLog records what an Observer hears.
type eventLog struct {
	mu       sync.Mutex
	requests []server.RequestInfo
	starts   []server.ClaimStartInfo
	ends     []server.ClaimEndInfo
	renewals []server.RenewalInfo
	ops      []server.StoreOpInfo
	lostCtx  int // ClaimEnds that did not get the context ClaimStart returned
}

// claimStartedKey marks the context eventLog's ClaimStart returns.
type claimStartedKey struct{}

func (l *eventLog) observer() *server.Observer {
	return &server.Observer{
		Request: func(_ context.Context, i server.RequestInfo) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.requests = append(l.requests, i)
		},
		ClaimStart: func(ctx context.Context, i server.ClaimStartInfo) context.Context {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.starts = append(l.starts, i)
			return context.WithValue(ctx, claimStartedKey{}, true)
		},
		ClaimEnd: func(ctx context.Context, i server.ClaimEndInfo) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.ends = append(l.ends, i)
			if ctx.Value(claimStartedKey{}) == nil {
				l.lostCtx++
			}
		},
		Renewal: func(_ context.Context, i server.RenewalInfo) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.renewals = append(l.renewals, i)
		},
		StoreOp: func(_ context.Context, i server.StoreOpInfo) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.ops = append(l.ops, i)
		},
	}
}

// results returns the results of the requests heard, in order.
func (l *eventLog) results() []server.Outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []server.Outcome
	for _, r := range l.requests {
		out = append(out, r.Outcome)
	}
	return out
}

// opNames returns the store operations heard other than renewals, in
// order, each with its error type after a colon when it failed.
func (l *eventLog) opNames() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, o := range l.ops {
		if o.Op == server.OpRenew {
			continue
		}
		if o.ErrorType != "" {
			out = append(out, o.Op+":"+o.ErrorType)
		} else {
			out = append(out, o.Op)
		}
	}
	return out
}

// all returns every event heard, printed, to search for secrets.
func (l *eventLog) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%+v %+v %+v %+v %+v", l.requests, l.starts, l.ends, l.renewals, l.ops)
}

// check checks the events of one ending case's first request: one
// request answered want, one claim started and ended with it, and one
// reported store call for the claim, the unit of work's beginning and each
// call that ended the claim.
func (l *eventLog) check(t *testing.T, c endingCase, want server.Outcome) {
	t.Helper()
	assert.Equal(t, []server.Outcome{want}, l.results())
	l.mu.Lock()
	assert.Len(t, l.starts, 1, "one claim started")
	assert.Equal(t, []server.ClaimEndInfo{{Outcome: want}}, l.ends, "and ended, as answered")
	assert.Zero(t, l.lostCtx, "ClaimEnd gets the context ClaimStart returned")
	if len(l.starts) == 1 {
		assert.Equal(t, c.kind != "WorkClaimer", l.starts[0].Leased)
		assert.Empty(t, l.starts[0].Key, "no key without IncludeKey")
	}
	l.mu.Unlock()
	ops := []string{server.OpClaim}
	if c.kind == "Transactor" {
		ops = append(ops, server.OpBegin)
	}
	failed := map[string]string{}
	if c.fail != nil {
		fs := newFakeStore()
		c.fail(fs)
		if fs.failComplete != nil {
			failed["Complete"] = "_OTHER"
		}
		if fs.failCommit != nil {
			failed["Commit"] = map[bool]string{true: "lease_lost", false: "_OTHER"}[errors.Is(fs.failCommit, server.ErrLeaseLost)]
		}
	}
	for _, call := range c.ends {
		op := strings.ToLower(call)
		switch {
		case failed[call] != "":
			op += ":" + failed[call]
		case c.behave == "lose" && call != "Rollback":
			op += ":lease_lost" // fenced: the key is no longer held
		}
		ops = append(ops, op)
	}
	assert.Equal(t, ops, l.opNames(), "every store call is reported, with its error's type")
}

// TestObserverRequests drives requests through a ServeMux pattern and
// checks what the observer hears of each: the result, the method, the
// route (the pattern without its method), and never the key or scope.
func TestObserverRequests(t *testing.T) {
	t.Parallel()
	events := &eventLog{}
	mw := server.Middleware(newMemstore(), server.Options{
		Scope: tenantScope, MaxBody: 16, Observer: events.observer(),
		Logger: slog.New(slog.DiscardHandler),
	})
	a := newApp()
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}", mw(a))
	h := &harness{t: t, app: a, srv: newServer(t, mux), client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	t.Cleanup(a.unblock)

	const path = "/orders/42"
	key, blocked := "secret-key-1", "secret-key-2"
	steps := []struct {
		name   string
		call   call
		status int
		want   server.Outcome
	}{
		{"first", call{path: path, key: key, tenant: "secret-tenant", body: "a"}, 201, server.OutcomeExecuted},
		{"repeat", call{path: path, key: key, tenant: "secret-tenant", body: "a"}, 201, server.OutcomeReplayed},
		{"other body", call{path: path, key: key, tenant: "secret-tenant", body: "b"}, 422, server.OutcomeKeyReused},
		{"no key", call{path: path, body: "a"}, 400, server.OutcomeKeyMissing},
		{"bad key", call{path: path, key: strings.Repeat("k", server.MaxKeyLen+1), body: "a"}, 400, server.OutcomeKeyInvalid},
		{"two keys", call{path: path, keys: []string{"a", "b"}, body: "a"}, 400, server.OutcomeKeyInvalid},
		{"no scope", call{path: path, key: key, tenant: "-", body: "a"}, 401, server.OutcomeScopeUnavailable},
		{"body too large", call{path: path, key: newKey(), body: strings.Repeat("x", 17)}, 413, server.OutcomeBodyTooLarge},
		{"released status", call{path: path, key: newKey(), body: "a", header: map[string]string{"X-Status": "503"}}, 503, server.OutcomeReleased},
		{"panic", call{path: path, key: newKey(), body: "a", header: map[string]string{"X-Behave": "panic"}}, 500, server.OutcomeHandlerFailed},
	}
	for _, s := range steps {
		r := h.do(s.call)
		require.NoError(t, r.err, s.name)
		require.Equal(t, s.status, r.status, "%s: %s", s.name, r.body)
	}
	// A repeat while the first still runs.
	first := h.async(call{path: path, key: blocked, body: "a", header: map[string]string{"X-Behave": "block"}})
	h.waitEntered()
	require.Equal(t, http.StatusConflict, h.do(call{path: path, key: blocked, body: "a"}).status)
	a.unblock()
	require.Equal(t, http.StatusCreated, (<-first).status)

	var want []server.Outcome
	for _, s := range steps {
		want = append(want, s.want)
	}
	want = append(want, server.OutcomeInFlight, server.OutcomeExecuted)
	assert.Equal(t, want, events.results())
	events.mu.Lock()
	for _, r := range events.requests {
		assert.Equal(t, server.RequestInfo{Method: http.MethodPost, Route: "/orders/{id}", Outcome: r.Outcome}, r)
	}
	assert.Len(t, events.starts, 4, "the claims of the first requests: executed, released, panicked, blocked")
	assert.Len(t, events.ends, 4)
	events.mu.Unlock()
	all := events.all()
	assert.NotContains(t, all, "secret", "no key or scope in any event")
}

// TestObserverIncludeKey: the key reaches ClaimStart only when asked for.
func TestObserverIncludeKey(t *testing.T) {
	t.Parallel()
	for _, include := range []bool{false, true} {
		t.Run(fmt.Sprint(include), func(t *testing.T) {
			t.Parallel()
			events := &eventLog{}
			obs := events.observer()
			obs.IncludeKey = include
			h := server.Middleware(newMemstore(), server.Options{SingleTenant: true, Observer: obs})(newApp())
			require.Equal(t, http.StatusCreated, serveDirect(h, `"the-key"`, "x").Code)
			want := ""
			if include {
				want = "the-key" // normalised: the bare form
			}
			require.Len(t, events.starts, 1)
			assert.Equal(t, want, events.starts[0].Key)
		})
	}
}

// namedStore is a store that names its database system and reports
// every claim as a takeover.
type namedStore struct{ server.Store }

func (namedStore) StoreSystem() string { return "memory" }

func (s namedStore) Claim(ctx context.Context, k server.Key, fp string, lease time.Duration) (server.Claim, error) {
	c, err := s.Store.Claim(ctx, k, fp, lease)
	c.TakenOver = c.Acquired
	return c, err
}

// TestObserverStoreOps: store calls are reported with the store's system
// name and a duration; a claim's takeover reaches ClaimStart.
func TestObserverStoreOps(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		events := &eventLog{}
		store := namedStore{newFakeStore()}
		h := server.Middleware(store, server.Options{SingleTenant: true, Observer: events.observer()})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(time.Millisecond)
				w.WriteHeader(http.StatusCreated)
			}))
		require.Equal(t, http.StatusCreated, serveDirect(h, "k", "x").Code)
		assert.Equal(t, []string{server.OpClaim, server.OpComplete}, events.opNames())
		for _, o := range events.ops {
			assert.Equal(t, "memory", o.System)
			assert.Zero(t, o.Duration, "the fake store answers at once on the fake clock")
		}
		require.Len(t, events.starts, 1)
		assert.True(t, events.starts[0].TakenOver)
		idle()
	})
}

// TestObserverRenewals: each renewal is reported, and a renewal that
// finds the key taken over is reported with error type lease_lost, as is
// the request's result.
func TestObserverRenewals(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const lease = time.Second
		events := &eventLog{}
		fs := newFakeStore()
		h := server.Middleware(fs, server.Options{SingleTenant: true, Lease: lease, Observer: events.observer()})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(lease / 2) // renewed once, at a third of the lease
				fs.mu.Lock()
				fs.loseLease = true
				fs.mu.Unlock()
				<-r.Context().Done()
				w.WriteHeader(http.StatusCreated)
			}))
		rec := serveDirect(h, "k", "x")
		requireProblem(t, replyOf(rec), http.StatusConflict, server.ProblemLeaseLost)
		synctest.Wait()
		assert.Equal(t, []server.RenewalInfo{{}, {ErrorType: "lease_lost"}}, events.renewals)
		assert.Equal(t, []server.Outcome{server.OutcomeLeaseLost}, events.results())
		var renews []string
		for _, o := range events.ops {
			if o.Op == server.OpRenew {
				renews = append(renews, o.ErrorType)
			}
		}
		assert.Equal(t, []string{"", "lease_lost"}, renews)
		idle()
	})
}

// fullStore refuses every new key as a full store does.
type fullStore struct{ server.Store }

var errFull = fmt.Errorf("teststore: store full: %w", server.ErrStoreFull)

func (fullStore) Claim(context.Context, server.Key, string, time.Duration) (server.Claim, error) {
	return server.Claim{}, errFull
}

// TestStoreFullAnswer: a full store is answered with its own problem type and a
// longer Retry-After, logged as a warning that names no key, observed as
// store_full, and returned by RunOnce as ErrStoreFull; a failing store is
// not.
func TestStoreFullAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		store      server.Store
		problem    string
		retryAfter string
		level      string
		result     server.Outcome
	}{
		{"full", fullStore{newMemstore()}, server.ProblemStoreFull, "30", "level=WARN", server.OutcomeStoreFull},
		{"failing", failingStore{newMemstore()}, server.ProblemStoreUnavailable, "1", "level=ERROR", server.OutcomeStoreUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			events := &eventLog{}
			h := newHarness(t, server.Options{Observer: events.observer()}, tt.store)
			r := h.do(call{key: "secret-key", tenant: "secret-tenant", body: "x"})
			requireProblem(t, r, http.StatusServiceUnavailable, tt.problem)
			assert.Equal(t, tt.retryAfter, r.header.Get("Retry-After"))
			assert.Zero(t, h.app.calls.Load(), "nothing ran")
			assert.Contains(t, h.logs.String(), tt.level)
			if tt.result == server.OutcomeStoreFull {
				assert.NotContains(t, h.logs.String(), "secret", "no key, no scope")
			}
			assert.Equal(t, []server.Outcome{tt.result}, events.results())

			events = &eventLog{}
			_, _, err := server.RunOnce(context.Background(), tt.store, server.Key{Key: "k"}, "fp",
				func(context.Context) ([]byte, error) { panic("ran") }, server.RunOptions{Observer: events.observer()})
			assert.Equal(t, tt.result == server.OutcomeStoreFull, errors.Is(err, server.ErrStoreFull))
			assert.Equal(t, []server.Outcome{tt.result}, events.results())
		})
	}
}

// failingStore fails every claim.
type failingStore struct{ server.Store }

func (failingStore) Claim(context.Context, server.Key, string, time.Duration) (server.Claim, error) {
	return server.Claim{}, errStore
}

// TestRunOnceObserved: RunOnce reports its calls as requests with no
// method or route.
func TestRunOnceObserved(t *testing.T) {
	t.Parallel()
	events := &eventLog{}
	store := newMemstore()
	k := server.Key{Scope: "q", Key: "m-1"}
	opts := server.RunOptions{Observer: events.observer()}
	work := func(context.Context) ([]byte, error) { return []byte("ok"), nil }
	for _, fp := range []string{"a", "a", "b"} {
		server.RunOnce(context.Background(), store, k, fp, work, opts)
	}
	assert.Equal(t, []server.Outcome{server.OutcomeExecuted, server.OutcomeReplayed, server.OutcomeKeyReused}, events.results())
	for _, r := range events.requests {
		assert.Empty(t, r.Method)
		assert.Empty(t, r.Route)
	}
	assert.Len(t, events.starts, 1)
	assert.Len(t, events.ends, 1)
}

// TestObserverNil: an Observer with no hooks set changes nothing.
func TestObserverNil(t *testing.T) {
	t.Parallel()
	h := server.Middleware(newMemstore(), server.Options{SingleTenant: true, Observer: &server.Observer{}})(newApp())
	rec := serveDirect(h, "k", "x")
	assert.Equal(t, http.StatusCreated, rec.Code)
	rec = serveDirect(h, "k", "x")
	assert.Equal(t, "true", rec.Header().Get(server.ReplayedHeader))
}
