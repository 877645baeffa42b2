package mysqlstore

// This file holds Close and what it waits for: the background releases of
// the named locks of claims that ended.

import "sync"

// uses counts the Store's background statements that Close waits for.
// Once closing, it admits no new one: the caller then runs the statement
// before it returns. It is safe for concurrent use; New sets idle.L.
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

// wait returns once no use is under way, admitting no new one.
func (u *uses) wait() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closing = true
	for u.n > 0 {
		u.idle.Wait()
	}
}

// Close waits for the background statements of claims that ended (each
// gives back its key's named lock and returns its connection to the pool:
// see [Store.ClaimWork]) and, for a Store from [Open], closes its *sql.DB.
// It does not close the *sql.DB given to New, which the caller closes
// after the Store's last use; a Store used after Close runs those
// statements before its calls return. Close is safe to call more than
// once, from several goroutines, and while the Store is in use.
func (s *Store) Close() {
	s.uses.wait()
	if s.ownDB {
		_ = s.db.Close()
	}
}
