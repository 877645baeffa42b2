// This file holds Run, the fixture each case gets, and the helpers the
// cases share.

package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemhq/idem/server"
)

// Timing of the suite. Leases are short so lapses happen quickly against
// a store with a real clock; waits are bounded polls, not fixed sleeps,
// except a short sleep where the suite must be sure a lease has lapsed.
const (
	shortLease = 100 * time.Millisecond
	longLease  = time.Minute
	retention  = time.Hour
	waitFor    = 5 * time.Second
	pollEvery  = 10 * time.Millisecond
)

// Run runs the conformance suite against the store newStore returns. It
// calls newStore once and shares the store between parallel subtests,
// each of which uses its own random scope, so the store may be shared with
// other tests too. The store's clock may be real: the suite needs about a
// second of wall time.
//
// If the store implements [server.Transactor] and its BeginWork returns a
// Work, Run also checks that Commit records an outcome fenced by the token
// and that Rollback leaves the key to be released. If it implements
// [server.WorkClaimer] and its ClaimWork does not answer
// errors.ErrUnsupported, Run also checks claims held by units of work:
// one of many concurrent ClaimWork calls acquires a key, a held key is
// running to ClaimWork and to Claim alike, Commit records, Rollback frees,
// a commit is visible to the very next claim, answers that acquire nothing
// hold nothing, and a completed record is replayed or refused by
// fingerprint whichever way it was claimed; and where ClaimWork meets
// leases: a unit running an expired record again is not taken over by
// Claim, a lapsed lease is taken over by ClaimWork with its own
// fingerprint only and its token then fenced, and of a paused owner's late
// Complete and the taking-over unit's Commit exactly one outcome is
// stored. Every Work, of either kind, ends once (a second Commit, or a
// Commit after Rollback, fails; a Rollback after Commit returns nil) and
// runs with a context that descends from the caller's.
func Run(t *testing.T, newStore func(t *testing.T) server.Store) {
	t.Helper()
	s := newStore(t)
	must(t, s != nil, "newStore returned nil")
	base := fixture{s: s}
	base.tx, _ = s.(server.Transactor)
	base.wc, _ = s.(server.WorkClaimer)
	run := func(prefix string, cs []testCase) {
		for _, c := range cs {
			t.Run(prefix+c.name, func(t *testing.T) {
				t.Parallel()
				f := base
				f.t, f.scope = t, "scope-"+random(t)
				c.run(t, f)
			})
		}
	}
	run("", cases())
	if base.tx != nil {
		run("Transactor/", transactorCases())
	}
	if base.wc != nil {
		run("WorkClaimer/", workClaimerCases())
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, f fixture)
}

// fixture is one subtest's view of the store.
type fixture struct {
	t     *testing.T
	s     server.Store
	tx    server.Transactor  // nil unless s is one
	wc    server.WorkClaimer // likewise
	scope string
}

func (f fixture) key() server.Key { return server.Key{Scope: f.scope, Key: random(f.t)} }

// claim claims k and fails the test on a store error.
func (f fixture) claim(k server.Key, fp string, lease time.Duration) server.Claim {
	f.t.Helper()
	c, err := f.s.Claim(context.Background(), k, fp, lease)
	noError(f.t, err, "Claim")
	return c
}

// acquire claims a fresh claim on k and fails the test unless it is acquired.
func (f fixture) acquire(k server.Key, fp string, lease time.Duration) string {
	f.t.Helper()
	c := f.claim(k, fp, lease)
	must(f.t, c.Acquired, "Claim on a free key must acquire it")
	must(f.t, !c.TakenOver, "a free key is not taken over")
	must(f.t, c.Token != "", "an acquired claim carries a token")
	return c.Token
}

// complete acquires k and completes it with resp.
func (f fixture) complete(k server.Key, fp string, resp server.StoredResponse) {
	f.t.Helper()
	token := f.acquire(k, fp, longLease)
	noError(f.t, f.s.Complete(context.Background(), k, token, resp, retention), "Complete")
}

// eventuallyAcquired polls Claim until it acquires k and returns the
// claim.
func (f fixture) eventuallyAcquired(k server.Key, fp string, lease time.Duration) server.Claim {
	f.t.Helper()
	var got server.Claim
	eventually(f.t, "the key never became acquirable", func() bool {
		got = f.claim(k, fp, lease)
		return got.Acquired
	})
	return got
}

// requireRunning checks that c reports k running under fingerprint fp.
func requireRunning(t *testing.T, c server.Claim, fp string) {
	t.Helper()
	must(t, !c.Acquired, "a held key must not be acquired again")
	check(t, c.Token == "", "a claim that did not acquire carries no token, got %q", c.Token)
	equal(t, fp, c.Record.Fingerprint, "Record.Fingerprint")
	check(t, !c.Record.Completed, "Record.Completed is set on a running record")
	check(t, !c.Record.LeaseExpires.IsZero(), "a running record has a lease expiry")
}

// requireCompleted checks that c reports the stored outcome want.
func requireCompleted(t *testing.T, c server.Claim, fp string, want server.StoredResponse) {
	t.Helper()
	must(t, !c.Acquired, "a completed key must not be acquired again")
	must(t, c.Record.Completed, "Record.Completed is not set on a completed record")
	equal(t, fp, c.Record.Fingerprint, "Record.Fingerprint")
	check(t, c.Record.LeaseExpires.IsZero(), "a completed record has no lease, got LeaseExpires %v", c.Record.LeaseExpires)
	check(t, !c.Record.ExpiresAt.IsZero(), "a completed record has an expiry")
	requireResponse(t, want, c.Record.Response)
}

// requireResponse compares stored responses: status, headers (an empty
// header equals a nil one) and body byte for byte (an empty body equals a
// nil one).
func requireResponse(t *testing.T, want, got server.StoredResponse) {
	t.Helper()
	equal(t, want.Status, got.Status, "Response.Status")
	if len(want.Header) == 0 {
		check(t, len(got.Header) == 0, "Response.Header: want none, got %v", got.Header)
	} else {
		equal(t, want.Header, got.Header, "Response.Header")
	}
	must(t, len(want.Body) == len(got.Body), "Response.Body length: want %d, got %d", len(want.Body), len(got.Body))
	if len(want.Body) > 0 {
		must(t, string(want.Body) == string(got.Body), "Response.Body differs")
	}
}

// random returns 32 random hex characters.
func random(t *testing.T) string {
	b := make([]byte, 16)
	_, err := rand.Read(b)
	noError(t, err, "crypto/rand")
	return hex.EncodeToString(b)
}

// sampleResponse is a stored outcome with repeated and odd header fields.
func sampleResponse() server.StoredResponse {
	return server.StoredResponse{
		Status: http.StatusCreated,
		Header: http.Header{
			"Content-Type": {"application/json"},
			"Location":     {"/orders/42"},
			"X-Multi":      {"one", "two", "three"},
			"X-Quote":      {`it's "quoted" \ and; semi, comma`},
		},
		Body: []byte(`{"id":42,"note":"it's \"quoted\""}`),
	}
}

// stampede makes n claims of k with fingerprint "fp" at once, released
// together, and returns how many acquired it.
func (f fixture) stampede(k server.Key, n int) int {
	return f.together(n, func() (bool, error) {
		c, err := f.s.Claim(context.Background(), k, "fp", longLease)
		return c.Acquired, err
	})
}

// together makes n calls of claim at once, released together, and returns
// how many acquired; a call's error fails the test.
func (f fixture) together(n int, claim func() (acquired bool, err error)) int {
	var acquired atomic.Int32
	var start, done sync.WaitGroup
	start.Add(1)
	for range n {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			ok, err := claim()
			switch {
			case err != nil:
				f.t.Errorf("claim: %v", err)
			case ok:
				acquired.Add(1)
			}
		}()
	}
	start.Done()
	done.Wait()
	return int(acquired.Load())
}

// oddKey is a key of MaxKeyLen characters full of characters that
// break careless quoting.
var oddKey = strings.Repeat(`'"\%_;-- `, 29)[:server.MaxKeyLen]
