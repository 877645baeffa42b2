// This file holds the contexts of a keyed request: workBase, which the
// claim and the work start from (the request's values without its
// cancellation, and the key it holds), and those of the store calls that
// end an attempt: detached (values without cancellation) and deadlineCtx
// (values and a deadline, nothing else).

package server

import (
	"context"
	"sync"
	"time"

	"github.com/idemhq/idem/internal/held"
)

// detached carries a context's values but not its cancellation or
// deadline, like context.WithoutCancel, stored inside attempt to save an
// allocation per request. The outcome of work that ran must be recorded
// even if the client has gone away.
type detached struct{ context.Context }

func (*detached) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*detached) Done() <-chan struct{}       { return nil }
func (*detached) Err() error                  { return nil }

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
	if time.Until(c.at) > 0 { // one clock reading: c.at is monotonic (see clockNow)
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

// workBase is the context a keyed request's claim and work start from:
// the request's values without its cancellation or deadline, so that the
// client going away (a timeout, a proxy, a dropped connection) cancels
// neither the claim nor the work under it, and two values of its own, the
// key ([KeyFrom]) and the client's context ([ClientContext]), answered
// without an allocation. ask is the context of one Store.Claim (claim.go).
// origin is when the request began: the request's later readings of the
// clock count from it (clockNow).
type workBase struct {
	origin   time.Time
	client   context.Context
	key      held.Key
	ask      deadlineCtx
	starting deadline // the start limit of a ClaimWork (claim.go: askWork)
}

func (*workBase) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*workBase) Done() <-chan struct{}       { return nil }
func (*workBase) Err() error                  { return nil }

func (b *workBase) Value(k any) any {
	switch k {
	case held.CtxKey:
		return &b.key
	case clientCtxKey{}:
		return b.client
	}
	return b.client.Value(k)
}

// newWorkBase returns the context the claim of k and its work start
// from, for a request (or RunOnce call) whose own context is client.
func newWorkBase(client context.Context, k Key) *workBase {
	return &workBase{origin: time.Now(), client: client, key: held.Key{Scope: k.Scope, Key: k.Key}}
}

// clockNow returns the time now, as origin, a time.Now taken earlier,
// plus the monotonic time since: one reading of the clock where time.Now
// makes two (the wall clock's and the monotonic one). Deadlines and
// durations compare by the monotonic reading, which it carries, so they
// are as time.Now's; only the wall reading ignores a step of the wall
// clock since origin. Without a monotonic reading in origin (under
// testing/synctest) it is time.Now.
func clockNow(origin time.Time) time.Time {
	return origin.Add(time.Since(origin))
}

// clientOf returns the client's context behind ctx: the request's own, if
// ctx is a workBase, or ctx.
func clientOf(ctx context.Context) context.Context {
	if b, ok := ctx.(*workBase); ok {
		return b.client
	}
	return ctx
}

type clientCtxKey struct{}

// KeyFrom returns the key held by the work that runs with ctx: the
// handler's request context under [Middleware], or the context [RunOnce]
// gives its work. It reports false for any other context. The key is what
// a handler derives the keys of its own calls from (the idem client does
// so itself: see idem.Step), so that a provider it calls sees the same
// key on every run of the same request, and replays instead of acting
// twice. Never send the key itself downstream: derive one.
func KeyFrom(ctx context.Context) (Key, bool) {
	k, ok := held.From(ctx)
	return Key{Scope: k.Scope, Key: k.Key}, ok
}

// ClientContext returns the context of the request whose work runs with
// ctx, as the client's connection gave it: cancelled when the client goes
// away, where the work's own context is not (see [Middleware]). A handler
// that would rather stop when nobody waits for its answer selects on its
// Done; its key is then released if it answers nothing (see Middleware).
// For a context that is no work's, ClientContext returns ctx.
func ClientContext(ctx context.Context) context.Context {
	if c, ok := ctx.Value(clientCtxKey{}).(context.Context); ok {
		return c
	}
	return ctx
}
