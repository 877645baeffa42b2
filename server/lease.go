package server

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// attempt is one run of the work under a claimed key. It begins the
// store's unit of work when the store is a [Transactor], renews the lease
// every renewEvery while the work runs, and ends with exactly one of
// complete or release. Renewal is scheduled by a shared [renewer] (the
// middleware's) or, without one, by a timer of the attempt's own.
type attempt struct {
	store      Store
	work       Work // nil unless the store is a Transactor
	key        Key
	token      string
	lease      time.Duration
	renewEvery time.Duration
	log        *slog.Logger
	detached   detached // the parent's values, never cancelled
	cancel     context.CancelCauseFunc

	renewer    *renewer    // nil: timer schedules renewal
	prev, next *attempt    // the renewer's list, guarded by renewer.mu
	since      uint64      // the renewer's tick at the last renewal, likewise
	timer      *time.Timer // without a renewer

	ending deadlineCtx // the context of the store calls that end the attempt

	mu       sync.Mutex
	ended    bool
	lost     bool
	renewing bool      // a renewal is under way: a slow store gets one at a time
	renewed  time.Time // when the lease was last known held: the claim, or a renewal
}

// start starts the work on k, acquired under token. It returns the
// context the work runs with: parent's values, cancelled when parent is,
// when the attempt ends, or with cause ErrLeaseLost when renewal finds the
// key taken over. If the store's BeginWork fails, start releases the key
// and returns the error. a is zero before start; callers embed it to save
// allocations.
func (a *attempt) start(parent context.Context, store Store, k Key, token string, lease, renewEvery time.Duration, log *slog.Logger, rn *renewer) (context.Context, error) {
	a.store, a.key, a.token, a.lease, a.renewEvery, a.log, a.renewer = store, k, token, lease, renewEvery, log, rn
	a.detached.Context = parent
	ctx, cancel := context.WithCancelCause(parent)
	a.cancel = cancel
	if tx, ok := store.(Transactor); ok {
		wctx, work, err := tx.BeginWork(ctx, k, token)
		if err != nil {
			cancel(err)
			rerr := store.Release(a.bounded(), k, token) // bounded, as every call that ends the attempt
			a.ending.stop()
			if rerr != nil && log != nil {
				log.Warn("idem: release after failed BeginWork", "scope", k.Scope, "key", k.Key, "err", rerr)
			}
			return nil, err
		}
		ctx, a.work = wctx, work // a nil Work: the work runs outside the store
	}
	a.renewed = time.Now()
	if rn != nil {
		rn.add(a)
	} else {
		a.mu.Lock()
		a.timer = time.AfterFunc(renewEvery, a.renewAndReschedule)
		a.mu.Unlock()
	}
	return ctx, nil
}

// renew renews the lease once. A lost lease cancels the work; any other
// failure is logged, and the next renewal tries again while the lease may
// still be valid. It reports whether renewal should go on.
func (a *attempt) renew() bool {
	a.mu.Lock()
	over, busy := a.ended || a.lost, a.renewing
	a.renewing = a.renewing || !over
	a.mu.Unlock()
	if over {
		return false
	}
	if busy { // the previous renewal has not returned: skip this one
		return true
	}
	ctx, cancel := context.WithTimeout(&a.detached, a.renewEvery)
	err := a.store.Renew(ctx, a.key, a.token, a.lease)
	cancel()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.renewing = false
	if a.ended {
		return false
	}
	if errors.Is(err, ErrLeaseLost) {
		a.lost = true
		a.cancel(ErrLeaseLost)
		if a.log != nil {
			a.log.Warn("idem: lease lost while running", "scope", a.key.Scope, "key", a.key.Key)
		}
		return false
	}
	if err == nil {
		a.renewed = time.Now()
		return true
	}
	if a.log != nil {
		a.log.Warn("idem: lease renewal failed", "scope", a.key.Scope, "key", a.key.Key, "err", err)
	}
	if time.Since(a.renewed) >= a.lease {
		// No renewal has got through for a whole lease: the key may be
		// another worker's by now. Tell the work to stop; whether it is
		// recorded is still decided by the fenced completion.
		a.cancel(ErrLeaseLost)
	}
	return true
}

// renewAndReschedule runs on the attempt's own timer.
func (a *attempt) renewAndReschedule() {
	if a.renew() {
		a.mu.Lock()
		if !a.ended {
			a.timer.Reset(a.renewEvery)
		}
		a.mu.Unlock()
	}
}

// stop ends renewal and reports whether the lease was found lost.
func (a *attempt) stop() bool {
	if a.renewer != nil {
		a.renewer.remove(a)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ended = true
	if a.timer != nil {
		a.timer.Stop()
	}
	return a.lost
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
		a.ending.parent, a.ending.at = &a.detached, time.Now().Add(a.lease)
	}
	return &a.ending
}

// deadlineCtx is a context with values from parent and a deadline, and no
// cancellation otherwise. Its Done channel and timer are made on demand.
type deadlineCtx struct {
	parent context.Context
	at     time.Time
	mu     sync.Mutex
	done   chan struct{}
	timer  *time.Timer
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.at, true }
func (c *deadlineCtx) Value(k any) any             { return c.parent.Value(k) }

func (c *deadlineCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if d := time.Until(c.at); d <= 0 {
			close(c.done)
		} else {
			done := c.done
			c.timer = time.AfterFunc(d, func() { close(done) })
		}
	}
	return c.done
}

func (c *deadlineCtx) Err() error {
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	if done != nil { // consistent with Done: an error once it is closed
		select {
		case <-done:
			return context.DeadlineExceeded
		default:
			return nil
		}
	}
	if time.Now().Before(c.at) {
		return nil
	}
	return context.DeadlineExceeded
}

// stop releases the timer, if Done made one. The context stays usable.
func (c *deadlineCtx) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
	}
}

// complete records resp for retention, fenced by the lease token: through
// Work.Commit for a Transactor, Store.Complete otherwise. It returns
// ErrLeaseLost, storing nothing, if the key was taken over.
func (a *attempt) complete(resp Response, retention time.Duration) error {
	lost := a.stop()
	defer a.cancel(nil)
	ctx := a.bounded()
	defer a.ending.stop()
	switch {
	case lost:
		if a.work != nil {
			a.work.Rollback(ctx)
		}
		return ErrLeaseLost
	case a.work != nil:
		err := a.work.Commit(ctx, resp, retention)
		if err != nil && !errors.Is(err, ErrLeaseLost) {
			// The work rolled back; free the key so a retry runs it again.
			// If the commit did land, the key is no longer held and
			// Release changes nothing.
			if rerr := a.store.Release(ctx, a.key, a.token); rerr != nil && !errors.Is(rerr, ErrLeaseLost) && a.log != nil {
				a.log.Warn("idem: release after failed commit", "scope", a.key.Scope, "key", a.key.Key, "err", rerr)
			}
		}
		return err
	default:
		return a.store.Complete(ctx, a.key, a.token, resp, retention)
	}
}

// release discards the work (Work.Rollback for a Transactor) and releases
// the key so a retry runs again. It returns ErrLeaseLost if the key had
// been taken over.
func (a *attempt) release() error {
	lost := a.stop()
	defer a.cancel(nil)
	ctx := a.bounded()
	defer a.ending.stop()
	var err error
	if a.work != nil {
		err = a.work.Rollback(ctx)
	}
	if lost {
		return ErrLeaseLost
	}
	if rerr := a.store.Release(ctx, a.key, a.token); rerr != nil {
		return rerr
	}
	return err
}

// detached carries a context's values but not its cancellation or
// deadline, like context.WithoutCancel, stored inside attempt to save an
// allocation per request. The outcome of work that ran must be recorded
// even if the client has gone away.
type detached struct{ context.Context }

func (*detached) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*detached) Done() <-chan struct{}       { return nil }
func (*detached) Err() error                  { return nil }
