// This file holds flights, the registry of keys whose first request runs
// in this process, which repeats in wait mode wake on (see claimer.await).

package server

import "sync"

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
	outcome *StoredResponse
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
func (f *flights) finish(k Key, fl *flight, outcome *StoredResponse) {
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
