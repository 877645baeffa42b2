// This file holds the state machine's units of work: ClaimWork and
// BeginWork, their Commit and Rollback, a killed connection, and the
// service restarting.

package storetest

import (
	"context"
	"errors"
	"strconv"

	"github.com/idemhq/idem/server"
)

// drawWork draws one of the open units of work, skipping the step if
// there is none.
func (m *machine) drawWork(d Draw) (int, *work) {
	if len(m.works) == 0 {
		m.t.Skip("no unit of work is open")
	}
	i := d("work", len(m.works))
	return i, m.works[i]
}

// open records a unit of work the store began.
func (m *machine) open(w *work) {
	m.nwork++
	w.id = m.nwork
	m.works = append(m.works, w)
	if w.lock {
		m.m.locks[w.key] = w
	}
}

// end forgets the i-th open unit of work, and frees its lock.
func (m *machine) end(i int) {
	w := m.works[i]
	m.works = append(m.works[:i], m.works[i+1:]...)
	if m.m.locks[w.key] == w {
		m.m.locks[w.key] = nil
	}
}

func (m *machine) claimWork(d Draw) {
	if len(m.works) >= smMaxWorks {
		m.t.Skip("enough units of work are open")
	}
	k, fp := m.drawKey(d), m.drawFP(d)
	wc := m.s.(server.WorkClaimer)
	want := m.m.claim(k, fp)
	c, wctx, w, err := wc.ClaimWork(context.Background(), m.keys[k], fp)
	if errors.Is(err, errors.ErrUnsupported) {
		m.noClaimWork = true
		m.t.Skip("the store does not claim keys within units of work")
	}
	if err != nil {
		m.fail("ClaimWork of key %d for %s: %v", k, fp, err)
	}
	m.t.Logf("ClaimWork key %d for %s: acquired %v, taken over %v", k, fp, c.Acquired, c.TakenOver)
	m.checkClaim("ClaimWork", k, fp, want, c)
	if !c.Acquired {
		if wctx != nil || w != nil {
			m.fail("a ClaimWork that did not acquire returned a context or a Work")
		}
		return
	}
	if c.Token != "" || wctx == nil || w == nil {
		m.fail("an acquired ClaimWork returns a context, a Work and no token (token %q)", c.Token)
	}
	r := m.m.live(k)
	u := &work{key: k, lock: true, fp: fp, w: w, ctx: wctx, seen: r.tok, seenAny: r.state != absent}
	m.open(u)
	m.t.Logf("  as work#%d", u.id)
}

func (m *machine) beginWork(d Draw) {
	if len(m.works) >= smMaxWorks {
		m.t.Skip("enough units of work are open")
	}
	k := m.drawKey(d)
	if len(m.toks[k]) == 0 {
		m.t.Skip("no token to begin work under")
	}
	tok, token := m.drawToken(d, k)
	if tok < 0 {
		m.t.Skip("work begins only under a token a claim handed out")
	}
	tx := m.s.(server.Transactor)
	ctx := context.Background()
	wctx, w, err := tx.BeginWork(ctx, m.keys[k], token)
	if err != nil {
		m.fail("BeginWork on key %d under %s: %v", k, m.tokName(tok), err)
	}
	if w == nil {
		// The store runs the work outside itself: ctx comes back as it is.
		if wctx != ctx {
			m.fail("BeginWork with no Work must return its context unchanged")
		}
		m.noBeginWork = true
		m.t.Skip("the store runs work outside itself")
	}
	u := &work{key: k, tok: tok, w: w, ctx: wctx}
	m.open(u)
	m.t.Logf("BeginWork key %d under %s: work#%d", k, m.tokName(tok), u.id)
}

func (m *machine) commit(d Draw) {
	i, w := m.drawWork(d)
	n, resp := m.drawResponse(d)
	ctx, cancel := m.ctx()
	defer cancel()
	err := w.w.Commit(ctx, resp, m.retain)
	m.t.Logf("Commit work#%d (key %d) with outcome %d: %v", w.id, w.key, n, err)
	switch {
	case w.dead:
		if err == nil {
			m.fail("Commit of work#%d, whose connection was killed, returned nil", w.id)
		}
	case w.lock:
		ok := m.m.lockCommits(w)
		if ok && err != nil {
			m.fail("Commit of work#%d (ClaimWork, key %d): want nil, got %v (the model holds %s)", w.id, w.key, err, m.describe(w.key))
		}
		if !ok && !errors.Is(err, server.ErrLeaseLost) {
			m.fail("Commit of work#%d (ClaimWork, key %d): want ErrLeaseLost, got %v (the model holds %s)", w.id, w.key, err, m.describe(w.key))
		}
		if ok {
			m.unknown--
			m.m.complete(w.key, w.fp, m.unknown, n, m.retain)
		}
	default:
		if m.fenced("Commit of work#"+strconv.Itoa(w.id), w.key, w.tok, err) {
			m.m.complete(w.key, m.m.rows[w.key].fp, w.tok, n, m.retain)
		}
	}
	m.end(i)
	if err := w.w.Commit(ctx, resp, m.retain); err == nil {
		m.fail("a second Commit of work#%d returned nil", w.id)
	}
}

func (m *machine) rollback(d Draw) {
	i, w := m.drawWork(d)
	ctx, cancel := m.ctx()
	defer cancel()
	err := w.w.Rollback(ctx)
	m.t.Logf("Rollback work#%d (key %d): %v", w.id, w.key, err)
	if err != nil {
		m.fail("Rollback of work#%d: %v", w.id, err)
	}
	m.end(i)
}

func (m *machine) kill(d Draw) {
	_, w := m.drawWork(d)
	if w.dead {
		m.t.Skip("its connection is gone already")
	}
	m.killWork(w)
}

// killWork ends w's connection: its transaction rolls back, and its lock
// is freed.
func (m *machine) killWork(w *work) {
	m.t.Helper()
	ctx, cancel := m.ctx()
	defer cancel()
	if err := m.tg.Kill(ctx, w.ctx.(context.Context)); err != nil {
		m.fail("Kill of work#%d: %v", w.id, err)
	}
	m.t.Logf("Kill work#%d's connection (key %d)", w.id, w.key)
	w.dead = true
	if m.m.locks[w.key] == w {
		m.m.locks[w.key] = nil
	}
}

func (m *machine) restart(Draw) {
	for len(m.works) > 0 {
		w := m.works[0]
		if !w.dead && m.tg.Kill != nil {
			m.killWork(w)
		}
		ctx, cancel := m.ctx()
		err := w.w.Rollback(ctx)
		cancel()
		if err != nil {
			m.fail("Rollback of work#%d at the restart: %v", w.id, err)
		}
		m.end(0)
	}
	s, err := m.tg.Restart(m.t)
	if err != nil {
		m.fail("Restart: %v", err)
	}
	m.s = s
	m.t.Logf("Restart: a new store over the same records")
}
