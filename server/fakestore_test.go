package server_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/idemhq/idem/server"
)

// fakeStore is an in-memory Store for the tests of how claims end. It
// keeps one record per key, logs the calls that end each claim (Complete,
// Release, and a Work's Commit and Rollback), counts the others, and fails
// the calls a test asks it to. It has no goroutines and no clock but
// time.Now, so it runs inside a synctest bubble. A lapsed lease is taken
// over by a claim with the same fingerprint; a test can also make the next
// renewal find the lease lost.
type fakeStore struct {
	mu       sync.Mutex
	records  map[server.Key]*fakeRecord
	ends     map[server.Key][]string
	claims   int
	renewals int
	tokens   int

	failComplete error // Complete fails with it, storing nothing
	failCommit   error // Work.Commit fails with it, committing nothing
	loseLease    bool  // the next Renew finds the key taken over
}

type fakeRecord struct {
	fp        string
	token     string    // "" once completed, or while a unit of work holds it
	until     time.Time // the lease's end
	completed bool
	resp      server.StoredResponse
	lock      sync.Mutex // held by the unit of work that claimed the key (fakeWorkClaimer)
}

func newFakeStore() *fakeStore {
	return &fakeStore{records: make(map[server.Key]*fakeRecord), ends: make(map[server.Key][]string)}
}

// endsOf returns the calls that ended claims of k, in order.
func (s *fakeStore) endsOf(k server.Key) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ends[k]...)
}

// counts returns the numbers of Claim and Renew calls.
func (s *fakeStore) counts() (claims, renewals int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claims, s.renewals
}

func (s *fakeStore) logEnd(k server.Key, call string) { s.ends[k] = append(s.ends[k], call) }

func (s *fakeStore) Claim(_ context.Context, k server.Key, fp string, lease time.Duration) (server.Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claims++
	r, ok := s.records[k]
	takeover := ok && !r.completed && r.fp == fp && time.Now().After(r.until)
	if ok && !takeover {
		return server.Claim{Record: r.record()}, nil
	}
	s.tokens++
	r = &fakeRecord{fp: fp, token: "token-" + strconv.Itoa(s.tokens), until: time.Now().Add(lease)}
	s.records[k] = r
	return server.Claim{Acquired: true, Token: r.token, TakenOver: takeover}, nil
}

func (r *fakeRecord) record() server.Record {
	if r.completed {
		return server.Record{Fingerprint: r.fp, Completed: true, Response: r.resp, ExpiresAt: time.Now().Add(time.Hour)}
	}
	return server.Record{Fingerprint: r.fp, LeaseExpires: r.until, ExpiresAt: r.until}
}

// held returns k's record if it is held under token.
func (s *fakeStore) held(k server.Key, token string) (*fakeRecord, error) {
	r, ok := s.records[k]
	if !ok || r.completed || r.token != token || token == "" {
		return nil, server.ErrLeaseLost
	}
	return r, nil
}

func (s *fakeStore) Renew(_ context.Context, k server.Key, token string, lease time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renewals++
	r, err := s.held(k, token)
	switch {
	case err != nil:
	case s.loseLease:
		r.token = "taken-over"
		err = server.ErrLeaseLost
	default:
		r.until = time.Now().Add(lease)
	}
	return err
}

func (s *fakeStore) Complete(_ context.Context, k server.Key, token string, resp server.StoredResponse, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logEnd(k, "Complete")
	return s.complete(k, token, resp, s.failComplete)
}

func (s *fakeStore) complete(k server.Key, token string, resp server.StoredResponse, fail error) error {
	r, err := s.held(k, token)
	switch {
	case err != nil:
		return err
	case fail != nil:
		return fail
	}
	r.completed, r.resp, r.token = true, resp, ""
	return nil
}

func (s *fakeStore) Release(_ context.Context, k server.Key, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logEnd(k, "Release")
	if _, err := s.held(k, token); err != nil {
		return err
	}
	delete(s.records, k)
	return nil
}

// fakeTx is a fakeStore that is a Transactor: its Work records through
// Commit, fenced by the token.
type fakeTx struct{ *fakeStore }

type fakeWorkKey struct{}

func (s fakeTx) BeginWork(ctx context.Context, k server.Key, token string) (context.Context, server.Work, error) {
	return context.WithValue(ctx, fakeWorkKey{}, k), &fakeTxWork{s: s.fakeStore, k: k, token: token}, nil
}

type fakeTxWork struct {
	s     *fakeStore
	k     server.Key
	token string
}

func (w *fakeTxWork) Commit(_ context.Context, resp server.StoredResponse, _ time.Duration) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.s.logEnd(w.k, "Commit")
	return w.s.complete(w.k, w.token, resp, w.s.failCommit)
}

func (w *fakeTxWork) Rollback(context.Context) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.s.logEnd(w.k, "Rollback")
	return nil
}

// fakeWorkClaimer is a fakeStore that is a WorkClaimer: a claim is a
// per-key mutex held by the unit of work (as a transaction holds an
// advisory lock) until its Commit or Rollback; it has no token and no
// lease. A key held by another unit of work is reported running with an
// unknown fingerprint. Its Claim, Renew, Complete and Release must not be
// used: they fail the test through the log.
type fakeWorkClaimer struct{ *fakeStore }

func (s fakeWorkClaimer) ClaimWork(ctx context.Context, k server.Key, fp string) (server.Claim, context.Context, server.Work, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[k]
	if !ok {
		r = &fakeRecord{fp: fp}
		s.records[k] = r
	}
	if !r.lock.TryLock() {
		return server.Claim{Record: server.Record{}}, nil, nil, nil // another unit of work holds k
	}
	if r.completed {
		r.lock.Unlock()
		return server.Claim{Record: r.record()}, nil, nil, nil
	}
	r.fp = fp
	w := &fakeUnit{s: s.fakeStore, k: k, r: r}
	return server.Claim{Acquired: true}, context.WithValue(ctx, fakeWorkKey{}, k), w, nil
}

// fakeUnit is a fakeWorkClaimer's unit of work.
type fakeUnit struct {
	s *fakeStore
	k server.Key
	r *fakeRecord
}

func (w *fakeUnit) Commit(_ context.Context, resp server.StoredResponse, _ time.Duration) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	defer w.r.lock.Unlock()
	w.s.logEnd(w.k, "Commit")
	if w.s.failCommit != nil {
		return w.s.failCommit
	}
	w.r.completed, w.r.resp = true, resp
	return nil
}

func (w *fakeUnit) Rollback(context.Context) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	defer w.r.lock.Unlock()
	w.s.logEnd(w.k, "Rollback")
	return nil
}

// errStore is the failure a fake store injects.
var errStore = errors.New("store: secret failure")
