// This file holds keyLocks, which make calls with one key run one at a
// time within a process.

package idem

import (
	"context"
	"sync"
)

// keyLocks serialises calls with the same key within one process.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// lock waits until no other call holds key, then holds it; the caller
// passes the returned channel to unlock.
func (l *keyLocks) lock(ctx context.Context, key string) (chan struct{}, error) {
	for {
		l.mu.Lock()
		held, busy := l.m[key]
		if !busy {
			if l.m == nil {
				l.m = make(map[string]chan struct{})
			}
			ch := make(chan struct{})
			l.m[key] = ch
			l.mu.Unlock()
			return ch, nil
		}
		l.mu.Unlock()
		select {
		case <-held:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (l *keyLocks) unlock(key string, ch chan struct{}) {
	l.mu.Lock()
	delete(l.m, key)
	l.mu.Unlock()
	close(ch)
}
