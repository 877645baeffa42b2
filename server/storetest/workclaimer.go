// This file holds the cases for a store that is a server.WorkClaimer:
// claims held by units of work, without token or lease.

package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"

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
