package server_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

var errSecret = errors.New("store: secret connection string leaked")

// brokenStore fails the operations whose flag is set.
type brokenStore struct {
	server.Store
	claim, complete, release atomic.Bool
}

func (s *brokenStore) Claim(ctx context.Context, k server.Key, fp string, lease time.Duration) (server.Claim, error) {
	if s.claim.Load() {
		return server.Claim{}, errSecret
	}
	return s.Store.Claim(ctx, k, fp, lease)
}

func (s *brokenStore) Complete(ctx context.Context, k server.Key, token string, resp server.StoredResponse, retention time.Duration) error {
	if s.complete.Load() {
		return errSecret
	}
	return s.Store.Complete(ctx, k, token, resp, retention)
}

func (s *brokenStore) Release(ctx context.Context, k server.Key, token string) error {
	if s.release.Load() {
		return errSecret
	}
	return s.Store.Release(ctx, k, token)
}

func TestStoreFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		fail   func(*brokenStore)
		header map[string]string
		// want is the status; problem the type when the middleware answers.
		want    int
		problem string
		calls   int64
		log     string
	}{
		{"claim fails", func(s *brokenStore) { s.claim.Store(true) }, nil,
			http.StatusServiceUnavailable, server.ProblemStoreUnavailable, 0, "store failed"},
		{"complete fails: the work happened, its answer is sent", func(s *brokenStore) { s.complete.Store(true) }, nil,
			http.StatusCreated, "", 1, "outcome not recorded"},
		{"release fails: the handler's answer is sent", func(s *brokenStore) { s.release.Store(true) }, status(500),
			http.StatusInternalServerError, "", 1, "release failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := &brokenStore{Store: newMemstore()}
			tt.fail(store)
			h := newHarness(t, server.Options{}, store)
			r := h.do(call{key: newKey(), header: tt.header})
			if tt.problem != "" {
				requireProblem(t, r, tt.want, tt.problem)
			} else {
				require.NoError(t, r.err)
				assert.Equal(t, tt.want, r.status)
			}
			assert.NotContains(t, r.body, "secret")
			assert.Equal(t, tt.calls, h.app.calls.Load())
			assert.Contains(t, h.logs.String(), tt.log)
			assert.Contains(t, h.logs.String(), errSecret.Error(), "the cause is logged")
		})
	}
}

func TestStoreFull(t *testing.T) {
	t.Parallel()
	h := newHarness(t, server.Options{}, memstore.New(memstore.Options{MaxKeys: 1}))
	key := newKey()
	first := h.async(call{key: key, header: block})
	h.waitEntered()
	requireProblem(t, h.do(call{key: newKey()}), http.StatusServiceUnavailable, server.ProblemStoreFull)
	h.app.unblock()
	done := <-first
	assert.Equal(t, 201, done.status)
	requireProblem(t, h.do(call{key: newKey()}), http.StatusServiceUnavailable, server.ProblemStoreFull)
	again := h.do(call{key: key})
	assert.Equal(t, 201, again.status)
	assert.True(t, again.replayed(), "a completed record is never forgotten to make room: its retry is replayed")
	assert.Equal(t, int64(1), h.app.calls.Load())
}

func TestPanicIsLogged(t *testing.T) {
	t.Parallel()
	h := newHarness(t, server.Options{}, nil)
	r := h.do(call{key: newKey(), header: map[string]string{"X-Behave": "panic"}})
	requireProblem(t, r, http.StatusInternalServerError, server.ProblemHandlerFailed)
	assert.Contains(t, h.logs.String(), "handler panicked")
	assert.Contains(t, h.logs.String(), "boom")
}

func TestScopeErrorIsNotSent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, server.Options{}, nil)
	requireProblem(t, h.do(call{key: newKey(), tenant: "-"}), http.StatusUnauthorized, server.ProblemScopeUnavailable)
	assert.Contains(t, h.logs.String(), "no tenant")
}

// txStore is a Transactor over memstore that counts commits and rollbacks
// and marks the work's context.
type txStore struct {
	*memstore.Store
	commits, rollbacks atomic.Int64
	beginErr           atomic.Pointer[error]
	commitErr          atomic.Pointer[error]
}

type txKey struct{}

func (s *txStore) BeginWork(ctx context.Context, k server.Key, token string) (context.Context, server.Work, error) {
	if err := s.beginErr.Load(); err != nil {
		return nil, nil, *err
	}
	return context.WithValue(ctx, txKey{}, "tx"), &txWork{s: s, k: k, token: token}, nil
}

type txWork struct {
	s     *txStore
	k     server.Key
	token string
}

func (w *txWork) Commit(ctx context.Context, resp server.StoredResponse, retention time.Duration) error {
	w.s.commits.Add(1)
	if err := w.s.commitErr.Load(); err != nil {
		return *err
	}
	return w.s.Complete(ctx, w.k, w.token, resp, retention)
}

func (w *txWork) Rollback(context.Context) error {
	w.s.rollbacks.Add(1)
	return nil
}

func TestTransactor(t *testing.T) {
	t.Parallel()
	lost, secret := server.ErrLeaseLost, errSecret
	tests := []struct {
		name      string
		header    map[string]string
		beginErr  *error
		commitErr *error
		want      int
		problem   string
		commits   int64
		rollbacks int64
		replayed  bool // the retry replays; otherwise it runs the handler again
	}{
		{"stored outcome commits", nil, nil, nil, 201, "", 1, 0, true},
		{"released outcome rolls back", status(500), nil, nil, 500, "", 0, 1, false},
		{"panic rolls back", map[string]string{"X-Behave": "panic"}, nil, nil, 500, server.ProblemHandlerFailed, 0, 1, false},
		{"failed commit", nil, nil, &secret, 503, server.ProblemStoreUnavailable, 1, 0, false},
		{"commit finds the lease lost", nil, nil, &lost, 409, server.ProblemLeaseLost, 1, 0, false},
		{"failed begin", nil, &secret, nil, 503, server.ProblemStoreUnavailable, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := &txStore{Store: newMemstore()}
			store.beginErr.Store(tt.beginErr)
			store.commitErr.Store(tt.commitErr)
			var sawTx atomic.Bool
			mw := server.Middleware(store, server.Options{SingleTenant: true})
			var calls atomic.Int64
			srv := newServer(t, mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				sawTx.Store(r.Context().Value(txKey{}) == "tx")
				newApp().ServeHTTP(w, r)
			})))
			h := &harness{t: t, srv: srv, client: srv.Client()}
			key := newKey()
			r := h.do(call{key: key, header: tt.header})
			if tt.problem != "" {
				requireProblem(t, r, tt.want, tt.problem)
			} else {
				require.Equal(t, tt.want, r.status, r.body)
			}
			assert.Equal(t, tt.commits, store.commits.Load(), "commits")
			assert.Equal(t, tt.rollbacks, store.rollbacks.Load(), "rollbacks")
			if calls.Load() > 0 {
				assert.True(t, sawTx.Load(), "the handler runs in the unit of work")
			}
			if tt.commitErr == &lost {
				return // the key is still held by the worker that took it over
			}

			store.beginErr.Store(nil)
			store.commitErr.Store(nil)
			before := calls.Load()
			again := h.do(call{key: key})
			assert.Equal(t, tt.replayed, again.replayed(), again.body)
			if !tt.replayed {
				assert.Equal(t, 201, again.status)
				assert.Equal(t, before+1, calls.Load(), "the retry runs the handler again")
			}
		})
	}
}
