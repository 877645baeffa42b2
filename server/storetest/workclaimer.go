// This file holds the cases for a store that is a server.WorkClaimer:
// claims held by units of work, without token or lease.

package storetest

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemhq/idem/server"
)

// claimWork calls ClaimWork and stops the test on an error. It skips the
// test if the store does not claim keys within units of work (it answers
// errors.ErrUnsupported). An acquired answer carries a context and a Work
// and no token; any other carries neither.
func (f fixture) claimWork(ctx context.Context, k server.Key, fp string) (server.Claim, server.Work) {
	f.t.Helper()
	c, wctx, work, err := f.wc.ClaimWork(ctx, k, fp)
	if errors.Is(err, errors.ErrUnsupported) {
		f.t.Skip("the store does not claim keys within units of work")
	}
	noError(f.t, err, "ClaimWork")
	if c.Acquired {
		must(f.t, wctx != nil && work != nil, "an acquired ClaimWork returns a context and a Work")
		// A test that stops early must not leave the unit holding what
		// the store's cleanup waits for; a Work that ended ignores it.
		f.t.Cleanup(func() { _ = work.Rollback(context.Background()) })
		check(f.t, c.Token == "", "a claim held by a unit of work carries no token, got %q", c.Token)
	} else {
		check(f.t, wctx == nil && work == nil, "a ClaimWork that did not acquire returns no context and no Work")
	}
	return c, work
}

// acquireWork claims k with ClaimWork and stops the test unless it
// acquired it.
func (f fixture) acquireWork(k server.Key, fp string) server.Work {
	f.t.Helper()
	c, work := f.claimWork(context.Background(), k, fp)
	must(f.t, c.Acquired, "ClaimWork on a free key must acquire it")
	must(f.t, !c.TakenOver, "a free key is not taken over")
	return work
}

// requireHeld checks that c reports k running, held by a request with
// fingerprint fp or by one the store cannot name (an empty fingerprint).
func requireHeld(t *testing.T, c server.Claim, fp string) {
	t.Helper()
	must(t, !c.Acquired, "a held key must not be acquired again")
	check(t, c.Token == "", "a claim that did not acquire carries no token, got %q", c.Token)
	check(t, !c.Record.Completed, "Record.Completed is set on a running record")
	check(t, c.Record.Fingerprint == fp || c.Record.Fingerprint == "",
		"Record.Fingerprint of a held key: want %q or empty, got %q", fp, c.Record.Fingerprint)
}

// workClaimerCases check claims held by a store's units of work.
func workClaimerCases() []testCase {
	bg := context.Background()
	return []testCase{
		{"CommitRecords", func(t *testing.T, f fixture) {
			k := f.key()
			noError(t, f.acquireWork(k, "fp").Commit(bg, sampleResponse(), retention), "Commit")
			c, _ := f.claimWork(bg, k, "fp")
			requireCompleted(t, c, "fp", sampleResponse())
			requireCompleted(t, f.claim(k, "fp", longLease), "fp", sampleResponse())
		}},
		{"HeldIsRunning", func(t *testing.T, f fixture) {
			// While a unit of work holds a key, neither ClaimWork nor
			// Claim acquires it, whatever the fingerprint.
			k := f.key()
			work := f.acquireWork(k, "fp")
			for _, fp := range []string{"fp", "fp-b"} {
				c, _ := f.claimWork(bg, k, fp)
				requireHeld(t, c, "fp")
				requireHeld(t, f.claim(k, fp, longLease), "fp")
			}
			noError(t, work.Commit(bg, sampleResponse(), retention), "Commit")
			requireCompleted(t, f.claim(k, "fp", longLease), "fp", sampleResponse())
		}},
		{"LeaseClaimIsRunning", func(t *testing.T, f fixture) {
			// A key claimed with Claim is running to ClaimWork until it
			// is completed, then replayed.
			k := f.key()
			token := f.acquire(k, "fp", longLease)
			c, _ := f.claimWork(bg, k, "fp")
			requireHeld(t, c, "fp")
			noError(t, f.s.Complete(bg, k, token, sampleResponse(), retention), "Complete")
			c, _ = f.claimWork(bg, k, "fp")
			requireCompleted(t, c, "fp", sampleResponse())
		}},
		{"RollbackFrees", func(t *testing.T, f fixture) {
			k := f.key()
			noError(t, f.acquireWork(k, "fp").Rollback(bg), "Rollback")
			noError(t, f.acquireWork(k, "fp-b").Rollback(bg), "Rollback after another fingerprint's")
			token := f.acquire(k, "fp", longLease)
			noError(t, f.s.Release(bg, k, token), "Release")
		}},
		{"DifferentFingerprintWhenCompleted", func(t *testing.T, f fixture) {
			k := f.key()
			noError(t, f.acquireWork(k, "fp-a").Commit(bg, sampleResponse(), retention), "Commit")
			c, _ := f.claimWork(bg, k, "fp-b")
			requireCompleted(t, c, "fp-a", sampleResponse())
		}},
		{"ConcurrentClaims", func(t *testing.T, f fixture) {
			noError(t, f.acquireWork(f.key(), "fp").Rollback(bg), "Rollback") // skips a store that does not claim so
			k := f.key()
			var mu sync.Mutex
			var works []server.Work
			n := f.together(50, func() (bool, error) {
				c, _, work, err := f.wc.ClaimWork(bg, k, "fp")
				if c.Acquired && work != nil {
					mu.Lock()
					works = append(works, work)
					mu.Unlock()
				}
				return c.Acquired, err
			})
			if n != 1 {
				t.Errorf("%d of 50 concurrent ClaimWork calls acquired one fresh key; want 1", n)
			}
			for _, w := range works {
				noError(t, w.Commit(bg, sampleResponse(), retention), "Commit")
			}
		}},
		{"RetentionExpiry", func(t *testing.T, f fixture) {
			k := f.key()
			noError(t, f.acquireWork(k, "fp-a").Commit(bg, sampleResponse(), shortLease), "Commit")
			var work server.Work
			eventually(t, "the expired key never became acquirable", func() bool {
				var c server.Claim
				c, work = f.claimWork(bg, k, "fp-b")
				return c.Acquired
			})
			noError(t, work.Rollback(bg), "Rollback")
		}},
		{"ScopesAreSeparate", func(t *testing.T, f fixture) {
			key := random(t)
			a := f.acquireWork(server.Key{Scope: f.scope, Key: key}, "fp")
			b := f.acquireWork(server.Key{Scope: f.scope + "-other", Key: key}, "fp")
			noError(t, a.Rollback(bg), "Rollback")
			noError(t, b.Rollback(bg), "Rollback")
		}},
		{"CommitVisibleToNextClaim", testCommitVisible},
		{"WorkRerunningExpiredRecord", func(t *testing.T, f fixture) {
			// A unit of work that runs a key again after its record's
			// retention ended holds it: Claim neither takes the expired
			// record over nor the key from the unit.
			k := f.key()
			noError(t, f.acquireWork(k, "fp").Commit(bg, sampleResponse(), shortLease), "Commit")
			var work server.Work
			eventually(t, "the expired key never became acquirable", func() bool {
				var c server.Claim
				c, work = f.claimWork(bg, k, "fp")
				return c.Acquired
			})
			for _, fp := range []string{"fp", "fp-b"} {
				requireHeld(t, f.claim(k, fp, longLease), "fp")
			}
			again := server.StoredResponse{Status: http.StatusAccepted, Body: []byte("again")}
			noError(t, work.Commit(bg, again, retention), "Commit of the work that ran the key again")
			requireCompleted(t, f.claim(k, "fp", longLease), "fp", again)
		}},
		{"LapsedLeaseTakenOverByWork", func(t *testing.T, f fixture) {
			// A lease that lapsed is taken over by ClaimWork with the same
			// fingerprint, never with another, which is told the lease's
			// fingerprint; once the unit commits, the old token is fenced.
			k := f.key()
			old := f.acquire(k, "fp", shortLease)
			time.Sleep(2 * shortLease)
			c, _ := f.claimWork(bg, k, "fp-b")
			requireRunning(t, c, "fp")
			var work server.Work
			eventually(t, "the lapsed lease was never taken over", func() bool {
				c, work = f.claimWork(bg, k, "fp")
				return c.Acquired
			})
			check(t, c.TakenOver, "ClaimWork of a lapsed lease with its fingerprint: TakenOver")
			c, _ = f.claimWork(bg, k, "fp-b")
			requireHeld(t, c, "fp")
			requireHeld(t, f.claim(k, "fp", longLease), "fp")
			noError(t, work.Commit(bg, sampleResponse(), retention), "Commit of the unit that took over")
			stale := server.StoredResponse{Status: http.StatusTeapot, Body: []byte("stale")}
			requireLost(t, f.s.Complete(bg, k, old, stale, retention), "Complete with the lapsed lease's token")
			requireLost(t, f.s.Renew(bg, k, old, longLease), "Renew with the lapsed lease's token")
			requireLost(t, f.s.Release(bg, k, old), "Release with the lapsed lease's token")
			requireCompleted(t, f.claim(k, "fp", longLease), "fp", sampleResponse())
		}},
		{"StaleOwnerCompletesFirst", func(t *testing.T, f fixture) {
			// The owner of a lapsed lease was only paused: it completes
			// after a unit of work took its key over, and before that unit
			// commits. Exactly one outcome is stored: either the stale
			// Complete is fenced off and the unit's stands, or it is
			// stored and the unit's Commit returns ErrLeaseLost, undone.
			k := f.key()
			old := f.acquire(k, "fp", shortLease)
			time.Sleep(2 * shortLease)
			var (
				c    server.Claim
				work server.Work
			)
			eventually(t, "the lapsed lease was never taken over", func() bool {
				c, work = f.claimWork(bg, k, "fp")
				return c.Acquired
			})
			must(t, c.TakenOver, "ClaimWork of a lapsed lease with its fingerprint: TakenOver")
			first := server.StoredResponse{Status: http.StatusCreated, Body: []byte("the paused owner's")}
			second := server.StoredResponse{Status: http.StatusAccepted, Body: []byte("the unit's")}
			completed := f.s.Complete(bg, k, old, first, retention)
			committed := work.Commit(bg, second, retention)
			if completed == nil {
				requireLost(t, committed, "Commit after the paused owner's outcome was stored")
				requireCompleted(t, f.claim(k, "fp", longLease), "fp", first)
				return
			}
			requireLost(t, completed, "Complete by the paused owner after the takeover")
			noError(t, committed, "Commit of the unit that took over")
			requireCompleted(t, f.claim(k, "fp", longLease), "fp", second)
		}},
		{"WorkEndsOnce", func(t *testing.T, f fixture) {
			testWorkEndsOnce(t, f, func(k server.Key) server.Work { return f.acquireWork(k, "fp") })
		}},
		{"ContextDescends", func(t *testing.T, f fixture) {
			testContextDescends(t, f, func(ctx context.Context, k server.Key) (context.Context, server.Work) {
				c, wctx, work, err := f.wc.ClaimWork(ctx, k, "fp")
				if errors.Is(err, errors.ErrUnsupported) {
					t.Skip("the store does not claim keys within units of work")
				}
				noError(t, err, "ClaimWork")
				must(t, c.Acquired, "ClaimWork on a free key must acquire it")
				t.Cleanup(func() { _ = work.Rollback(context.Background()) }) // as claimWork's
				return wctx, work
			})
		}},
		{"RepeatsHoldNothing", func(t *testing.T, f fixture) {
			// Answers that acquire nothing hold nothing: after a hundred
			// of them, more than a store has connections, the holder's
			// Rollback frees the key for the next ClaimWork at once. The
			// calls are bounded, so a store that leaks what they took
			// fails instead of hanging.
			ctx, cancel := context.WithTimeout(bg, 2*waitFor)
			defer cancel()
			k := f.key()
			work := f.acquireWork(k, "fp")
			for i := range 100 {
				c, _ := f.claimWork(ctx, k, "fp")
				must(t, !c.Acquired, "repeat %d acquired a held key", i)
			}
			noError(t, work.Rollback(bg), "Rollback")
			c, next := f.claimWork(ctx, k, "fp")
			must(t, c.Acquired, "ClaimWork after the holder's Rollback must acquire the key")
			noError(t, next.Rollback(bg), "Rollback")
		}},
		{"CancelledContext", func(t *testing.T, f fixture) {
			k := f.key()
			ctx, cancel := context.WithCancel(bg)
			cancel()
			c, _, work, err := f.wc.ClaimWork(ctx, k, "fp")
			if errors.Is(err, errors.ErrUnsupported) {
				t.Skip("the store does not claim keys within units of work")
			}
			if err == nil {
				// A store that ignores ctx must still behave.
				must(t, c.Acquired && work != nil, "ClaimWork on a free key must acquire it")
				noError(t, work.Rollback(bg), "Rollback")
				return
			}
			check(t, errors.Is(err, context.Canceled), "ClaimWork with a cancelled context: want context.Canceled, got %v", err)
			noError(t, f.acquireWork(k, "fp").Rollback(bg), "Rollback")
		}},
	}
}

// testCommitVisible checks, over many rounds, that a unit of work's
// commit is visible to the next claim of its key: while the unit commits,
// eight others claim the key in a loop until they get an answer that is
// not "running". Each key is acquired once in all. A store whose claim
// reads the record from before the commit but finds the key free after
// it (a lookup that takes its snapshot before the lock is granted) runs
// the key a second time.
func testCommitVisible(t *testing.T, f fixture) {
	const rounds, claimers = 200, 8
	bg := context.Background()
	var again atomic.Int32
	for round := range rounds {
		k := f.key()
		work := f.acquireWork(k, "fp")
		var started, done sync.WaitGroup
		started.Add(claimers)
		for range claimers {
			done.Go(func() {
				first := true
				defer func() {
					if first {
						started.Done()
					}
				}()
				deadline := time.Now().Add(waitFor)
				for range 1 << 20 {
					c, _, w, err := f.wc.ClaimWork(bg, k, "fp")
					if first {
						started.Done()
						first = false
					}
					switch {
					case err != nil:
						t.Errorf("round %d: ClaimWork: %v", round, err)
						return
					case c.Acquired:
						again.Add(1)
						if err := w.Rollback(bg); err != nil {
							t.Errorf("round %d: Rollback: %v", round, err)
						}
						return
					case c.Record.Completed:
						return
					case time.Now().After(deadline):
						t.Errorf("round %d: the key was still running %v after its commit", round, waitFor)
						return
					}
				}
				t.Errorf("round %d: the key was still running after a million claims", round)
			})
		}
		started.Wait() // every claimer has seen the key running once
		noError(t, work.Commit(bg, sampleResponse(), retention), "Commit")
		done.Wait()
		if t.Failed() {
			break
		}
	}
	if n := again.Load(); n != 0 {
		t.Errorf("%d keys of %d were acquired again after their commit; want none", n, rounds)
	}
}
