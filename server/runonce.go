// This file holds RunOnce, the claim-run-record cycle of the middleware
// for work that does not come over HTTP, and its options.

package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/idemhq/idem/internal/key"
)

var (
	// ErrInFlight is returned by [RunOnce] when another run of the key is
	// still in progress (here or in another process) after RunOptions.Wait.
	// Deliver the message again later.
	ErrInFlight = errors.New("idem/server: key is in flight")
	// ErrKeyReused is returned by [RunOnce] when the key was first used
	// with a different fingerprint. Retrying will not help. It is the same
	// value as the idem client's ErrKeyReused.
	ErrKeyReused = key.ErrReused
	// ErrResultNotKept is returned by [RunOnce], with replayed true, for a
	// key whose work ran and succeeded but whose result was too large for
	// the store to keep ([ErrResponseTooLarge]). The work does not run
	// again; look its result up another way.
	ErrResultNotKept = errors.New("idem/server: the work ran, and its result was too large to keep")
)

// RunOptions configures [RunOnce]. The zero value means the defaults.
type RunOptions struct {
	// Lease is how long a run holds its key before a run with the same
	// fingerprint may take it over; renewed every Lease/3 while the work
	// runs. Default 30 s.
	Lease time.Duration
	// Retention is how long the result is kept for replay. Default 24 h.
	Retention time.Duration
	// Wait is how long RunOnce waits, polling the store, for a run of the
	// same key in progress elsewhere. Default 0: ErrInFlight at once.
	Wait time.Duration
	// StartTimeout bounds how long the work, once its key is acquired,
	// may wait for the store's unit of work to begin
	// ([Transactor.BeginWork], which may wait for a pooled connection);
	// the lease is renewed meanwhile. With a [WorkClaimer], which claims
	// the key and begins the unit of work at once, it bounds that claim.
	// Past it the key is released (or was never held), the work does not
	// run, and RunOnce returns [ErrOverloaded]. Default Lease/3.
	StartTimeout time.Duration
	// WorkTimeout bounds how long work may run once it holds its key; its
	// context is then cancelled with cause [ErrWorkTimeout]. ctx's
	// cancellation does not cancel the work (see RunOnce). Default 2
	// minutes ([DefaultWorkTimeout]).
	WorkTimeout time.Duration
	// Shutdown, if set, is closed when the service shuts down: running
	// work's context is then cancelled with cause [ErrShutdown]. Default
	// nil.
	Shutdown <-chan struct{}
	// Logger receives failures to renew or release. Default nil: silent.
	Logger *slog.Logger
	// Observer receives an event for the call's result (as a request with
	// no method or route), its claim, lease renewals and store calls.
	// Default nil: nothing is reported.
	Observer *Observer
}

// RunOnce runs work at most once per key k (the claim-run-record cycle of
// [Middleware], for queue consumers and webhook receivers keyed by a
// message or event ID) and returns its result.
//
// The first call for k with fingerprint fp claims k, runs work, records
// its result for RunOptions.Retention and returns it with replayed false.
// A later call with the same fingerprint returns the recorded result with
// replayed true without running work. Results are copied in and out of
// the store: the caller may change the slices it gets. If work returns an error (or
// panics), the key is released so the next delivery runs work again, and
// RunOnce returns that error (or re-panics).
//
// Other errors: [ErrInvalidScope] if k's scope is not valid UTF-8 text
// (see [ValidScope]); [ErrKeyReused] if k was first used with another
// fingerprint; [ErrInFlight] if a run of k is still in progress after
// RunOptions.Wait; [ErrOverloaded] if the work could not start within
// RunOptions.StartTimeout (it did not run); an error wrapping
// [ErrLeaseLost] (and work's error, if any) if the lease lapsed and
// another run took k over while work ran (the result was not recorded;
// the new owner's will be); store failures, wrapped. If work succeeded but
// recording its result failed for another reason, RunOnce returns the
// result together with the error: the work has happened, and k stays
// claimed until its lease lapses. (When the work ran in the store's
// transaction, a failed commit undid it, or went through after all and a
// redelivery replays it; RunOnce returns no result.)
//
// work's context is ctx's values, with the key it holds ([KeyFrom]), but
// not ctx's cancellation: once k is held, the work runs to its end and
// its result is recorded even if the caller gives up, so a redelivery
// replays it instead of running it again. It is cancelled with cause
// ErrLeaseLost when the lease is found lost, [ErrWorkTimeout] past
// RunOptions.WorkTimeout and [ErrShutdown] when RunOptions.Shutdown is
// closed. ctx's cancellation still ends a wait for a key in flight. If store implements
// [WorkClaimer], k is claimed with ClaimWork, work runs with the context
// it returns, and its result is committed with it; otherwise, if store
// implements [Transactor], work runs with the context from BeginWork and
// its result is committed with it. RunOnce is safe for concurrent use; a
// nil ctx panics.
func RunOnce(ctx context.Context, store Store, k Key, fp string, work func(context.Context) ([]byte, error), opts RunOptions) (result []byte, replayed bool, err error) {
	if !ValidScope(k.Scope) {
		return nil, false, ErrInvalidScope
	}
	cl := newClaimer(store)
	cl.lease = orDefault(opts.Lease, DefaultLease)
	cl.renewEvery = max(cl.lease/3, time.Millisecond)
	cl.startLimit = orDefault(opts.StartTimeout, cl.renewEvery)
	cl.wait, cl.log, cl.obs = opts.Wait, opts.Logger, opts.Observer
	cl.workLimit, cl.shutdown = orDefault(opts.WorkTimeout, DefaultWorkTimeout), opts.Shutdown
	retention := orDefault(opts.Retention, DefaultRetention)

	base := newWorkBase(ctx, k)
	ans, v, err := cl.claim(base, k, fp)
	switch {
	case errors.Is(err, ErrOverloaded): // ClaimWork did not claim and begin the work in time
		cl.obs.request(ctx, "", "", OutcomeOverloaded)
		return nil, false, ErrOverloaded
	case err != nil:
		cl.obs.request(ctx, "", "", storeResult(err))
		return nil, false, fmt.Errorf("idem/server: claim: %w", err)
	case v != claimAcquired:
		return notAcquired(ctx, &cl, &ans.Claim, v, nil)
	}

	// From here the claim is held: the deferred call below is the only
	// way out, and ends it once, panic or not.
	var (
		a        attempt
		o        outcome // release, unless work succeeds
		startErr error
		workErr  error
		returned bool // false while work panics
	)
	defer func() {
		res, endErr := a.end(o)
		if res == refused && returned {
			// The store's deferred claim was refused: work ran without
			// the key, and nothing of it committed. RunOnce answers as
			// its claim.
			c, v := a.refusedAnswer(fp)
			result, replayed, err = notAcquired(ctx, &cl, c, v, &a)
			return
		}
		how := answered
		switch {
		case startErr != nil:
			how = notStarted
		case !returned:
			how = abandoned
		}
		end := endOf(how, startErr, o.record, res)
		a.observeEnd(end.outcome)
		cl.obs.request(ctx, "", "", end.outcome)
		end.logNote(opts.Logger, k, endErr)
		if returned {
			result, err = end.result(result, startErr, workErr, endErr)
		}
	}()
	wctx, startErr := cl.start(&a, base, k, ans)
	if startErr != nil {
		returned = true
		return nil, false, nil // answered by the deferred call
	}
	result, workErr = work(wctx)
	returned = true
	if workErr == nil {
		// The store may keep the slice it is given (memstore does), and the
		// caller owns result: record a copy.
		o = outcome{record: true, resp: StoredResponse{Status: http.StatusOK, Body: bytes.Clone(result)}, retention: retention}
	}
	return result, false, nil // answered by the deferred call
}

// notAcquired is RunOnce's answer to a claim c that did not acquire its
// key, classified as v: the recorded result, ErrKeyReused, or
// ErrInFlight. If c is the answer to a deferred claim that a acquired and
// the store then refused (see WorkClaimer), a's end is reported with the
// same outcome.
func notAcquired(ctx context.Context, cl *claimer, c *Claim, v verdict, a *attempt) ([]byte, bool, error) {
	res := v.outcome()
	if a != nil {
		a.observeEnd(res)
	}
	cl.obs.request(ctx, "", "", res)
	switch {
	case v == claimReused:
		return nil, false, ErrKeyReused
	case v != claimReplay:
		return nil, false, ErrInFlight
	case c.Record.Response.Header.Get("Content-Type") == ProblemContentType:
		// RunOnce records results with no header: this is the answer
		// recorded in place of one too large to keep.
		return nil, true, ErrResultNotKept
	}
	return bytes.Clone(c.Record.Response.Body), true, nil
}

// result is RunOnce's answer, rendered from the table (endOf): the work
// did not start (startErr), failed (workErr), or returned result; endErr
// is the store's error behind a failed end.
func (e ending) result(result []byte, startErr, workErr, endErr error) ([]byte, error) {
	switch e.reply {
	case replyOverloaded, replyLeaseLost:
		switch {
		case startErr != nil:
			return nil, startErr
		case workErr != nil:
			return nil, fmt.Errorf("%w (work: %w)", ErrLeaseLost, workErr)
		}
		return nil, ErrLeaseLost
	case replyStoreFailed:
		return nil, fmt.Errorf("idem/server: begin work: %w", startErr)
	case replyCommitFailed:
		return nil, fmt.Errorf("idem/server: commit: %w", endErr)
	case replyUnrecorded:
		return result, fmt.Errorf("idem/server: record result: %w", endErr)
	}
	if workErr != nil {
		return nil, workErr
	}
	return result, nil
}

// orDefault returns d, or def if d is not positive.
func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
