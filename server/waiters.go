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
// repeats waiting for it wake as soon as it finishes, and take its recorded
// outcome from memory (or, if it was released, claim the key again) instead
// of polling the store. It is safe for concurrent use.
type flights struct {
	mu sync.Mutex
	m  map[Key]*flight
}

// flight is one local run of a key, claimed with fingerprint fp; done is
// closed when its outcome is recorded or released. outcome, written before
// done is closed, is the recorded outcome, or nil if none was recorded.
type flight struct {
	fp      string
	done    chan struct{}
	outcome *Response
	over    bool // guarded by flights.mu
}

func newFlights() *flights { return &flights{m: make(map[Key]*flight)} }

// start registers a run of k claimed with fingerprint fp, replacing any
// earlier one (whose lease was taken over, or which released k and ended;
// its waiters still wake when it ends).
func (f *flights) start(k Key, fp string) *flight {
	fl := &flight{fp: fp, done: make(chan struct{})}
	f.mu.Lock()
	f.m[k] = fl
	f.mu.Unlock()
	return fl
}

// finish unregisters fl and wakes its waiters, handing them outcome if it
// was recorded (nil otherwise). Calling it again does nothing.
func (f *flights) finish(k Key, fl *flight, outcome *Response) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl.over {
		return
	}
	fl.over = true
	fl.outcome = outcome
	if f.m[k] == fl {
		delete(f.m, k)
	}
	close(fl.done)
}

// lookup returns the local run of k, or nil if k is not running in this
// process. A nil f has no runs.
func (f *flights) lookup(k Key) *flight {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[k]
}

// await waits up to wait for the running record of k, claimed with
// fingerprint fp, to end, then claims k again. It returns the first claim
// that acquired k (its outcome was released), found it completed or found
// another fingerprint, or, once wait is over, the last claim, which may
// still be running. It wakes on local's flight for k when there is one,
// and replays that flight's recorded outcome without reading the store;
// otherwise it polls the store with capped, jittered backoff. It returns
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
		fl := local.lookup(k)
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
		case <-ctx.Done():
			return Claim{}, ctx.Err()
		case <-deadline.C:
			over = true
		case <-wake:
			// The run found may not be the one this request saw running:
			// that one may have released k, and a request with another
			// body claimed it since. Only a run with fingerprint fp
			// recorded this request's outcome; otherwise the claim below
			// tells (another fingerprint is answered 422).
			if fl.outcome != nil && fl.fp == fp {
				return Claim{Record: Record{Fingerprint: fp, Completed: true, Response: *fl.outcome}}, nil
			}
		case <-tick:
		}
		c, err := store.Claim(ctx, k, fp, lease)
		if err != nil || over || c.Acquired || c.Record.Completed || c.Record.Fingerprint != fp {
			return c, err
		}
	}
}
