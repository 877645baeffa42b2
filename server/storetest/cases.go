// This file holds the cases every store runs, and those of a
// server.Transactor.

package storetest

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/idemhq/idem/server"
)

// cases are the behaviours every store shares.
func cases() []testCase {
	return []testCase{
		{"NewKeyAcquired", func(t *testing.T, f fixture) {
			k := f.key()
			f.acquire(k, "fp", longLease)
		}},
		{"RepeatWhileRunningReportsRecord", func(t *testing.T, f fixture) {
			k := f.key()
			before := time.Now()
			f.acquire(k, "fp", longLease)
			c := f.claim(k, "fp", longLease)
			requireRunning(t, c, "fp")
			check(t, c.Record.LeaseExpires.After(before.Add(longLease/2)),
				"LeaseExpires %v is not about a lease from now", c.Record.LeaseExpires)
		}},
		{"RepeatedFieldsKeptApart", testRepeatedFieldsKeptApart},
		{"CompleteThenRepeatReportsResponse", func(t *testing.T, f fixture) {
			k := f.key()
			want := sampleResponse()
			f.complete(k, "fp", want)
			requireCompleted(t, f.claim(k, "fp", longLease), "fp", want)
		}},
		{"CompletedIgnoresLeaseLapse", func(t *testing.T, f fixture) {
			k := f.key()
			token := f.acquire(k, "fp", shortLease)
			noError(t, f.s.Complete(context.Background(), k, token, sampleResponse(), retention), "Complete")
			time.Sleep(2 * shortLease)
			requireCompleted(t, f.claim(k, "fp", shortLease), "fp", sampleResponse())
		}},
		{"DifferentFingerprintWhileRunning", func(t *testing.T, f fixture) {
			k := f.key()
			f.acquire(k, "fp-a", longLease)
			requireRunning(t, f.claim(k, "fp-b", longLease), "fp-a")
		}},
		{"DifferentFingerprintWhenCompleted", func(t *testing.T, f fixture) {
			k := f.key()
			f.complete(k, "fp-a", sampleResponse())
			requireCompleted(t, f.claim(k, "fp-b", longLease), "fp-a", sampleResponse())
		}},
		{"DifferentFingerprintAfterLapse", func(t *testing.T, f fixture) {
			k := f.key()
			f.acquire(k, "fp-a", shortLease)
			time.Sleep(2 * shortLease)
			requireRunning(t, f.claim(k, "fp-b", shortLease), "fp-a")
			c := f.eventuallyAcquired(k, "fp-a", longLease)
			check(t, c.TakenOver, "the same fingerprint takes a lapsed lease over")
			requireRunning(t, f.claim(k, "fp-b", shortLease), "fp-a")
		}},
		{"LapsedLeaseTakenOver", testTakeover},
		{"StaleRenewChangesNothing", testStaleRenew},
		{"CompleteRacesTakeover", testCompleteRacesTakeover},
		{"RenewExtendsLease", func(t *testing.T, f fixture) {
			// Margins of a few hundred milliseconds on each side, so a
			// loaded machine (-race, parallel subtests) cannot flip it.
			k := f.key()
			lease := 3 * shortLease
			start := time.Now()
			token := f.acquire(k, "fp", lease)
			noError(t, f.s.Renew(context.Background(), k, token, 4*lease), "Renew")
			time.Sleep(time.Until(start.Add(2 * lease)))
			requireRunning(t, f.claim(k, "fp", lease), "fp")
			c := f.eventuallyAcquired(k, "fp", longLease)
			check(t, c.TakenOver, "TakenOver after the renewed lease lapsed")
		}},
		{"ReleaseThenReclaim", func(t *testing.T, f fixture) {
			k := f.key()
			old := f.acquire(k, "fp", longLease)
			noError(t, f.s.Release(context.Background(), k, old), "Release")
			f.acquire(k, "fp", longLease)
			requireLost(t, f.s.Release(context.Background(), k, old), "Release with a released token")
			requireLost(t, f.s.Renew(context.Background(), k, old, longLease), "Renew with a released token")
		}},
		{"ReleaseThenOtherFingerprint", func(t *testing.T, f fixture) {
			k := f.key()
			token := f.acquire(k, "fp-a", longLease)
			noError(t, f.s.Release(context.Background(), k, token), "Release")
			token = f.acquire(k, "fp-b", longLease)
			requireRunning(t, f.claim(k, "fp-a", longLease), "fp-b")
			noError(t, f.s.Complete(context.Background(), k, token, sampleResponse(), retention), "Complete")
			// The record is fp-b's: fp-b is replayed, fp-a is told so.
			requireCompleted(t, f.claim(k, "fp-b", longLease), "fp-b", sampleResponse())
			requireCompleted(t, f.claim(k, "fp-a", longLease), "fp-b", sampleResponse())
		}},
		{"OtherFingerprintChangesNothing", func(t *testing.T, f fixture) {
			// A claim with another fingerprint only reads: it does not
			// extend the lapsed lease it finds, so the owner's retry can
			// still take the key over.
			k := f.key()
			f.acquire(k, "fp-a", shortLease)
			time.Sleep(2 * shortLease)
			requireRunning(t, f.claim(k, "fp-b", longLease), "fp-a")
			c := f.claim(k, "fp-a", longLease)
			check(t, c.Acquired && c.TakenOver, "the lapsed lease is still lapsed")
		}},
		{"CompleteWrongToken", func(t *testing.T, f fixture) {
			k := f.key()
			token := f.acquire(k, "fp", longLease)
			requireLost(t, f.s.Complete(context.Background(), k, "not-"+token, sampleResponse(), retention),
				"Complete with a wrong token")
			requireRunning(t, f.claim(k, "fp", longLease), "fp")
			requireLost(t, f.s.Renew(context.Background(), k, "not-"+token, longLease), "Renew with a wrong token")
			requireLost(t, f.s.Release(context.Background(), k, "not-"+token), "Release with a wrong token")
			noError(t, f.s.Complete(context.Background(), k, token, sampleResponse(), retention), "Complete with the right token")
		}},
		{"CompleteTwice", func(t *testing.T, f fixture) {
			k := f.key()
			token := f.acquire(k, "fp", longLease)
			noError(t, f.s.Complete(context.Background(), k, token, sampleResponse(), retention), "Complete")
			other := server.StoredResponse{Status: http.StatusTeapot, Body: []byte("other")}
			requireLost(t, f.s.Complete(context.Background(), k, token, other, retention), "a second Complete")
			requireLost(t, f.s.Renew(context.Background(), k, token, longLease), "Renew after Complete")
			requireLost(t, f.s.Release(context.Background(), k, token), "Release after Complete")
			requireCompleted(t, f.claim(k, "fp", longLease), "fp", sampleResponse())
		}},
		{"NeverClaimed", func(t *testing.T, f fixture) {
			k := f.key()
			ctx := context.Background()
			requireLost(t, f.s.Complete(ctx, k, "token", sampleResponse(), retention), "Complete")
			requireLost(t, f.s.Renew(ctx, k, "token", longLease), "Renew")
			requireLost(t, f.s.Release(ctx, k, "token"), "Release")
			f.acquire(k, "fp", longLease)
		}},
		{"RetentionKept", func(t *testing.T, f fixture) {
			// A record completed for an hour reports that expiry and is
			// still there well after the suite's short leases.
			k := f.key()
			token := f.acquire(k, "fp", longLease)
			before := time.Now()
			noError(t, f.s.Complete(context.Background(), k, token, sampleResponse(), retention), "Complete")
			c := f.claim(k, "fp", longLease)
			requireCompleted(t, c, "fp", sampleResponse())
			check(t, within(before.Add(retention), c.Record.ExpiresAt, time.Minute),
				"Record.ExpiresAt %v is not within a minute of %v", c.Record.ExpiresAt, before.Add(retention))
			time.Sleep(1500 * time.Millisecond)
			requireCompleted(t, f.claim(k, "fp", longLease), "fp", sampleResponse())
		}},
		{"RetentionExpiry", func(t *testing.T, f fixture) {
			k := f.key()
			token := f.acquire(k, "fp-a", longLease)
			noError(t, f.s.Complete(context.Background(), k, token, sampleResponse(), shortLease), "Complete")
			c := f.eventuallyAcquired(k, "fp-b", longLease)
			check(t, !c.TakenOver, "an expired record is not taken over, it is gone")
		}},
		{"ScopesAreSeparate", func(t *testing.T, f fixture) {
			key := random(t)
			for _, scope := range []string{f.scope, f.scope + "-other", ""} {
				f.acquire(server.Key{Scope: scope, Key: key}, "fp", longLease)
			}
			f.acquire(server.Key{Scope: f.scope, Key: key + "x"}, "fp", longLease)
			// Scope and key are two fields, not one string.
			f.acquire(server.Key{Scope: f.scope + "ab", Key: "c" + key}, "fp", longLease)
			f.acquire(server.Key{Scope: f.scope + "a", Key: "bc" + key}, "fp", longLease)
		}},
		{"ConcurrentClaims", func(t *testing.T, f fixture) {
			k := f.key()
			if n := f.stampede(k, 100); n != 1 {
				t.Errorf("%d of 100 concurrent claims acquired one fresh key; want 1", n)
			}
		}},
		{"ConcurrentTakeover", func(t *testing.T, f fixture) {
			k := f.key()
			f.acquire(k, "fp", shortLease)
			time.Sleep(2 * shortLease)
			if n := f.stampede(k, 50); n != 1 {
				t.Errorf("%d of 50 concurrent claims took one lapsed key over; want 1", n)
			}
		}},
		{"LargeBody", func(t *testing.T, f fixture) {
			body := bytes.Repeat([]byte("0123456789abcdef"), 1<<17) // 2 MiB
			roundTrip(t, f, server.StoredResponse{Status: http.StatusOK, Body: body})
		}},
		{"BinaryBody", func(t *testing.T, f fixture) {
			body := make([]byte, 0, 512)
			for i := range 512 {
				body = append(body, byte(i))
			}
			roundTrip(t, f, server.StoredResponse{Status: http.StatusOK, Header: http.Header{}, Body: body})
		}},
		{"EmptyResponse", func(t *testing.T, f fixture) {
			roundTrip(t, f, server.StoredResponse{Status: http.StatusNoContent})
		}},
		{"OddKey", func(t *testing.T, f fixture) {
			k := server.Key{Scope: f.scope + ` 'ü" \`, Key: oddKey}
			f.complete(k, "fp", sampleResponse())
			requireCompleted(t, f.claim(k, "fp", longLease), "fp", sampleResponse())
		}},
		{"CancelledContext", func(t *testing.T, f fixture) {
			k := f.key()
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			c, err := f.s.Claim(ctx, k, "fp", longLease)
			if err == nil {
				// A store that ignores ctx must still behave.
				must(t, c.Acquired, "Claim on a free key must acquire it")
				return
			}
			check(t, errors.Is(err, context.Canceled), "Claim with a cancelled context: want context.Canceled, got %v", err)
			f.acquire(k, "fp", longLease)
		}},
	}
}

// testTakeover checks that a lapsed lease is taken over with the same
// fingerprint and that the old token is then fenced off.
func testTakeover(t *testing.T, f fixture) {
	k := f.key()
	old := f.acquire(k, "fp", shortLease)
	c := f.eventuallyAcquired(k, "fp", longLease)
	check(t, c.TakenOver, "TakenOver")
	must(t, old != c.Token, "a takeover issues a new token")
	ctx := context.Background()
	requireLost(t, f.s.Renew(ctx, k, old, longLease), "Renew with the old token")
	requireLost(t, f.s.Complete(ctx, k, old, sampleResponse(), retention), "Complete with the old token")
	requireLost(t, f.s.Release(ctx, k, old), "Release with the old token")
	requireRunning(t, f.claim(k, "fp", longLease), "fp")
	noError(t, f.s.Renew(ctx, k, c.Token, longLease), "Renew with the new token")
	noError(t, f.s.Complete(ctx, k, c.Token, sampleResponse(), retention), "Complete with the new token")
	requireCompleted(t, f.claim(k, "fp", longLease), "fp", sampleResponse())
}

// testStaleRenew checks that a renewal with a token that was taken over
// fails without touching the new owner's lease: the new owner, if it
// crashes, can still be taken over when its own short lease lapses.
func testStaleRenew(t *testing.T, f fixture) {
	k := f.key()
	old := f.acquire(k, "fp", shortLease)
	c := f.eventuallyAcquired(k, "fp", shortLease)
	must(t, c.TakenOver, "TakenOver")
	requireLost(t, f.s.Renew(context.Background(), k, old, longLease), "Renew with the old token")
	next := f.eventuallyAcquired(k, "fp", longLease)
	check(t, next.TakenOver, "the new owner's short lease lapsed as it was")
}

// testCompleteRacesTakeover races a stale owner's Complete against a
// takeover of its lapsed lease, many times: exactly one may win each race,
// and the winner's outcome stands.
func testCompleteRacesTakeover(t *testing.T, f fixture) {
	for i := range 20 {
		k := f.key()
		old := f.acquire(k, "fp", shortLease)
		time.Sleep(shortLease + 10*time.Millisecond)
		var (
			wg        sync.WaitGroup
			completed error
			taken     server.Claim
		)
		start := make(chan struct{})
		complete := func() {
			<-start
			completed = f.s.Complete(context.Background(), k, old, sampleResponse(), retention)
		}
		claim := func() {
			<-start
			if i%4 >= 2 {
				time.Sleep(time.Millisecond) // now and then, into the middle of Complete
			}
			taken = f.claim(k, "fp", longLease)
		}
		if i%2 == 0 { // either may be scheduled first
			wg.Go(complete)
			wg.Go(claim)
		} else {
			wg.Go(claim)
			wg.Go(complete)
		}
		close(start)
		wg.Wait()
		switch {
		case completed == nil:
			must(t, !taken.Acquired, "the stale owner completed and the key was taken over too")
			requireCompleted(t, f.claim(k, "fp", longLease), "fp", sampleResponse())
		case taken.Acquired:
			requireLost(t, completed, "the stale owner's Complete after the takeover")
			requireRunning(t, f.claim(k, "fp", longLease), "fp")
			noError(t, f.s.Complete(context.Background(), k, taken.Token, sampleResponse(), retention), "the new owner completes")
		default:
			t.Fatalf("neither the stale Complete (%v) nor the takeover won", completed)
		}
	}
}

// roundTrip completes a fresh key with want and reads it back.
func roundTrip(t *testing.T, f fixture, want server.StoredResponse) {
	k := f.key()
	f.complete(k, "fp", want)
	requireCompleted(t, f.claim(k, "fp", longLease), "fp", want)
}

func requireLost(t *testing.T, err error, what string) {
	t.Helper()
	must(t, err != nil, "%s must fail", what)
	must(t, errors.Is(err, server.ErrLeaseLost), "%s: want ErrLeaseLost, got %v", what, err)
}

// begin begins the work of k under token, and skips the test if the store
// runs work outside any transaction (a nil Work).
func (f fixture) begin(k server.Key, token string) (context.Context, server.Work) {
	f.t.Helper()
	ctx, work, err := f.tx.BeginWork(context.Background(), k, token)
	noError(f.t, err, "BeginWork")
	if work == nil {
		noError(f.t, f.s.Release(context.Background(), k, token), "Release")
		f.t.Skip("the store runs work outside any transaction")
	}
	f.t.Cleanup(func() { _ = work.Rollback(context.Background()) }) // as claimWork's
	return ctx, work
}

// transactorCases check a store's unit of work.
func transactorCases() []testCase {
	return []testCase{
		{"CommitRecords", func(t *testing.T, f fixture) {
			k := f.key()
			token := f.acquire(k, "fp", longLease)
			ctx, work := f.begin(k, token)
			must(t, ctx != nil, "BeginWork returned a nil context")
			noError(t, work.Commit(context.Background(), sampleResponse(), retention), "Commit")
			requireCompleted(t, f.claim(k, "fp", longLease), "fp", sampleResponse())
		}},
		{"CommitFencedAfterTakeover", func(t *testing.T, f fixture) {
			// The work of an owner whose lapsed lease was taken over
			// commits nothing, and the new owner's outcome stands.
			k := f.key()
			token := f.acquire(k, "fp", shortLease)
			_, work := f.begin(k, token)
			c := f.eventuallyAcquired(k, "fp", longLease)
			must(t, c.TakenOver, "TakenOver")
			stale := server.StoredResponse{Status: http.StatusTeapot, Body: []byte("stale")}
			requireLost(t, work.Commit(context.Background(), stale, retention), "Commit after a takeover")
			noError(t, f.s.Complete(context.Background(), k, c.Token, sampleResponse(), retention), "the new owner completes")
			requireCompleted(t, f.claim(k, "fp", longLease), "fp", sampleResponse())
		}},
		{"WorkEndsOnce", func(t *testing.T, f fixture) {
			testWorkEndsOnce(t, f, func(k server.Key) server.Work {
				_, work := f.transactorWork(context.Background(), k)
				return work
			})
		}},
		{"ContextDescends", func(t *testing.T, f fixture) {
			testContextDescends(t, f, f.transactorWork)
		}},
		{"RollbackThenRelease", func(t *testing.T, f fixture) {
			k := f.key()
			token := f.acquire(k, "fp", longLease)
			_, work := f.begin(k, token)
			noError(t, work.Rollback(context.Background()), "Rollback")
			noError(t, f.s.Release(context.Background(), k, token), "Release")
			f.acquire(k, "fp", longLease)
		}},
	}
}
