// This file holds the start of the work under an acquired key, and its
// admission control: the work starts within a bound (Options.StartTimeout),
// with at most Options.MaxConcurrent running at once, or it is refused
// before it runs.

package server

import (
	"context"
	"errors"
	"time"
)

// ErrOverloaded is returned by [RunOnce] when the work under an acquired
// key could not start within RunOptions.StartTimeout, or within its
// RunOptions.WorkTimeout if that is the shorter, or before
// RunOptions.Shutdown closed (the store's unit of
// work did not begin in time: its connection pool is exhausted, say), or
// when a [WorkClaimer], which claims and begins the unit of work at once,
// could not claim the key in that time. The key is not held and the work
// did not run; deliver the message again later. The middleware answers
// the same condition 503 with [ProblemOverloaded].
var ErrOverloaded = errors.New("idem/server: overloaded: the work could not start in time")

// slots bounds the attempts running at once: one element in the channel
// per running attempt. A nil slots bounds nothing.
type slots chan struct{}

// newSlots returns slots for n attempts, or nil if n is not positive.
func newSlots(n int) slots {
	if n <= 0 {
		return nil
	}
	return make(slots, n)
}

// take waits for a slot until ctx ends, and then returns ctx's cause. A
// nil s has a slot for everyone.
func (s slots) take(ctx context.Context) error {
	if s == nil {
		return nil
	}
	select {
	case s <- struct{}{}:
		return nil
	default:
	}
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// give gives back a slot taken from s. A nil s does nothing.
func (s slots) give() {
	if s != nil {
		<-s
	}
}

// claimStarted tells the observer that k was acquired (taken over, or
// under a lease, as the flags say), and returns the context the work runs
// in: the one Observer.ClaimStart returns, or ctx.
func (cl *claimer) claimStarted(ctx context.Context, k Key, takenOver, leased bool) context.Context {
	o := cl.obs
	if o == nil || o.ClaimStart == nil {
		return ctx
	}
	info := ClaimStartInfo{TakenOver: takenOver, Leased: leased}
	if o.IncludeKey {
		info.Key = k.Key
	}
	if c := o.ClaimStart(ctx, info); c != nil {
		return c
	}
	return ctx
}

// start starts the work on k, acquired in ans, under a (zero before; its
// user embeds it to save allocations, and defers a.end right after start
// returns, whatever it returns). A lease claim's renewal begins at once,
// so the lease is kept while the work waits to start. Then, if there is
// anything to wait for, the work takes a slot (cl.slots) and begins the
// store's unit of work (Transactor.BeginWork), both within cl.startLimit;
// a claim by WorkClaimer.ClaimWork began its unit of work within the same
// limit (askWork), and its wait for a slot has what remains of it.
//
// start returns the context the work runs with: parent's values (and the
// unit of work's, and the observer's: see Observer.ClaimStart), cancelled
// when a ends, with cause ErrLeaseLost when renewal finds the key taken
// over, ErrWorkTimeout past the work limit or ErrShutdown when the service
// shuts down (see bound), but never by parent's cancellation: parent is
// a workBase, the request's values without it. If the work cannot
// start it returns why: ErrOverloaded past the start limit or the work
// limit or at shutdown, ErrLeaseLost if the lease was lost meanwhile, or BeginWork's
// error (the store's, or ctx's).
func (cl *claimer) start(a *attempt, parent context.Context, k Key, ans answer) (context.Context, error) {
	a.store, a.key, a.token, a.lease, a.renewEvery, a.log = cl.store, k, ans.Token, cl.lease, cl.renewEvery, cl.log
	a.obs = cl.obs
	if b, ok := parent.(*workBase); ok {
		a.origin = b.origin
	} else {
		a.origin = time.Now()
	}
	now := clockNow(a.origin)
	// The claim's context: the request's (or the unit of work's), and what
	// the observer adds, such as a span. The work runs in it; renewals and
	// the store calls that end the claim get its values, never its
	// cancellation.
	base := parent
	if ans.inWork {
		a.inWork, a.work, base = true, ans.work, ans.ctx
	}
	a.detached.Context = cl.claimStarted(base, k, ans.TakenOver, !ans.inWork)
	var ctx context.Context
	if ans.cancel != nil {
		// The work's context descends from the one ClaimWork was given
		// (Observer.ClaimStart returns one descending from its own), and
		// that one's cancel is the attempt's: no other is needed.
		ctx, a.cancel = a.detached.Context, ans.cancel
	} else {
		ctx, a.cancel = context.WithCancelCause(a.detached.Context)
	}
	if !ans.inWork {
		a.startRenewal(cl.renewer.on(now), now)
	}
	cl.bound(a, ctx, now)
	// A claim by ClaimWork began the unit of work, under the limit's
	// timer (askWork), which still runs: the wait for a slot shares it.
	late := ans.late
	if late == nil {
		if cl.slots == nil && (a.inWork || cl.tx == nil) {
			return ctx, nil // nothing to wait for
		}
		late = &a.starting
		cl.starts.arm(late, now, cl.startLimit, ErrOverloaded, a.cancel)
	}
	err := cl.slots.take(ctx)
	if err == nil {
		a.slots = cl.slots // given back by end
	}
	if err == nil && !a.inWork && cl.tx != nil {
		var wctx context.Context
		var work Work
		began := cl.obs.timing()
		wctx, work, err = cl.tx.BeginWork(ctx, k, a.token)
		cl.obs.storeOp(ctx, cl.store, OpBegin, began, err)
		if err == nil {
			ctx, a.work = wctx, work // a nil Work: the work runs outside the store
		}
	}
	if !cl.starts.stop(late) {
		// Too late, whether or not the work began: end rolls it back.
		return nil, ErrOverloaded
	}
	if err != nil {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, ErrLeaseLost):
			return nil, ErrLeaseLost
		case errors.Is(cause, ErrWorkTimeout):
			// The work limit (counted from the claim, like the start
			// limit) passed first, a WorkTimeout shorter than the
			// StartTimeout: the work did not start in time, and the store
			// did not fail.
			return nil, ErrOverloaded
		case errors.Is(cause, ErrShutdown):
			// The service shuts down before the work could start: as
			// late a start, nothing ran and the key is released, so a
			// retry (to another instance) runs it; the store did not fail.
			return nil, ErrOverloaded
		}
		return nil, err
	}
	return ctx, nil
}

// ErrWorkTimeout is the cause with which the context of work under a key
// is cancelled when the work has run for Options.WorkTimeout
// (RunOptions.WorkTimeout). Like any work that fails, it is released, and
// a retry runs it again.
var ErrWorkTimeout = errors.New("idem/server: the work ran past its WorkTimeout")

// ErrShutdown is the cause with which the context of work under a key is
// cancelled when Options.Shutdown (RunOptions.Shutdown) is closed.
var ErrShutdown = errors.New("idem/server: the service is shutting down")

// DefaultWorkTimeout is the default of Options.WorkTimeout and
// RunOptions.WorkTimeout.
const DefaultWorkTimeout = 2 * time.Minute

// bound bounds the work of a, whose context is ctx, on the server's side,
// since the client's going away no longer does: a's context is cancelled
// with cause ErrWorkTimeout cl.workLimit after now, and with ErrShutdown when
// cl.shutdown is closed. Both end with a (end stops the limit; the watch
// ends when ctx does). The limit is the middleware's queue (cl.limits),
// or a timer of a's own.
func (cl *claimer) bound(a *attempt, ctx context.Context, now time.Time) {
	if cl.workLimit > 0 {
		a.limits, a.limited = cl.limits, true
		cl.limits.arm(&a.limit, now, cl.workLimit, ErrWorkTimeout, a.cancel)
	}
	if cl.shutdown != nil {
		go func(done <-chan struct{}, cancel context.CancelCauseFunc) {
			select {
			case <-cl.shutdown:
				cancel(ErrShutdown)
			case <-done:
			}
		}(ctx.Done(), a.cancel)
	}
}
