package pgstore

// This file holds Close and what it waits for: the background rollbacks
// of claims that acquired nothing, and the statements running on the
// reserved pool.

import "sync"

// uses counts the Store's uses that Close waits for before it closes what
// the Store opened. Once closing, it admits no new use: the caller then
// does without (a rollback runs before ClaimWork returns, a statement runs
// on the main pool). It is safe for concurrent use; New sets idle.L.
type uses struct {
	mu      sync.Mutex
	idle    sync.Cond // broadcast when n drops to zero
	n       int
	closing bool
}

// enter counts a use and reports true, or reports false once Close has
// begun.
func (u *uses) enter() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closing {
		return false
	}
	u.n++
	return true
}

// leave ends a use counted by enter.
func (u *uses) leave() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.n--; u.n == 0 {
		u.idle.Broadcast()
	}
}

// wait returns once no use is under way; with close set, it admits no new
// one first.
func (u *uses) wait(close bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closing = u.closing || close
	for u.n > 0 {
		u.idle.Wait()
	}
}

// Close waits for the background rollbacks of claims that acquired
// nothing (see [Store.ClaimWork]) to put their connections back in the
// pool, and closes the connections the Store opened itself (the reserved
// pool of Options.ReservedConns, the pool of its own it runs on behind a
// connection pooler, and the pool of a Store from [Open]), waiting for
// statements and work's transactions using them to finish. It does not
// close the pool given to New, which the caller closes after the Store's
// last use. A Store from New used after Close (or while Close runs) runs
// the reserved pool's statements on the main pool, and rolls back a claim
// that acquired nothing before ClaimWork returns; a Store from Open, or
// one that ran on a pool of its own, fails every call after Close. Close is safe to call more than once, from several
// goroutines, and while the Store is in use.
func (s *Store) Close() {
	s.uses.wait(true)
	s.res.mu.Lock()
	defer s.res.mu.Unlock()
	if p := s.res.pool.Swap(nil); p != nil {
		p.Close()
	}
	s.closeOwn()
	if s.ownPool {
		s.pool.Close() // pgxpool's Close is idempotent
	}
}
