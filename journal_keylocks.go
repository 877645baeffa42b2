// This file holds keyLocks, a journal's locks on its keys: calls with one
// key run one at a time, whichever Client of the journal makes them, and
// Journal.Abandon comes between a call's attempts, never during one.

package idem

import (
	"context"
	"sync"
)

// keyLocks are the locks on a journal's keys. Each key has two:
//
//   - the key itself, owned by one call (Do, DoNamed, a resumed operation)
//     from its first look at the journal to its last write, waits between
//     attempts included; a second call with the key waits for it, then
//     finds the first one's outcome in the journal;
//   - its gate, held by the owner while it reads or writes the key's
//     record and while an attempt is in flight, and let go while it waits
//     between attempts. Journal.Abandon takes only the gate (or the key,
//     when no call owns it), so it waits for an attempt to end, never for
//     a backoff; the owner takes the gate back before its next attempt and
//     reads the record again (see call.stillPending).
//
// The owner holds the gate when it lets the key go, so while Abandon holds
// the gate of the key's lock, that lock is the key's.
type keyLocks struct {
	mu      sync.Mutex
	gates   map[string]keyLock       // the lock of each key a call owns
	waiters map[string]chan struct{} // closed when the key is let go; made by its first waiter
}

// keyLock is one owned key's gate: held when it holds a value. A channel,
// not a mutex, so that a goroutine waiting for it is durably blocked in a
// testing/synctest bubble.
type keyLock chan struct{}

func (k keyLock) close() { k <- struct{}{} }
func (k keyLock) open()  { <-k }

// lock waits until no call owns key, then owns it, with its gate held.
// It gives up with ctx's error when ctx ends first.
func (l *keyLocks) lock(ctx context.Context, key string) (keyLock, error) {
	for {
		l.mu.Lock()
		k := l.gates[key]
		if k == nil {
			k = l.own(key)
			l.mu.Unlock()
			return k, nil
		}
		if l.waiters == nil {
			l.waiters = make(map[string]chan struct{})
		}
		ch := l.waiters[key]
		if ch == nil {
			ch = make(chan struct{})
			l.waiters[key] = ch
		}
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// own makes a lock for key, with its gate held, and files it. l.mu is held.
func (l *keyLocks) own(key string) keyLock {
	if l.gates == nil {
		l.gates = make(map[string]keyLock)
	}
	k := make(keyLock, 1)
	k.close()
	l.gates[key] = k
	return k
}

// unlock lets key go. The owner holds k's gate; unlock lets it go too.
func (l *keyLocks) unlock(key string, k keyLock) {
	l.mu.Lock()
	delete(l.gates, key)
	ch := l.waiters[key]
	delete(l.waiters, key)
	l.mu.Unlock()
	k.open()
	if ch != nil {
		close(ch)
	}
}

// hold gives the caller (Journal.Abandon) the right to write key's record
// between a call's attempts: it owns key if no call does (owned is true),
// or else holds the gate of the owner's lock, once the owner lets it go.
// The caller hands k and owned to release.
func (l *keyLocks) hold(key string) (k keyLock, owned bool) {
	for {
		l.mu.Lock()
		k = l.gates[key]
		if k == nil {
			k = l.own(key)
			l.mu.Unlock()
			return k, true
		}
		l.mu.Unlock()
		k.close()
		l.mu.Lock()
		current := l.gates[key] == k
		l.mu.Unlock()
		if current {
			return k, false
		}
		k.open() // the owner let the key go meanwhile
	}
}

// release ends a hold.
func (l *keyLocks) release(key string, k keyLock, owned bool) {
	if owned {
		l.unlock(key, k)
	} else {
		k.open()
	}
}
