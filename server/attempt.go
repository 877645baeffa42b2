// This file holds attempt, one run of the work under an acquired key, and
// its single way out, end, which makes the one store call that ends the
// claim.

package server

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// attempt is one run of the work under an acquired key, from the claim
// until end. The claim is ended exactly once, by end, which its user
// defers as soon as the key is acquired (before the work starts, so a
// failed start, a panic and runtime.Goexit all pass through it); a second
// end panics. The store hears of the end once:
//
//	claim                    outcome  store calls
//	Store.Claim              record   Complete
//	Store.Claim              release  Release
//	Claim + Transactor Work  record   Commit (then Release if the Commit failed and undid the work)
//	Claim + Transactor Work  release  Rollback, Release
//	WorkClaimer.ClaimWork    record   Commit
//	WorkClaimer.ClaimWork    release  Rollback
//
// A lease claim is renewed every renewEvery from its acquisition (while
// the work waits to start, too) until end, by a shared [renewer] (the
// middleware's) or, without one, by a timer of the attempt's own (lease.go).
// A claim held by a WorkClaimer's unit of work has no lease: nothing renews
// it and nothing fences it.
type attempt struct {
	store      Store
	work       Work // nil until begun, and for work outside the store
	key        Key
	token      string
	inWork     bool // the claim lives in work (WorkClaimer.ClaimWork)
	lease      time.Duration
	renewEvery time.Duration
	log        *slog.Logger
	origin     time.Time // when the request began (workBase.origin)
	detached   detached  // the claim's context (start.go), never cancelled
	cancel     context.CancelCauseFunc
	limits     *deadlines // the work limit's queue (start.go: bound); nil: a timer of limit's own
	limit      deadline   // the work limit, armed if limited
	limited    bool
	starting   deadline // the start limit (start.go), in claimer.starts
	slots      slots    // the admission slot held, or nil (start.go)
	obs        *Observer

	renewer    *renewer    // nil: timer schedules renewal
	prev, next *attempt    // the renewer's list, guarded by renewer.mu
	since      uint64      // the renewer's tick at the last renewal, likewise
	timer      *time.Timer // without a renewer

	ending deadlineCtx // the context of the store calls that end the attempt

	mu       sync.Mutex
	ended    bool
	lost     bool
	refused  *Claim    // the deferred claim's answer, once end found it refused
	renewing bool      // a renewal is under way: a slow store gets one at a time
	renewed  time.Time // when the lease was last known held: the claim, or a renewal
}

// outcome is what end is asked to do with the claim: record resp for
// retention, or release the key so a retry runs the work again. The zero
// outcome releases.
type outcome struct {
	record    bool
	resp      StoredResponse
	retention time.Duration
}

// endResult is what ending an attempt did, classified once for Middleware and
// RunOnce to answer from.
type endResult uint8

const (
	// recorded: the outcome is stored (and the work committed with it).
	recorded endResult = iota
	// released: the key is free for a retry (and the work rolled back).
	released
	// lost: the key was no longer this attempt's (its lease lapsed and
	// another run took it over, or another unit of work recorded it):
	// nothing was recorded here.
	lost
	// commitFailed: the work's Commit failed. The work was undone and the
	// key released, or the commit went through and only its answer was
	// lost; either way a retry gets it right.
	commitFailed
	// recordFailed: the work happened outside the store and storing its
	// outcome failed. The key stays held, so no retry runs the work again
	// before the lease lapses.
	recordFailed
	// releaseFailed: releasing (or rolling back) failed. A lease claim
	// stays held until its lease lapses.
	releaseFailed
	// refused: the store had deferred the claim (see WorkClaimer), and it
	// was refused once sent: nothing of the work committed, nothing is
	// held, and attempt.refused is the answer the claim got, to answer
	// the request with in place of the work's.
	refused
)

// end ends the claim with o, making the store calls in the table on
// attempt, each bounded by a lease (see bounded). Renewal stops, the
// admission slot is given back and the work's context is cancelled. It
// returns what happened and the store's error behind a failure, for the
// log. If renewal had found the lease lost, the call that ends the claim
// is still made (it is fenced, and fails), and the result is lost.
func (a *attempt) end(o outcome) (endResult, error) {
	wasLost := a.stopRenewal()
	if a.limited {
		a.limits.stop(&a.limit)
	}
	if a.cancel != nil {
		defer a.cancel(nil)
	}
	a.slots.give()
	ctx := a.bounded()
	defer a.ending.stop()
	switch {
	case a.inWork:
		var err error
		if o.record {
			err = a.commit(ctx, o)
		} else {
			err = a.rollback(ctx)
		}
		if c := (*ClaimRefused)(nil); errors.As(err, &c) {
			a.refused = &c.Claim
			return refused, nil
		}
		if o.record {
			return recording(err, commitFailed)
		}
		if err != nil {
			return releaseFailed, err
		}
		return released, nil
	case o.record && a.work == nil:
		err := a.complete(ctx, o)
		if errors.Is(err, ErrResponseTooLarge) {
			// The work ran, and its answer cannot be kept: record a small
			// answer that says so, so a retry is told, not run again or
			// held in flight for the retention.
			o.resp = notKept(o.resp.Status)
			err = a.complete(ctx, o)
		}
		return recording(err, recordFailed)
	case o.record && !wasLost:
		res, err := recording(a.commit(ctx, o), commitFailed)
		if res == commitFailed {
			// The work rolled back; free the key so a retry runs it again.
			// If the commit did land, the key is no longer held and
			// Release changes nothing.
			if rerr := a.release(ctx); rerr != nil && !errors.Is(rerr, ErrLeaseLost) && a.log != nil {
				a.log.Warn("idem: release after failed commit", "scope", a.key.Scope, "key", a.key.Key, "err", rerr)
			}
		}
		return res, err
	default: // release, or record after the lease was found lost
		var err error
		if a.work != nil {
			err = a.rollback(ctx)
		}
		rerr := a.release(ctx)
		switch {
		case wasLost || errors.Is(rerr, ErrLeaseLost):
			return lost, ErrLeaseLost
		case rerr != nil:
			return releaseFailed, rerr
		case err != nil:
			return releaseFailed, err
		}
		return released, nil
	}
}

// refusedAnswer is the answer to a's deferred claim, which end found
// refused (see WorkClaimer), and its verdict for fingerprint fp: never
// claimWait, since the work that would have waited has already run.
func (a *attempt) refusedAnswer(fp string) (*Claim, verdict) {
	c := answer{Claim: *a.refused}
	return a.refused, c.classify(fp, false)
}

// The store calls that end a claim, each reported to the observer.

func (a *attempt) complete(ctx context.Context, o outcome) error {
	began := a.obs.timing()
	err := a.store.Complete(ctx, a.key, a.token, o.resp, o.retention)
	a.obs.storeOp(ctx, a.store, OpComplete, began, err)
	return err
}

func (a *attempt) release(ctx context.Context) error {
	began := a.obs.timing()
	err := a.store.Release(ctx, a.key, a.token)
	a.obs.storeOp(ctx, a.store, OpRelease, began, err)
	return err
}

func (a *attempt) commit(ctx context.Context, o outcome) error {
	began := a.obs.timing()
	err := a.work.Commit(ctx, o.resp, o.retention)
	a.obs.storeOp(ctx, a.store, OpCommit, began, err)
	return err
}

func (a *attempt) rollback(ctx context.Context) error {
	began := a.obs.timing()
	err := a.work.Rollback(ctx)
	a.obs.storeOp(ctx, a.store, OpRollback, began, err)
	return err
}

// observeEnd tells the observer that the claim, which end has ended, was
// answered with res. Both users of attempt call it once, right after end.
func (a *attempt) observeEnd(res Outcome) {
	if a.obs != nil && a.obs.ClaimEnd != nil && a.detached.Context != nil {
		a.obs.ClaimEnd(a.detached.Context, ClaimEndInfo{Outcome: res})
	}
}

// endedAs is the Result of a claim whose work answered (or gave up) as
// the Result as says, and whose end did res: a lost lease or a failed
// commit overrides it.
func endedAs(as Outcome, res endResult) Outcome {
	switch res {
	case lost:
		return OutcomeLeaseLost
	case commitFailed:
		return OutcomeStoreUnavailable
	}
	return as
}

// recording classifies the error of a call that records an outcome
// (Complete or Commit): failed is the result of a failure other than a
// lost lease.
func recording(err error, failed endResult) (endResult, error) {
	switch {
	case err == nil:
		return recorded, nil
	case errors.Is(err, ErrLeaseLost):
		return lost, err
	default:
		return failed, err
	}
}

// bounded returns the context of the store calls that end the attempt:
// the request's values, no cancellation, and a deadline one lease away.
// Past it the lease has lapsed, renewal having stopped, and the key may be
// another worker's; a store that does not answer by then (a partition, a
// failover without a reset) must not hold the request and its connection.
// The context lives in the attempt, and costs an allocation only if the
// store asks for its Done channel.
// Callers defer a.ending.stop().
func (a *attempt) bounded() context.Context {
	if a.ending.at.IsZero() {
		a.ending.parent, a.ending.at = &a.detached, clockNow(a.origin).Add(a.lease)
	}
	return &a.ending
}
