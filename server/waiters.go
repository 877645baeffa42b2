package server

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Polling bounds for a repeat waiting on a request that runs in another
// process: the first check after about pollMin, doubling to pollMax, each
// delay jittered down to half so waiters do not poll in step.
const (
	pollMin = 5 * time.Millisecond
	pollMax = 200 * time.Millisecond
)

// flights tracks the keys whose first request runs in this process, so
// repeats waiting for it wake as soon as it finishes and read the store
// once, instead of polling it. It is safe for concurrent use.
type flights struct {
	mu sync.Mutex
	m  map[Key]*flight
}

// flight is one local run of a key; done is closed when its outcome is
// recorded or released.
type flight struct {
	done chan struct{}
	over bool // guarded by flights.mu
}

func newFlights() *flights { return &flights{m: make(map[Key]*flight)} }

// start registers a run of k, replacing any earlier one (whose lease was
// taken over; its waiters still wake when it ends).
func (f *flights) start(k Key) *flight {
	fl := &flight{done: make(chan struct{})}
	f.mu.Lock()
	f.m[k] = fl
	f.mu.Unlock()
	return fl
}

// finish unregisters fl and wakes its waiters. Calling it again does
// nothing.
func (f *flights) finish(k Key, fl *flight) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl.over {
		return
	}
	fl.over = true
	if f.m[k] == fl {
		delete(f.m, k)
	}
	close(fl.done)
}

// lookup returns the channel closed when the local run of k ends, or nil
// if k is not running in this process. A nil f has no runs.
func (f *flights) lookup(k Key) <-chan struct{} {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl := f.m[k]; fl != nil {
		return fl.done
	}
	return nil
}

// await waits up to wait for the running record of k, claimed with
// fingerprint fp, to end, then claims k again. It returns the first claim
// that acquired k (its outcome was released), found it completed or found
// another fingerprint, or, once wait is over, the last claim, which may
// still be running. It wakes on local's flight for k when there is one,
// and otherwise polls the store with capped, jittered backoff. It returns
// ctx's error if ctx ends first.
func await(ctx context.Context, store Store, k Key, fp string, lease, wait time.Duration, local *flights) (Claim, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	poll := time.NewTimer(pollMax)
	poll.Stop()
	defer poll.Stop()
	backoff := pollMin
	for {
		over := false
		wake := local.lookup(k)
		var tick <-chan time.Time
		if wake == nil {
			d := backoff/2 + rand.N(backoff/2+1)
			backoff = min(2*backoff, pollMax)
			poll.Reset(d)
			tick = poll.C
		}
		select {
		case <-ctx.Done():
			return Claim{}, ctx.Err()
		case <-deadline.C:
			over = true
		case <-wake:
		case <-tick:
		}
		c, err := store.Claim(ctx, k, fp, lease)
		if err != nil || over || c.Acquired || c.Record.Completed || c.Record.Fingerprint != fp {
			return c, err
		}
	}
}
