// This file holds the contexts of the store calls that end an attempt:
// detached (a request's values without its cancellation) and deadlineCtx
// (values and a deadline, nothing else).

package server

import (
	"context"
	"sync"
	"time"
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
