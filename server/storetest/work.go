// This file holds the cases every unit of work shares, begun by a
// server.Transactor's BeginWork or a server.WorkClaimer's ClaimWork: how
// it ends, and the context it runs with.

package storetest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/idemhq/idem/server"
)

// testWorkEndsOnce checks that a Work ends once: a second Commit fails
// and stores nothing, a Rollback after Commit does nothing and returns
// nil (so a caller may defer it), and a Commit after Rollback fails and
// stores nothing. newWork acquires k and begins its work.
func testWorkEndsOnce(t *testing.T, f fixture, newWork func(k server.Key) server.Work) {
	bg := context.Background()
	other := server.StoredResponse{Status: http.StatusTeapot, Body: []byte("other")}

	k := f.key()
	work := newWork(k)
	noError(t, work.Commit(bg, sampleResponse(), retention), "Commit")
	check(t, work.Commit(bg, other, retention) != nil, "a second Commit must fail")
	noError(t, work.Rollback(bg), "Rollback after Commit")
	requireCompleted(t, f.claim(k, "fp", longLease), "fp", sampleResponse())

	k = f.key()
	work = newWork(k)
	noError(t, work.Rollback(bg), "Rollback")
	check(t, work.Commit(bg, other, retention) != nil, "Commit after Rollback must fail")
	c := f.claim(k, "fp", longLease)
	check(t, !c.Record.Completed, "Commit after Rollback stored an outcome")
	if c.Acquired {
		noError(t, f.s.Release(bg, k, c.Token), "Release")
	}
}

// ctxKey is the key of the value testContextDescends puts in the caller's
// context.
type ctxKey struct{}

// testContextDescends checks that the context a unit of work runs with
// descends from the caller's: it carries the caller's values and is
// cancelled with it. begin acquires k under ctx and begins its work.
func testContextDescends(t *testing.T, f fixture, begin func(ctx context.Context, k server.Key) (context.Context, server.Work)) {
	bg := context.Background()
	ctx, cancel := context.WithCancel(context.WithValue(bg, ctxKey{}, "the caller's"))
	defer cancel()
	wctx, work := begin(ctx, f.key())
	must(t, wctx != nil, "the unit of work's context is nil")
	check(t, wctx.Value(ctxKey{}) == "the caller's", "the unit of work's context lost the caller's values")
	cancel()
	select {
	case <-wctx.Done():
	case <-time.After(waitFor):
		t.Errorf("the unit of work's context was not cancelled with the caller's")
	}
	_ = work.Rollback(bg) // the cancellation may have ended the work already
}

// transactorWork acquires k under a lease with fingerprint "fp" and
// begins its work under ctx; it skips the test if the store runs work
// outside any transaction.
func (f fixture) transactorWork(ctx context.Context, k server.Key) (context.Context, server.Work) {
	f.t.Helper()
	token := f.acquire(k, "fp", longLease)
	wctx, work, err := f.tx.BeginWork(ctx, k, token)
	noError(f.t, err, "BeginWork")
	if work == nil {
		noError(f.t, f.s.Release(context.Background(), k, token), "Release")
		f.t.Skip("the store runs work outside any transaction")
	}
	f.t.Cleanup(func() { _ = work.Rollback(context.Background()) }) // as claimWork's
	return wctx, work
}
