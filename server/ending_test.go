package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

// endingCase is one way a first execution ends, on one kind of store: the
// store calls that must end its claim (exactly one decisive call per
// claim: see the table on server's attempt), the answer, and what a retry
// with the same key gets once the store works again.
type endingCase struct {
	name   string
	kind   string // "Store", "Transactor" or "WorkClaimer"
	behave string // the work: "answer", "fail" (HTTP 500 / an error), "panic", "cancel" (gives up when its client leaves), "outlive" (its client leaves, it answers), "lose" (runs until the lease is lost, then answers)
	fail   func(*fakeStore)
	ends   []string
	// The middleware's answer: status, and problem type when it answers
	// itself.
	status  int
	problem string
	// RunOnce's answer: an error it wraps (nil: the result); withResult:
	// the result comes back with the error.
	err        error
	withResult bool
	retry      string // "replay", "runs" (the work runs again) or "held" (409)
	// result is what the observer hears of the request (of RunOnce, the
	// same, except that work cancelled without answering returns an
	// error: ResultReleased).
	result server.Outcome
}

var errWork = errors.New("work failed")

func endingCases() []endingCase {
	failComplete := func(s *fakeStore) { s.failComplete = errStore }
	failCommit := func(s *fakeStore) { s.failCommit = errStore }
	loseCommit := func(s *fakeStore) { s.failCommit = server.ErrLeaseLost }
	loseLease := func(s *fakeStore) { s.loseLease = true }
	handlerFailed, leaseLost, unavailable := server.ProblemHandlerFailed, server.ProblemLeaseLost, server.ProblemStoreUnavailable
	return []endingCase{
		{"returns", "Store", "answer", nil, []string{"Complete"}, 201, "", nil, false, "replay", server.OutcomeExecuted},
		{"returns a released status", "Store", "fail", nil, []string{"Release"}, 500, "", errWork, false, "runs", server.OutcomeReleased},
		{"panics", "Store", "panic", nil, []string{"Release"}, 500, handlerFailed, nil, false, "runs", server.OutcomeHandlerFailed},
		{"client left, work answered", "Store", "outlive", nil, []string{"Complete"}, 201, "", nil, false, "replay", server.OutcomeExecuted},
		{"cancelled without answering", "Store", "cancel", nil, []string{"Release"}, 500, handlerFailed, context.Canceled, false, "runs", server.OutcomeHandlerFailed},
		{"lease lost", "Store", "lose", loseLease, []string{"Complete"}, 409, leaseLost, server.ErrLeaseLost, false, "held", server.OutcomeLeaseLost},
		{"record failed", "Store", "answer", failComplete, []string{"Complete"}, 201, "", errStore, true, "held", server.OutcomeExecuted},

		{"returns", "Transactor", "answer", nil, []string{"Commit"}, 201, "", nil, false, "replay", server.OutcomeExecuted},
		{"returns a released status", "Transactor", "fail", nil, []string{"Rollback", "Release"}, 500, "", errWork, false, "runs", server.OutcomeReleased},
		{"panics", "Transactor", "panic", nil, []string{"Rollback", "Release"}, 500, handlerFailed, nil, false, "runs", server.OutcomeHandlerFailed},
		{"client left, work answered", "Transactor", "outlive", nil, []string{"Commit"}, 201, "", nil, false, "replay", server.OutcomeExecuted},
		{"cancelled without answering", "Transactor", "cancel", nil, []string{"Rollback", "Release"}, 500, handlerFailed, context.Canceled, false, "runs", server.OutcomeHandlerFailed},
		{"lease lost", "Transactor", "lose", loseLease, []string{"Rollback", "Release"}, 409, leaseLost, server.ErrLeaseLost, false, "held", server.OutcomeLeaseLost},
		{"commit failed", "Transactor", "answer", failCommit, []string{"Commit", "Release"}, 503, unavailable, errStore, false, "runs", server.OutcomeStoreUnavailable},

		{"returns", "WorkClaimer", "answer", nil, []string{"Commit"}, 201, "", nil, false, "replay", server.OutcomeExecuted},
		{"returns a released status", "WorkClaimer", "fail", nil, []string{"Rollback"}, 500, "", errWork, false, "runs", server.OutcomeReleased},
		{"panics", "WorkClaimer", "panic", nil, []string{"Rollback"}, 500, handlerFailed, nil, false, "runs", server.OutcomeHandlerFailed},
		{"client left, work answered", "WorkClaimer", "outlive", nil, []string{"Commit"}, 201, "", nil, false, "replay", server.OutcomeExecuted},
		{"cancelled without answering", "WorkClaimer", "cancel", nil, []string{"Rollback"}, 500, handlerFailed, context.Canceled, false, "runs", server.OutcomeHandlerFailed},
		{"recorded by another unit of work", "WorkClaimer", "answer", loseCommit, []string{"Commit"}, 409, leaseLost, server.ErrLeaseLost, false, "runs", server.OutcomeLeaseLost},
		{"commit failed", "WorkClaimer", "answer", failCommit, []string{"Commit"}, 503, unavailable, errStore, false, "runs", server.OutcomeStoreUnavailable},
	}
}

// storeOf returns the kind of store the case runs on.
func (c endingCase) storeOf(s *fakeStore) server.Store {
	switch c.kind {
	case "Transactor":
		return fakeTx{s}
	case "WorkClaimer":
		return fakeWorkClaimer{s}
	}
	return s
}

// work runs the case's behaviour in the unit of work under ctx; cancel
// cancels the request. It returns the status to answer.
func (c endingCase) work(t *testing.T, ctx context.Context, cancel context.CancelFunc) int {
	if c.kind != "Store" {
		assert.NotNil(t, ctx.Value(fakeWorkKey{}), "the work runs in the store's unit of work")
	}
	switch c.behave {
	case "fail":
		return http.StatusInternalServerError
	case "panic":
		panic("boom")
	case "cancel":
		cancel()
		<-server.ClientContext(ctx).Done() // a handler that stops when its client leaves
		return 0
	case "outlive":
		cancel()
		assert.NoError(t, ctx.Err(), "the client's leaving does not cancel the work")
		assert.ErrorIs(t, server.ClientContext(ctx).Err(), context.Canceled, "ClientContext sees it")
	case "lose":
		<-ctx.Done()
		assert.ErrorIs(t, context.Cause(ctx), server.ErrLeaseLost)
	}
	return http.StatusCreated
}

// eachEnding runs test for every ending case in a synctest bubble, with
// a fresh fake store set to fail as the case says; heal makes it work
// again.
func eachEnding(t *testing.T, test func(t *testing.T, c endingCase, fs *fakeStore, heal func())) {
	for _, c := range endingCases() {
		t.Run(c.kind+"/"+c.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				fs := newFakeStore()
				if c.fail != nil {
					c.fail(fs)
				}
				test(t, c, fs, func() {
					fs.mu.Lock()
					fs.failComplete, fs.failCommit, fs.loseLease = nil, nil, false
					fs.mu.Unlock()
				})
				idle() // the middleware's renewer ends at its next tick
			})
		})
	}
}

// TestEveryEndingEndsTheClaimOnce: however a first request ends, its
// claim ends with exactly the store calls of attempt's table, and the
// answer and the retry are as documented.
func TestEveryEndingEndsTheClaimOnce(t *testing.T) {
	t.Parallel()
	eachEnding(t, func(t *testing.T, c endingCase, fs *fakeStore, heal func()) {
		runs := 0
		events := &eventLog{}
		h := server.Middleware(c.storeOf(fs), server.Options{SingleTenant: true, Observer: events.observer()})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				assert.NotNil(t, r.Context().Value(claimStartedKey{}), "the handler runs in the context ClaimStart returned")
				runs++
				behave := c
				if runs > 1 {
					behave.behave = "answer"
				}
				if status := behave.work(t, r.Context(), cancelOf(r)); status != 0 {
					w.WriteHeader(status)
					w.Write([]byte("done"))
				}
			}))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req := httptest.NewRequestWithContext(withCancel(ctx, cancel), http.MethodPost, "/orders", strings.NewReader("x"))
		req.Header.Set("Idempotency-Key", "ending-1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		assert.Equal(t, c.ends, fs.endsOf(server.Key{Key: "ending-1"}), "the calls that ended the claim")
		assert.Equal(t, c.status, rec.Code, rec.Body.String())
		if c.problem != "" {
			assert.Contains(t, rec.Body.String(), c.problem)
		}
		if c.kind == "WorkClaimer" {
			claims, renewals := fs.counts()
			assert.Zero(t, claims, "a WorkClaimer's keys are claimed with ClaimWork only")
			assert.Zero(t, renewals, "a claim held by a unit of work is not renewed")
		}
		events.check(t, c, c.result)

		heal()
		again := serveDirect(h, "ending-1", "x")
		switch c.retry {
		case "replay":
			assert.Equal(t, "true", again.Header().Get(server.ReplayedHeader))
			assert.Equal(t, 1, runs)
		case "runs":
			assert.Equal(t, http.StatusCreated, again.Code)
			assert.Equal(t, 2, runs, "the retry runs the work again")
		case "held":
			assert.Equal(t, http.StatusConflict, again.Code, "the key is still held")
			assert.Equal(t, 1, runs)
		}
	})
}

// TestEveryEndingEndsTheClaimOnceRunOnce is the same for RunOnce.
func TestEveryEndingEndsTheClaimOnceRunOnce(t *testing.T) {
	t.Parallel()
	eachEnding(t, func(t *testing.T, c endingCase, fs *fakeStore, heal func()) {
		store := c.storeOf(fs)
		k := server.Key{Scope: "queue", Key: "ending-1"}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		runs := 0
		events := &eventLog{}
		work := func(ctx context.Context) ([]byte, error) {
			if runs == 0 { // the retry below is not observed
				assert.NotNil(t, ctx.Value(claimStartedKey{}), "the work runs in the context ClaimStart returned")
			}
			runs++
			switch status := c.work(t, ctx, cancel); {
			case status == 0:
				return nil, server.ClientContext(ctx).Err()
			case status >= 500:
				return nil, errWork
			}
			return []byte("done"), nil
		}
		var (
			got []byte
			err error
		)
		panicked := func() (v any) {
			defer func() { v = recover() }()
			got, _, err = server.RunOnce(ctx, store, k, "fp", work, server.RunOptions{Observer: events.observer()})
			return nil
		}()
		want := c.result
		if c.behave == "cancel" {
			want = server.OutcomeReleased // the work returned ctx's error
		}
		events.check(t, c, want)

		assert.Equal(t, c.ends, fs.endsOf(k), "the calls that ended the claim")
		switch {
		case c.behave == "panic":
			assert.Equal(t, "boom", panicked, "the work's panic goes on")
		case c.err == nil:
			require.NoError(t, err)
			assert.Equal(t, "done", string(got))
		default:
			require.ErrorIs(t, err, c.err)
			if c.withResult {
				assert.Equal(t, "done", string(got), "the work happened: its result comes back with the error")
			} else {
				assert.Nil(t, got)
			}
		}

		heal()
		c.behave = "answer"
		got, replayed, err := server.RunOnce(context.Background(), store, k, "fp", work, server.RunOptions{})
		switch c.retry {
		case "replay":
			require.NoError(t, err)
			assert.True(t, replayed)
			assert.Equal(t, 1, runs)
		case "runs":
			require.NoError(t, err)
			assert.Equal(t, "done", string(got))
			assert.Equal(t, 2, runs, "the retry runs the work again")
		case "held":
			require.ErrorIs(t, err, server.ErrInFlight, "the key is still held")
			assert.Equal(t, 1, runs)
		}
	})
}

// idle lets a synctest bubble's goroutines run out: time stops once the
// test function returns, and the middleware's renewer ends only at a tick
// that finds nothing to renew.
func idle() {
	time.Sleep(time.Hour)
	synctest.Wait()
}

// cancelKey carries the request's cancel function to the handler.
type cancelKey struct{}

func withCancel(ctx context.Context, cancel context.CancelFunc) context.Context {
	return context.WithValue(ctx, cancelKey{}, cancel)
}

func cancelOf(r *http.Request) context.CancelFunc {
	cancel, _ := r.Context().Value(cancelKey{}).(context.CancelFunc)
	return cancel
}
