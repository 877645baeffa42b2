// This file holds the reference model of the state-machine test: what a
// store holds for each key, written as plainly as the Store, Transactor and
// WorkClaimer contracts in server/store.go say it, and what each call must
// answer.

package storetest

import (
	"time"

	"github.com/idemhq/idem/server"
)

// rowState is where a key's record stands in the model.
type rowState uint8

const (
	absent rowState = iota
	running
	completed
)

// row is the model of one key's record, as the store holds it.
type row struct {
	state rowState
	fp    string
	// tok names the token the record was claimed (or recorded) under: an
	// index into the machine's tokens for a token the test holds, or a
	// negative number for one only the store knows (a WorkClaimer's commit
	// writes a token of its own).
	tok int
	// leaseEnd (running) and expiresAt (completed) are on the model's
	// clock, which starts at zero.
	leaseEnd, expiresAt time.Duration
	// resp numbers the stored outcome (completed).
	resp int
}

// work is a unit of work the machine holds open: begun by ClaimWork
// (lock) or by BeginWork under a lease token.
type work struct {
	id   int
	key  int
	lock bool   // ClaimWork's: the key's lock is held by it
	fp   string // lock: the fingerprint it claimed with
	tok  int    // BeginWork's: the lease token it commits under
	// seen is the token of the record ClaimWork found replaceable (a
	// lapsed lease of the same request, or a record past its retention);
	// seenAny is false when it found no record.
	seen    int
	seenAny bool
	dead    bool // its connection was killed
	w       server.Work
	ctx     any // the context the work runs with, for Target.Kill
}

// model is the reference: the keys' records, the locks units of work hold,
// and the clock.
type model struct {
	now     time.Duration
	abandon time.Duration
	rows    []row
	locks   []*work // per key: the ClaimWork unit holding its lock
}

// lapsed reports whether a running row's lease has lapsed.
func (m *model) lapsed(r row) bool { return r.state == running && m.now >= r.leaseEnd }

// expired reports whether a row may be replaced: a completed record past
// its retention, or a running one under a lapsed lease.
func (m *model) expired(r row) bool {
	switch r.state {
	case completed:
		return m.now >= r.expiresAt
	case running:
		return m.lapsed(r)
	}
	return false
}

// live is key k's row as the store answers it: a running record kept
// past its lease by more than the store's Abandon is forgotten.
func (m *model) live(k int) row {
	r := m.rows[k]
	if r.state == running && m.now >= r.leaseEnd+m.abandon {
		return row{}
	}
	return r
}

// want is what a claim must answer.
type want struct {
	acquire   bool
	takenOver bool
	// Not acquired: the record reported. heldByWork: a unit of work holds
	// the key's lock, so a running record's fingerprint may be empty (the
	// store cannot tell which request holds it) and its lease unknown.
	rec        row
	heldByWork bool
}

// claim is what a claim of key k for fingerprint fp must answer, whether
// made by Store.Claim or WorkClaimer.ClaimWork: the record is free
// (absent, past its retention, or under a lapsed lease of the same
// request, which is taken over) and no unit of work holds the key; or it
// is reported. A key a unit of work holds is reported running unless its
// record is a completed one within its retention, which is replayed.
func (m *model) claim(k int, fp string) want {
	r := m.live(k)
	free, takeover := false, false
	switch {
	case r.state == absent:
		free = true
	case r.state == completed:
		free = m.expired(r)
	case m.lapsed(r) && r.fp == fp:
		free, takeover = true, true
	}
	held := m.locks[k] != nil
	switch {
	case free && !held:
		return want{acquire: true, takenOver: takeover}
	case !held:
		return want{rec: r}
	case r.state == completed && !m.expired(r):
		return want{rec: r, heldByWork: true}
	}
	rec := row{state: running}
	if r.state == running {
		rec.fp = r.fp
	}
	return want{rec: rec, heldByWork: true}
}

// heldUnder reports whether key k's record is running under token tok:
// what Renew, Complete, Release and a lease Work's Commit are fenced by.
// A lapsed lease not taken over is still held.
func (m *model) heldUnder(k, tok int) bool {
	r := m.live(k)
	return r.state == running && r.tok == tok
}

// complete records outcome resp on key k, claimed for fp under tok.
func (m *model) complete(k int, fp string, tok, resp int, retention time.Duration) {
	m.rows[k] = row{state: completed, fp: fp, tok: tok, expiresAt: m.now + retention, resp: resp}
}

// lockCommits reports whether the Commit of ClaimWork unit w may record:
// the key has no record, or still has the one w found replaceable, still
// replaceable. A record stored meanwhile under the lease w took over (the
// paused owner's late Complete) or a renewal of that lease makes it fail.
func (m *model) lockCommits(w *work) bool {
	r := m.live(w.key)
	if r.state == absent {
		return true
	}
	return w.seenAny && r.tok == w.seen && m.expired(r) && (r.state == completed || r.fp == w.fp)
}
