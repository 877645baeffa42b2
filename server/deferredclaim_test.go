package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

// deferredClaimer is a fakeStore that is a WorkClaimer deferring its
// claims, as pgstore's pipelined mode does: ClaimWork answers Acquired
// at once, and the claim (fakeWorkClaimer's per-key mutex) is made with
// the work's first statement (deferredStatement), or, if the work makes
// none, when it ends. A refused claim fails the statement with
// errNotClaimed, and the Work's Commit or Rollback returns
// *server.ClaimRefused. effects counts the statements that ran.
type deferredClaimer struct {
	*fakeStore
	mu      sync.Mutex
	effects map[server.Key]int
}

func newDeferredClaimer() *deferredClaimer {
	return &deferredClaimer{fakeStore: newFakeStore(), effects: map[server.Key]int{}}
}

var errNotClaimed = errors.New("fake: not claimed")

type deferredKey struct{}

func (s *deferredClaimer) ClaimWork(ctx context.Context, k server.Key, fp string) (server.Claim, context.Context, server.Work, error) {
	w := &deferredUnit{s: s, k: k, fp: fp}
	return server.Claim{Acquired: true}, context.WithValue(ctx, deferredKey{}, w), w, nil
}

// deferredStatement runs the work's statement: the claim, then its
// effect if the claim held.
func deferredStatement(ctx context.Context) error {
	w := ctx.Value(deferredKey{}).(*deferredUnit)
	if err := w.claim(); err != nil {
		return err
	}
	w.s.mu.Lock()
	w.s.effects[w.k]++
	w.s.mu.Unlock()
	return nil
}

func (s *deferredClaimer) effectsOf(k server.Key) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.effects[k]
}

type deferredUnit struct {
	s       *deferredClaimer
	k       server.Key
	fp      string
	sent    bool
	r       *fakeRecord   // the record locked, once the claim held
	refused *server.Claim // the claim's answer, once refused
}

// claim makes the deferred claim, once.
func (w *deferredUnit) claim() error {
	if w.sent {
		if w.refused != nil {
			return errNotClaimed
		}
		return nil
	}
	w.sent = true
	s := w.s.fakeStore
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[w.k]
	if !ok {
		r = &fakeRecord{fp: w.fp}
		s.records[w.k] = r
	}
	if !r.lock.TryLock() {
		w.refused = &server.Claim{}
		return errNotClaimed
	}
	if r.completed {
		r.lock.Unlock()
		w.refused = &server.Claim{Record: r.record()}
		return errNotClaimed
	}
	r.fp, w.r = w.fp, r
	return nil
}

func (w *deferredUnit) Commit(_ context.Context, resp server.StoredResponse, _ time.Duration) error {
	if err := w.claim(); err != nil {
		w.s.logEnd(w.k, "Commit refused")
		return &server.ClaimRefused{Claim: *w.refused}
	}
	s := w.s.fakeStore
	s.mu.Lock()
	defer s.mu.Unlock()
	defer w.r.lock.Unlock()
	s.logEnd(w.k, "Commit")
	w.r.completed, w.r.resp = true, resp
	return nil
}

func (w *deferredUnit) Rollback(context.Context) error {
	switch {
	case w.refused != nil:
		w.s.logEnd(w.k, "Rollback refused")
		return &server.ClaimRefused{Claim: *w.refused}
	case w.r != nil:
		w.s.logEnd(w.k, "Rollback")
		w.r.lock.Unlock()
	default: // the claim is sent at the end, as Commit sends it
		if err := w.claim(); err != nil {
			w.s.logEnd(w.k, "Rollback refused")
			return &server.ClaimRefused{Claim: *w.refused}
		}
		w.s.logEnd(w.k, "Rollback")
		w.r.lock.Unlock()
	}
	return nil
}

// TestDeferredClaim: with a store that defers its claim to the work's
// first statement, a repeat's handler runs, but its statement is refused
// and its own answer thrown away: the request is answered as its claim
// (409 while the first runs, then a replay of the first's answer, 422 for
// another body), whatever the handler answered, or if it panicked, or
// made no statement at all, whether it then succeeded (the work ends with
// Commit) or failed (with Rollback). The work's effect happens once. The
// observer sees each refused request as its claim's outcome.
func TestDeferredClaim(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := newDeferredClaimer()
		var mu sync.Mutex
		outcomes := map[server.Outcome]int{}
		obs := &server.Observer{Request: func(_ context.Context, info server.RequestInfo) {
			mu.Lock()
			outcomes[info.Outcome]++
			mu.Unlock()
		}}
		release := make(chan struct{})
		h := server.Middleware(store, server.Options{SingleTenant: true, Observer: obs, Wait: 0})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mode := r.Header.Get("Mode")
				switch mode {
				case "no statement":
					w.WriteHeader(http.StatusAccepted)
					w.Write([]byte("answered without a statement"))
					return
				case "failed without a statement":
					http.Error(w, "statement failed: none made", http.StatusServiceUnavailable)
					return
				}
				if err := deferredStatement(r.Context()); err != nil {
					if mode == "panic" {
						panic(err)
					}
					http.Error(w, "statement failed: "+err.Error(), http.StatusInternalServerError)
					return
				}
				if mode == "hold" {
					<-release
				}
				w.WriteHeader(http.StatusCreated)
				w.Write([]byte("charged"))
			}))
		serve := func(mode, body string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(body))
			req.Header.Set("Idempotency-Key", "dc-1")
			req.Header.Set("Mode", mode)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		first := make(chan *httptest.ResponseRecorder, 1)
		go func() { first <- serve("hold", "a") }()
		synctest.Wait() // the first holds the key

		modes := []string{"", "panic", "no statement", "failed without a statement"}
		for _, mode := range modes {
			rec := serve(mode, "a")
			assert.Equal(t, http.StatusConflict, rec.Code, "mode %q while the first runs", mode)
			assert.NotContains(t, rec.Body.String(), "statement failed")
		}
		close(release)
		got := <-first
		require.Equal(t, http.StatusCreated, got.Code)
		assert.Equal(t, "charged", got.Body.String())

		for _, mode := range modes {
			rec := serve(mode, "a")
			assert.Equal(t, http.StatusCreated, rec.Code, "mode %q after the first", mode)
			assert.Equal(t, "charged", rec.Body.String())
			assert.Equal(t, "true", rec.Header().Get(server.ReplayedHeader))
			assert.Equal(t, http.StatusUnprocessableEntity, serve(mode, "another body").Code)
		}
		k := server.Key{Key: "dc-1"}
		assert.Equal(t, 1, store.effectsOf(k), "the work's effect happens once")
		ends := map[string]int{}
		for _, e := range store.endsOf(k) {
			ends[e]++
		}
		assert.Equal(t, map[string]int{"Commit": 1, "Rollback refused": 9, "Commit refused": 3}, ends)
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, map[server.Outcome]int{
			server.OutcomeExecuted: 1, server.OutcomeInFlight: 4,
			server.OutcomeReplayed: 4, server.OutcomeKeyReused: 4,
		}, outcomes)
	})
}

// TestDeferredClaimRunOnce: RunOnce answers a refused deferred claim as
// its claim: the recorded result, ErrInFlight, ErrKeyReused, and the
// work's error is not returned.
func TestDeferredClaimRunOnce(t *testing.T) {
	t.Parallel()
	store := newDeferredClaimer()
	k := server.Key{Key: "dc-run"}
	work := func(ctx context.Context) ([]byte, error) {
		if err := deferredStatement(ctx); err != nil {
			return nil, err
		}
		return []byte("result"), nil
	}
	res, replayed, err := server.RunOnce(context.Background(), store, k, "fp", work, server.RunOptions{})
	require.NoError(t, err)
	assert.False(t, replayed)
	assert.Equal(t, "result", string(res))

	res, replayed, err = server.RunOnce(context.Background(), store, k, "fp", work, server.RunOptions{})
	require.NoError(t, err)
	assert.True(t, replayed)
	assert.Equal(t, "result", string(res))

	_, _, err = server.RunOnce(context.Background(), store, k, "other", work, server.RunOptions{})
	assert.ErrorIs(t, err, server.ErrKeyReused)

	// While another unit of work holds the key, the refused work's error
	// is not the answer: the key is in flight.
	held := server.Key{Key: "dc-held"}
	_, ctx, w, err := store.ClaimWork(context.Background(), held, "fp")
	require.NoError(t, err)
	require.NoError(t, deferredStatement(ctx))
	_, _, err = server.RunOnce(context.Background(), store, held, "fp", work, server.RunOptions{})
	assert.ErrorIs(t, err, server.ErrInFlight)
	assert.NotErrorIs(t, err, errNotClaimed)
	require.NoError(t, w.Rollback(context.Background()))
	assert.Equal(t, 2, store.effectsOf(k)+store.effectsOf(held))
}
