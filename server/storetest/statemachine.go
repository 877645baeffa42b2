// This file holds RunStateMachine: random sequences of a store's calls,
// each answer checked against the reference model (statemachine_model.go)
// as it comes, with the property-based testing library the caller brings
// to draw the sequences and shrink a failing one.

package storetest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/idemhq/idem/server"
)

// T is what one run of the state machine reports to. *testing.T is one,
// and so is rapid's *rapid.T.
type T interface {
	Helper()
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skip(args ...any)
}

// Draw returns a number in [0, n), n > 0, for the choice named label. The
// property-based testing library behind it records every draw, so that it
// can replay a failing run and shrink it to a minimal one.
type Draw func(label string, n int) int

// Steps runs a random sequence of the named actions, each with a Draw for
// its own choices; the action named "" is an invariant, run after every
// other. An action that does not apply in the current state calls
// T.Skip, and another is drawn. rapid's T.Repeat is one.
type Steps func(actions map[string]func(Draw))

// Driver runs run many times, each with a T and Steps of its own, and
// when a run fails, shrinks it and reports the minimal failing run. The
// state machine's test files adapt rapid.Check to it in a few lines:
//
//	func drive(t *testing.T, run func(storetest.T, storetest.Steps)) {
//		rapid.Check(t, func(rt *rapid.T) {
//			run(rt, func(actions map[string]func(storetest.Draw)) {
//				m := make(map[string]func(*rapid.T), len(actions))
//				for name, act := range actions {
//					m[name] = func(rt *rapid.T) {
//						act(func(label string, n int) int { return rapid.IntRange(0, n-1).Draw(rt, label) })
//					}
//				}
//				rt.Repeat(m)
//			})
//		})
//	}
type Driver func(t *testing.T, run func(t T, steps Steps))

// Target is the store one run of the state machine drives, and the hooks
// that reach behind it. Store is required; a nil hook leaves its action
// out of the runs.
type Target struct {
	Store server.Store

	// Advance moves the store's clock forward by d: a store that takes a
	// clock (memstore's Options.Now). With Advance, leases last 10.5 s
	// and retention 60.5 s of that clock; Abandon must be the store's.
	Advance func(d time.Duration)
	// Abandon is how long the store keeps a running record past its
	// lease (see server.Record.ExpiresAt); zero means for ever, as
	// pgstore does until it purges.
	Abandon time.Duration

	// Lapse makes key k's lease lapse, or its completed record's retention
	// end, now on the store's own clock, and leaves every other key as it
	// is: for a store whose clock is the database's. Without Advance,
	// leases and retention last an hour, so that nothing lapses but what
	// Lapse makes lapse.
	Lapse func(ctx context.Context, k server.Key) error

	// Peek reads key k's record without changing it, and reports false if
	// the store holds none. It may leave the response's Header nil (the
	// status and body are compared then). With it the machine compares every key's
	// record with the model after every step; without it the Lookup
	// action is a claim with a fingerprint no other request uses, where
	// the model says that claim cannot acquire.
	Peek func(ctx context.Context, k server.Key) (server.Record, bool, error)

	// Kill ends the database connection of the unit of work running with
	// ctx, as a crash of the worker or a failing network does, and returns
	// once the database has let go of what it held (its transaction and
	// locks).
	Kill func(ctx context.Context, work context.Context) error

	// Restart is the service restarting: every unit of work open is killed
	// (Kill) and ended first; Restart then returns a new store over the
	// same records, which the run goes on with.
	Restart func(t T) (server.Store, error)

	// Settle, if not nil, is called after every step, before the records
	// are compared: it waits for what the store does in the background
	// after a call has returned (pgstore's rollback of a ClaimWork that
	// acquired nothing), so that the next step does not race it.
	Settle func()

	// Close, if not nil, is called when the run ends, once its units of
	// work have ended.
	Close func()
}

// The state machine's shape: two keys, two requests (fingerprints) that
// claim them, and a third that only looks.
const (
	smKeys     = 2
	smMaxWorks = 3
	smLookerFP = "fp-looker"
	smBogus    = "no-such-token"
	smStep     = 30 * time.Second
)

var smFingerprints = []string{"fp-a", "fp-b"}

// RunStateMachine checks a store against a reference model of the Store
// contract (and of Transactor and WorkClaimer, where the store implements
// them): drive runs many random sequences of Claim, Renew, Complete,
// Release, Lookup, ClaimWork, BeginWork, Commit, Rollback, the passing of
// time (Target.Advance or Target.Lapse), a unit of work's connection killed
// (Target.Kill) and the service restarting (Target.Restart), each answer
// compared with what the model says the store must answer, and every
// key's record compared with the model's after each step (Target.Peek).
// Tokens are drawn from every token a key was ever claimed under, and a
// bogus one, so stale tokens are fenced at every step. A failing sequence
// is shrunk by drive; each step logs what it did and what came back.
//
// newTarget is called at the start of each run; each run uses a scope of
// its own, so runs may share one store. Runs hold at most three units of
// work open at once, and end those left open when they stop.
func RunStateMachine(t *testing.T, drive Driver, newTarget func(t T) Target) {
	t.Helper()
	drive(t, func(rt T, steps Steps) {
		m := newMachine(rt, newTarget(rt))
		defer m.close()
		steps(m.actions())
	})
}

// machine is one run: the store, the model, and what the test holds
// (tokens, open units of work).
type machine struct {
	t      T
	tg     Target
	s      server.Store
	scope  string
	keys   []server.Key
	lease  time.Duration
	retain time.Duration
	m      model

	tokens  []string // every token handed out
	toks    [][]int  // per key: the indices of its tokens, oldest first
	unknown int      // the last number given a token only the store knows
	works   []*work  // open units of work
	nwork   int
	nresp   int
	resps   map[int]server.StoredResponse

	noClaimWork, noBeginWork bool
}

func newMachine(t T, tg Target) *machine {
	t.Helper()
	if tg.Store == nil {
		t.Fatalf("state machine: Target.Store is nil")
	}
	m := &machine{t: t, tg: tg, s: tg.Store, scope: "sm-" + rand.Text(),
		lease: time.Hour, retain: time.Hour, resps: map[int]server.StoredResponse{}}
	if tg.Advance != nil {
		m.lease, m.retain = 10*time.Second+500*time.Millisecond, 60*time.Second+500*time.Millisecond
	}
	m.m = model{abandon: tg.Abandon, rows: make([]row, smKeys), locks: make([]*work, smKeys)}
	if m.m.abandon == 0 {
		m.m.abandon = 1 << 62
	}
	for i := range smKeys {
		m.keys = append(m.keys, server.Key{Scope: m.scope, Key: "key-" + strconv.Itoa(i)})
	}
	m.toks = make([][]int, smKeys)
	_, m.noClaimWork = m.s.(server.WorkClaimer)
	m.noClaimWork = !m.noClaimWork
	_, m.noBeginWork = m.s.(server.Transactor)
	m.noBeginWork = !m.noBeginWork
	return m
}

// ctx bounds every call of a step, so that a store that hangs fails the
// run instead of the whole test binary.
func (m *machine) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), smStep)
}

// close ends the units of work a run left open.
func (m *machine) close() {
	for _, w := range m.works {
		ctx, cancel := m.ctx()
		_ = w.w.Rollback(ctx)
		cancel()
	}
	m.works = nil
	if m.tg.Close != nil {
		m.tg.Close()
	}
}

func (m *machine) actions() map[string]func(Draw) {
	a := map[string]func(Draw){
		"":         m.checkAll,
		"Claim":    m.claim,
		"Renew":    m.renew,
		"Complete": m.complete,
		"Release":  m.release,
		"Lookup":   m.lookup,
	}
	if !m.noClaimWork {
		a["ClaimWork"] = m.claimWork
	}
	if !m.noBeginWork {
		a["BeginWork"] = m.beginWork
	}
	if !m.noClaimWork || !m.noBeginWork {
		a["Commit"] = m.commit
		a["Rollback"] = m.rollback
		if m.tg.Kill != nil {
			a["Kill"] = m.kill
		}
	}
	if m.tg.Advance != nil {
		a["Advance"] = m.advance
	}
	if m.tg.Lapse != nil {
		a["Lapse"] = m.lapse
	}
	if m.tg.Restart != nil {
		a["Restart"] = m.restart
	}
	return a
}

// fail stops the run with what went wrong at this step.
func (m *machine) fail(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("state machine: "+format, args...)
}

func (m *machine) drawKey(d Draw) int { return d("key", smKeys) }

func (m *machine) drawFP(d Draw) string { return smFingerprints[d("fingerprint", len(smFingerprints))] }

// drawToken draws one of the tokens key k was ever claimed under, or a
// bogus one; it returns the token's index, -1 for the bogus one, and the
// token.
func (m *machine) drawToken(d Draw, k int) (int, string) {
	n := len(m.toks[k])
	i := d("token", n+1)
	if i == n {
		return -1, smBogus
	}
	return m.toks[k][i], m.tokens[m.toks[k][i]]
}

// newToken records a token the store handed out for key k.
func (m *machine) newToken(k int, token string) int {
	m.tokens = append(m.tokens, token)
	m.toks[k] = append(m.toks[k], len(m.tokens)-1)
	return len(m.tokens) - 1
}

// tokName is how a step's log names a token.
func (m *machine) tokName(i int) string {
	if i < 0 {
		return "bogus token"
	}
	return "token#" + strconv.Itoa(i)
}

// drawResponse draws an outcome to store; each is told apart by its body.
func (m *machine) drawResponse(d Draw) (int, server.StoredResponse) {
	m.nresp++
	status := []int{http.StatusOK, http.StatusCreated, http.StatusNotFound}[d("status", 3)]
	n := strconv.Itoa(m.nresp)
	resp := server.StoredResponse{Status: status, Header: http.Header{"X-Outcome": {n}}, Body: []byte("outcome " + n)}
	m.resps[m.nresp] = resp
	return m.nresp, resp
}

// fenced is the answer a fenced call must give: nil if the key is held
// under the token, ErrLeaseLost otherwise.
func (m *machine) fenced(what string, k, tok int, err error) bool {
	m.t.Helper()
	held := tok >= 0 && m.m.heldUnder(k, tok)
	switch {
	case held && err != nil:
		m.fail("%s of key %d under %s, which holds it: want nil, got %v", what, k, m.tokName(tok), err)
	case !held && !errors.Is(err, server.ErrLeaseLost):
		m.fail("%s of key %d under %s, which does not hold it: want ErrLeaseLost, got %v", what, k, m.tokName(tok), err)
	}
	return held
}

func (m *machine) claim(d Draw) {
	k, fp := m.drawKey(d), m.drawFP(d)
	ctx, cancel := m.ctx()
	defer cancel()
	c, err := m.s.Claim(ctx, m.keys[k], fp, m.lease)
	if err != nil {
		m.fail("Claim of key %d for %s: %v", k, fp, err)
	}
	w := m.m.claim(k, fp)
	m.t.Logf("Claim key %d for %s: acquired %v, taken over %v", k, fp, c.Acquired, c.TakenOver)
	m.checkClaim("Claim", k, fp, w, c)
	if c.Acquired {
		if c.Token == "" {
			m.fail("Claim acquired key %d with no token", k)
		}
		tok := m.newToken(k, c.Token)
		m.t.Logf("  as %s", m.tokName(tok))
		m.m.rows[k] = row{state: running, fp: fp, tok: tok, leaseEnd: m.m.now + m.lease}
	}
}

// checkClaim compares a claim's answer with the model's.
func (m *machine) checkClaim(what string, k int, fp string, w want, c server.Claim) {
	m.t.Helper()
	if c.Acquired != w.acquire {
		m.fail("%s of key %d for %s: acquired %v, want %v (the model holds %s)", what, k, fp, c.Acquired, w.acquire, m.describe(k))
	}
	if c.Acquired {
		if c.TakenOver != w.takenOver {
			m.fail("%s of key %d for %s: TakenOver %v, want %v (the model holds %s)", what, k, fp, c.TakenOver, w.takenOver, m.describe(k))
		}
		return
	}
	if c.Token != "" {
		m.fail("%s of key %d: a claim that did not acquire carries token %q", what, k, c.Token)
	}
	m.checkRecord(what, k, c.Record, w.rec, w.heldByWork, false)
}

// checkRecord compares a record the store reported with the model's row.
// A peeked record's header may be missing.
func (m *machine) checkRecord(what string, k int, got server.Record, r row, heldByWork, peeked bool) {
	m.t.Helper()
	switch r.state {
	case absent:
		m.fail("%s of key %d: the model holds no record, the store reported %+v", what, k, got)
	case running:
		if got.Completed {
			m.fail("%s of key %d: reported completed (status %d, %q), the model holds %s", what, k, got.Response.Status, got.Response.Body, m.describe(k))
		}
		if got.Fingerprint != r.fp && !(heldByWork && got.Fingerprint == "") {
			m.fail("%s of key %d: running for %q, the model holds %s", what, k, got.Fingerprint, m.describe(k))
		}
		if !heldByWork && got.LeaseExpires.IsZero() {
			m.fail("%s of key %d: a running record with no lease expiry", what, k)
		}
	case completed:
		want := m.resps[r.resp]
		if !got.Completed || got.Fingerprint != r.fp {
			m.fail("%s of key %d: reported completed %v for %q, the model holds %s", what, k, got.Completed, got.Fingerprint, m.describe(k))
		}
		if got.Response.Status != want.Status || string(got.Response.Body) != string(want.Body) ||
			(!peeked || got.Response.Header != nil) && got.Response.Header.Get("X-Outcome") != want.Header.Get("X-Outcome") {
			m.fail("%s of key %d: reported outcome %d %q, the model holds %s", what, k, got.Response.Status, got.Response.Body, m.describe(k))
		}
	}
}

// describe is the model's row of key k, for a failure message.
func (m *machine) describe(k int) string {
	r := m.m.live(k)
	held := ""
	if w := m.m.locks[k]; w != nil {
		held = fmt.Sprintf(", its lock held by work#%d", w.id)
	}
	switch r.state {
	case running:
		lapsed := ""
		if m.m.lapsed(r) {
			lapsed = " (lapsed)"
		}
		return fmt.Sprintf("running for %s under %s%s%s", r.fp, m.tokName(r.tok), lapsed, held)
	case completed:
		expired := ""
		if m.m.expired(r) {
			expired = " (past its retention)"
		}
		return fmt.Sprintf("completed for %s with outcome %d%s%s", r.fp, r.resp, expired, held)
	}
	return "no record" + held
}

func (m *machine) renew(d Draw) {
	k := m.drawKey(d)
	tok, token := m.drawToken(d, k)
	ctx, cancel := m.ctx()
	defer cancel()
	err := m.s.Renew(ctx, m.keys[k], token, m.lease)
	m.t.Logf("Renew key %d under %s: %v", k, m.tokName(tok), err)
	if m.fenced("Renew", k, tok, err) {
		m.m.rows[k].leaseEnd = m.m.now + m.lease
	}
}

func (m *machine) complete(d Draw) {
	k := m.drawKey(d)
	tok, token := m.drawToken(d, k)
	n, resp := m.drawResponse(d)
	ctx, cancel := m.ctx()
	defer cancel()
	err := m.s.Complete(ctx, m.keys[k], token, resp, m.retain)
	m.t.Logf("Complete key %d under %s with outcome %d: %v", k, m.tokName(tok), n, err)
	if m.fenced("Complete", k, tok, err) {
		m.m.complete(k, m.m.rows[k].fp, tok, n, m.retain)
	}
}

func (m *machine) release(d Draw) {
	k := m.drawKey(d)
	tok, token := m.drawToken(d, k)
	ctx, cancel := m.ctx()
	defer cancel()
	err := m.s.Release(ctx, m.keys[k], token)
	m.t.Logf("Release key %d under %s: %v", k, m.tokName(tok), err)
	if m.fenced("Release", k, tok, err) {
		m.m.rows[k] = row{}
	}
}

// lookup reads one key's record: with Peek, or else with a claim by a
// request that never claims, where the model says it cannot acquire.
func (m *machine) lookup(d Draw) {
	k := m.drawKey(d)
	if m.tg.Peek != nil {
		m.t.Logf("Lookup key %d", k)
		m.peek(k)
		return
	}
	w := m.m.claim(k, smLookerFP)
	if w.acquire {
		m.t.Skip("the key is free: a lookup by claim would acquire it")
	}
	ctx, cancel := m.ctx()
	defer cancel()
	c, err := m.s.Claim(ctx, m.keys[k], smLookerFP, m.lease)
	if err != nil {
		m.fail("Lookup (a claim) of key %d: %v", k, err)
	}
	m.t.Logf("Lookup key %d (a claim for %s)", k, smLookerFP)
	m.checkClaim("Lookup", k, smLookerFP, w, c)
}

// peek compares key k's record with the model's.
func (m *machine) peek(k int) {
	m.t.Helper()
	ctx, cancel := m.ctx()
	defer cancel()
	rec, found, err := m.tg.Peek(ctx, m.keys[k])
	if err != nil {
		m.fail("Peek of key %d: %v", k, err)
	}
	r := m.m.live(k)
	switch {
	case !found && r.state != absent:
		m.fail("key %d: the store holds no record, the model holds %s", k, m.describe(k))
	case found && r.state == absent:
		m.fail("key %d: the store holds %+v, the model no record", k, rec)
	case found:
		m.checkRecord("Peek", k, rec, r, false, true)
	}
}

// checkAll is the invariant: with Peek, every key's record is the
// model's.
func (m *machine) checkAll(Draw) {
	if m.tg.Settle != nil {
		m.tg.Settle()
	}
	if m.tg.Peek == nil {
		return
	}
	for k := range smKeys {
		m.peek(k)
	}
}

func (m *machine) advance(d Draw) {
	step := []time.Duration{time.Second, 4 * time.Second, 11 * time.Second, 31 * time.Second, 61 * time.Second}[d("advance", 5)]
	m.tg.Advance(step)
	m.m.now += step
	m.t.Logf("Advance the clock by %v (now %v)", step, m.m.now)
}

func (m *machine) lapse(d Draw) {
	k := m.drawKey(d)
	r := m.m.rows[k]
	if r.state == absent || m.m.expired(r) {
		m.t.Skip("nothing to lapse")
	}
	ctx, cancel := m.ctx()
	defer cancel()
	if err := m.tg.Lapse(ctx, m.keys[k]); err != nil {
		m.fail("Lapse of key %d: %v", k, err)
	}
	if r.state == running {
		m.m.rows[k].leaseEnd = m.m.now - time.Millisecond
		m.t.Logf("Lapse: key %d's lease lapses", k)
	} else {
		m.m.rows[k].expiresAt = m.m.now - time.Millisecond
		m.t.Logf("Lapse: key %d's retention ends", k)
	}
}
