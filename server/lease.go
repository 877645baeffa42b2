// This file holds the renewal of an attempt's lease: joining renewal,
// renewing once, noticing the lease lost, and stopping.

package server

import (
	"context"
	"errors"
	"time"
)

// startRenewal starts renewing a's lease, held since now: by rn when it is
// not nil, by a timer of a's own otherwise.
func (a *attempt) startRenewal(rn *renewer, now time.Time) {
	a.renewed = now
	a.renewer = rn
	if rn != nil {
		rn.add(a)
		return
	}
	a.mu.Lock()
	a.timer = time.AfterFunc(a.renewEvery, a.renewAndReschedule)
	a.mu.Unlock()
}

// renew renews the lease once, and reports it to the observer. A lost
// lease cancels the work; any other failure is logged, and the next
// renewal tries again while the lease may still be valid. It reports
// whether renewal should go on.
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
	began := a.obs.timing()
	err := a.store.Renew(ctx, a.key, a.token, a.lease)
	a.obs.storeOp(ctx, a.store, OpRenew, began, err)
	cancel()
	a.obs.renewal(&a.detached, err)
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

// stopRenewal marks a ended, stops its renewal and reports whether the
// lease was found lost. It panics if a has ended before: an attempt ends
// once.
func (a *attempt) stopRenewal() bool {
	if a.renewer != nil {
		a.renewer.remove(a)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended {
		panic("idem/server: an attempt ended twice")
	}
	a.ended = true
	if a.timer != nil {
		a.timer.Stop()
	}
	return a.lost
}
