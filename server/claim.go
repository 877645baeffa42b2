// This file holds the claiming of a key, shared by Middleware and RunOnce:
// asking the store (Store.Claim, or WorkClaimer.ClaimWork), the one
// classification of its answer, and waiting for a key in flight.

package server

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"
)

// verdict is what a store's answer to a claim means for the request that
// made it.
type verdict uint8

const (
	claimAcquired verdict = iota // the request holds the key: run the work
	claimReplay                  // completed with this fingerprint: answer from the record
	claimInFlight                // another run holds the key: 409, or ErrInFlight
	claimReused                  // the key belongs to another request: 422, or ErrKeyReused
	claimWait                    // in flight, and the caller waits for it (Options.Wait)
)

// answer is a store's answer to one claim. For a claim acquired through
// WorkClaimer.ClaimWork, ctx and work are the unit of work that holds it,
// late is the start limit's timer, still running (start stops it), and
// cancel cancels the context ClaimWork was given, from which ctx descends
// (with cause ErrOverloaded when late fires).
type answer struct {
	Claim
	inWork bool // answered by ClaimWork: no token, no lease
	ctx    context.Context
	work   Work
	late   *deadline // in claimer.starts
	cancel context.CancelCauseFunc
}

// classify says what a answers a claim with fingerprint fp. A record with
// another fingerprint is key reuse, except that a running record with an
// empty one means the store cannot tell who holds the key (see
// WorkClaimer): that is in flight. canWait turns in flight with this
// fingerprint (or an unknown one) into claimWait.
func (a *answer) classify(fp string, canWait bool) verdict {
	r := &a.Record
	switch {
	case a.Acquired:
		return claimAcquired
	case r.Fingerprint != fp && (r.Completed || r.Fingerprint != ""):
		return claimReused
	case r.Completed:
		return claimReplay
	case canWait:
		return claimWait
	default:
		return claimInFlight
	}
}

// outcome is the Outcome a request is reported with when its claim, not
// acquired, is answered as v says.
func (v verdict) outcome() Outcome {
	switch v {
	case claimReused:
		return OutcomeKeyReused
	case claimReplay:
		return OutcomeReplayed
	}
	return OutcomeInFlight
}

// claimer claims keys in one store and starts the work under them, for
// one Middleware or one RunOnce call. It is safe for concurrent use.
type claimer struct {
	store      Store
	works      WorkClaimer // the store, if it claims within its unit of work
	tx         Transactor  // the store, if it begins units of work
	lease      time.Duration
	renewEvery time.Duration
	wait       time.Duration   // how long a repeat waits for a key in flight
	startLimit time.Duration   // how long work may take to start (admission.go)
	workLimit  time.Duration   // how long work may run (start.go: bound)
	shutdown   <-chan struct{} // closed when the service shuts down; nil: never
	slots      slots           // nil: no bound on running work
	starts     *deadlines      // the start limit's queue; nil: a timer per start
	limits     *deadlines      // the work limit's queue; nil: a timer per attempt
	log        *slog.Logger
	renewer    *renewer  // nil: each attempt renews on a timer of its own
	local      *flights  // nil: no local runs to wake waiters
	obs        *Observer // nil: no one observes
}

// newClaimer returns a claimer over store; the caller sets the rest.
func newClaimer(store Store) claimer {
	cl := claimer{store: store}
	cl.works, _ = store.(WorkClaimer)
	cl.tx, _ = store.(Transactor)
	return cl
}

// errNoWork is returned for a ClaimWork that acquired a key without a
// Work to end the claim with.
var errNoWork = errors.New("idem/server: ClaimWork acquired a key without a Work")

// ask asks the store for k once: through ClaimWork when the store offers
// it (see askWork), through Claim otherwise.
func (cl *claimer) ask(ctx context.Context, k Key, fp string) (answer, error) {
	if cl.works != nil {
		if a, asked, err := cl.askWork(ctx, k, fp); asked {
			return a, err
		}
	}
	began := cl.obs.timing()
	c, err := cl.store.Claim(cl.askContext(ctx), k, fp, cl.lease)
	if b, ok := ctx.(*workBase); ok {
		b.ask.stop()
	}
	cl.observeClaim(ctx, k, began, err, err == nil && c.Acquired, nil, c.Token)
	return answer{Claim: c}, err
}

// askContext returns the context of one Store.Claim made from ctx. From a
// workBase (a request's claim) it is the request's values, not cancelled
// when the client goes away, and bounded by one lease: a claim that
// landed must not be abandoned by a client that left, or its key would
// answer "in flight" until its lease lapsed, with nothing running.
func (cl *claimer) askContext(ctx context.Context) context.Context {
	b, ok := ctx.(*workBase)
	if !ok {
		return ctx
	}
	b.ask = deadlineCtx{parent: b, at: clockNow(b.origin).Add(cl.lease)}
	return &b.ask
}

// askWork asks the store for k through ClaimWork, within cl.startLimit.
// ClaimWork claims k and begins the unit of work at once, and may wait
// for a pooled connection to do so: for a first request it is the start
// of the work, which the limit bounds, as it bounds BeginWork (start.go).
// The limit's timer cancels the context ClaimWork is given, with cause
// ErrOverloaded, only while nothing is acquired: an acquired answer takes
// the timer, still running, to start, so that the claim and the wait for
// a slot share one limit, and start stops it (or finds it fired, and the
// attempt's end rolls the work back). The returned context descends from
// the one ClaimWork is given, so that one is cancelled only by the timer
// or by the attempt's end (answer.cancel), never when ClaimWork returns.
//
// A ClaimWork that fails once the limit has passed, ctx still live,
// returns ErrOverloaded: nothing is held. An answer that acquired nothing
// (a replay, a key in flight) is answered as it is, in time or not. It
// reports asked false, the store having claimed nothing, if the store
// does not claim within its unit of work (errors.ErrUnsupported).
func (cl *claimer) askWork(ctx context.Context, k Key, fp string) (a answer, asked bool, err error) {
	cctx, cancel := context.WithCancelCause(ctx)
	var (
		late *deadline
		now  time.Time
	)
	if b, ok := ctx.(*workBase); ok {
		late, now = &b.starting, clockNow(b.origin) // stopped before the next ask arms it again
	} else {
		late, now = new(deadline), time.Now()
	}
	cl.starts.arm(late, now, cl.startLimit, ErrOverloaded, cancel)
	began := cl.obs.timing()
	c, wctx, work, err := cl.works.ClaimWork(cctx, k, fp)
	if errors.Is(err, errors.ErrUnsupported) {
		cl.starts.stop(late)
		cancel(nil)
		return answer{}, false, nil
	}
	cl.observeClaim(ctx, k, began, err, c.Acquired, work, "")
	if err == nil && c.Acquired {
		if work == nil || wctx == nil {
			cl.starts.stop(late)
			cancel(nil)
			if work != nil {
				work.Rollback(ctx)
			}
			return answer{}, true, errNoWork
		}
		return answer{Claim: c, inWork: true, ctx: wctx, work: work, late: late, cancel: cancel}, true, nil
	}
	fired := !cl.starts.stop(late)
	cancel(nil)
	if err != nil && fired && ctx.Err() == nil {
		err = ErrOverloaded
	}
	return answer{Claim: c, inWork: true}, true, err
}

// observeClaim reports a claim to the observer. Nothing ends an acquired
// claim until the caller has the answer, so if the observer panics the
// claim is ended here before the panic goes on: a unit of work is rolled
// back (its lock would otherwise be held for as long as the process
// runs), a leased key released (it would otherwise wait out its lease).
func (cl *claimer) observeClaim(ctx context.Context, k Key, began time.Time, err error, acquired bool, work Work, token string) {
	if cl.obs == nil {
		return
	}
	if acquired {
		defer func() {
			if p := recover(); p != nil {
				ctx := context.WithoutCancel(ctx)
				if work != nil {
					work.Rollback(ctx)
				} else {
					cl.store.Release(ctx, k, token)
				}
				panic(p)
			}
		}()
	}
	cl.obs.storeOp(ctx, cl.store, OpClaim, began, err)
}

// claim claims k for a request with fingerprint fp and classifies the
// answer. A key in flight is waited for up to cl.wait (see await); the
// verdict is never claimWait. An error is the store's, or ctx's.
func (cl *claimer) claim(ctx context.Context, k Key, fp string) (answer, verdict, error) {
	a, err := cl.ask(ctx, k, fp)
	if err != nil {
		return a, 0, err
	}
	v := a.classify(fp, cl.wait > 0)
	if v == claimWait {
		return cl.await(ctx, k, fp)
	}
	return a, v, nil
}

// Polling bounds for a repeat waiting on a request that runs in another
// process: the first check after about pollMin, doubling to pollMax, each
// delay jittered down to half so waiters do not poll in step.
const (
	pollMin = 5 * time.Millisecond
	pollMax = 200 * time.Millisecond
)

// await waits up to cl.wait for the running record of k to end, then
// claims k again, until an answer is no longer worth waiting for: it
// acquired k (the run it waited for was released), or found k completed
// or another fingerprint's; or, once the wait is over, whatever the last
// claim found, which may still be in flight. It wakes on the local flight
// of k when there is one, and replays that flight's recorded outcome
// without asking the store; otherwise it polls the store with capped,
// jittered backoff. It returns the client's error if the client behind
// ctx (see clientOf) goes away first.
func (cl *claimer) await(ctx context.Context, k Key, fp string) (answer, verdict, error) {
	deadline := time.NewTimer(cl.wait)
	defer deadline.Stop()
	poll := time.NewTimer(pollMax)
	poll.Stop()
	defer poll.Stop()
	backoff := pollMin
	client := clientOf(ctx) // a repeat stops waiting when its client leaves
	for {
		over := false
		fl := cl.local.lookup(k)
		var wake <-chan struct{}
		var tick <-chan time.Time
		if fl != nil {
			wake = fl.done
		} else {
			d := backoff/2 + rand.N(backoff/2+1)
			backoff = min(2*backoff, pollMax)
			poll.Reset(d)
			tick = poll.C
		}
		select {
		case <-client.Done():
			return answer{}, 0, client.Err()
		case <-deadline.C:
			over = true
		case <-wake:
			// The run found may not be the one this request saw running:
			// that one may have released k, and a request with another
			// body claimed it since. Only a run with fingerprint fp
			// recorded this request's outcome; otherwise the claim below
			// tells (another fingerprint is answered 422).
			if fl.outcome != nil && fl.fp == fp {
				return answer{Claim: Claim{Record: Record{Fingerprint: fp, Completed: true, Response: *fl.outcome}}}, claimReplay, nil
			}
		case <-tick:
		}
		a, err := cl.ask(ctx, k, fp)
		if err != nil {
			return a, 0, err
		}
		if v := a.classify(fp, !over); v != claimWait {
			return a, v, nil
		}
	}
}
