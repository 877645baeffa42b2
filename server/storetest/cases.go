package storetest

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
			assert.True(t, c.Record.LeaseExpires.After(before.Add(longLease/2)),
				"LeaseExpires %v is not about a lease from now", c.Record.LeaseExpires)
		}},
		{"CompleteThenRepeatReportsResponse", func(t *testing.T, f fixture) {
			k := f.key()
			want := sampleResponse()
			f.complete(k, "fp", want)
			requireCompleted(t, f.claim(k, "fp", longLease), "fp", want)
		}},
		{"CompletedIgnoresLeaseLapse", func(t *testing.T, f fixture) {
			k := f.key()
			token := f.acquire(k, "fp", shortLease)
			require.NoError(t, f.s.Complete(context.Background(), k, token, sampleResponse(), retention))
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
			assert.True(t, c.TakenOver, "the same fingerprint takes a lapsed lease over")
			requireRunning(t, f.claim(k, "fp-b", shortLease), "fp-a")
		}},
		{"LapsedLeaseTakenOver", testTakeover},
		{"RenewExtendsLease", func(t *testing.T, f fixture) {
			// Margins of a few hundred milliseconds on each side, so a
			// loaded machine (-race, parallel subtests) cannot flip it.
			k := f.key()
			lease := 3 * shortLease
			start := time.Now()
			token := f.acquire(k, "fp", lease)
			require.NoError(t, f.s.Renew(context.Background(), k, token, 4*lease))
			time.Sleep(time.Until(start.Add(2 * lease)))
			requireRunning(t, f.claim(k, "fp", lease), "fp")
			c := f.eventuallyAcquired(k, "fp", longLease)
			assert.True(t, c.TakenOver, "TakenOver after the renewed lease lapsed")
		}},
		{"ReleaseThenReclaim", func(t *testing.T, f fixture) {
			k := f.key()
			old := f.acquire(k, "fp", longLease)
			require.NoError(t, f.s.Release(context.Background(), k, old))
			f.acquire(k, "fp", longLease)
			requireLost(t, f.s.Release(context.Background(), k, old), "Release with a released token")
			requireLost(t, f.s.Renew(context.Background(), k, old, longLease), "Renew with a released token")
		}},
		{"ReleaseThenOtherFingerprint", func(t *testing.T, f fixture) {
			k := f.key()
			token := f.acquire(k, "fp-a", longLease)
			require.NoError(t, f.s.Release(context.Background(), k, token))
			f.acquire(k, "fp-b", longLease)
		}},
		{"CompleteWrongToken", func(t *testing.T, f fixture) {
			k := f.key()
			token := f.acquire(k, "fp", longLease)
			requireLost(t, f.s.Complete(context.Background(), k, "not-"+token, sampleResponse(), retention),
				"Complete with a wrong token")
			requireRunning(t, f.claim(k, "fp", longLease), "fp")
			requireLost(t, f.s.Renew(context.Background(), k, "not-"+token, longLease), "Renew with a wrong token")
			requireLost(t, f.s.Release(context.Background(), k, "not-"+token), "Release with a wrong token")
			require.NoError(t, f.s.Complete(context.Background(), k, token, sampleResponse(), retention))
		}},
		{"CompleteTwice", func(t *testing.T, f fixture) {
			k := f.key()
			token := f.acquire(k, "fp", longLease)
			require.NoError(t, f.s.Complete(context.Background(), k, token, sampleResponse(), retention))
			other := server.Response{Status: http.StatusTeapot, Body: []byte("other")}
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
		{"RetentionExpiry", func(t *testing.T, f fixture) {
			k := f.key()
			token := f.acquire(k, "fp-a", longLease)
			require.NoError(t, f.s.Complete(context.Background(), k, token, sampleResponse(), shortLease))
			c := f.eventuallyAcquired(k, "fp-b", longLease)
			assert.False(t, c.TakenOver, "an expired record is not taken over, it is gone")
		}},
		{"ScopesAreSeparate", func(t *testing.T, f fixture) {
			key := random(t)
			for _, scope := range []string{f.scope, f.scope + "-other", ""} {
				f.acquire(server.Key{Scope: scope, Key: key}, "fp", longLease)
			}
			f.acquire(server.Key{Scope: f.scope, Key: key + "x"}, "fp", longLease)
		}},
		{"ConcurrentClaims", func(t *testing.T, f fixture) {
			k := f.key()
			assert.Equal(t, 1, f.stampede(k, 100), "claims that acquired one fresh key")
		}},
		{"ConcurrentTakeover", func(t *testing.T, f fixture) {
			k := f.key()
			f.acquire(k, "fp", shortLease)
			time.Sleep(2 * shortLease)
			assert.Equal(t, 1, f.stampede(k, 50), "claims that took one lapsed key over")
		}},
		{"LargeBody", func(t *testing.T, f fixture) {
			body := bytes.Repeat([]byte("0123456789abcdef"), 1<<17) // 2 MiB
			roundTrip(t, f, server.Response{Status: http.StatusOK, Body: body})
		}},
		{"BinaryBody", func(t *testing.T, f fixture) {
			body := make([]byte, 0, 512)
			for i := range 512 {
				body = append(body, byte(i))
			}
			roundTrip(t, f, server.Response{Status: http.StatusOK, Header: http.Header{}, Body: body})
		}},
		{"EmptyResponse", func(t *testing.T, f fixture) {
			roundTrip(t, f, server.Response{Status: http.StatusNoContent})
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
				require.True(t, c.Acquired, "Claim on a free key must acquire it")
				return
			}
			assert.ErrorIs(t, err, context.Canceled)
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
	assert.True(t, c.TakenOver, "TakenOver")
	require.NotEqual(t, old, c.Token, "a takeover issues a new token")
	ctx := context.Background()
	requireLost(t, f.s.Renew(ctx, k, old, longLease), "Renew with the old token")
	requireLost(t, f.s.Complete(ctx, k, old, sampleResponse(), retention), "Complete with the old token")
	requireLost(t, f.s.Release(ctx, k, old), "Release with the old token")
	requireRunning(t, f.claim(k, "fp", longLease), "fp")
	require.NoError(t, f.s.Renew(ctx, k, c.Token, longLease), "Renew with the new token")
	require.NoError(t, f.s.Complete(ctx, k, c.Token, sampleResponse(), retention), "Complete with the new token")
	requireCompleted(t, f.claim(k, "fp", longLease), "fp", sampleResponse())
}

// roundTrip completes a fresh key with want and reads it back.
func roundTrip(t *testing.T, f fixture, want server.Response) {
	k := f.key()
	f.complete(k, "fp", want)
	requireCompleted(t, f.claim(k, "fp", longLease), "fp", want)
}

func requireLost(t *testing.T, err error, what string) {
	t.Helper()
	require.Error(t, err, "%s must fail", what)
	require.True(t, errors.Is(err, server.ErrLeaseLost), "%s: want ErrLeaseLost, got %v", what, err)
}

// transactorCases check a store's unit of work.
func transactorCases() []testCase {
	return []testCase{
		{"CommitRecords", func(t *testing.T, f fixture) {
			k := f.key()
			token := f.acquire(k, "fp", longLease)
			ctx, work, err := f.tx.BeginWork(context.Background(), k, token)
			require.NoError(t, err)
			require.NotNil(t, ctx)
			require.NoError(t, work.Commit(context.Background(), sampleResponse(), retention))
			requireCompleted(t, f.claim(k, "fp", longLease), "fp", sampleResponse())
		}},
		{"RollbackThenRelease", func(t *testing.T, f fixture) {
			k := f.key()
			token := f.acquire(k, "fp", longLease)
			_, work, err := f.tx.BeginWork(context.Background(), k, token)
			require.NoError(t, err)
			require.NoError(t, work.Rollback(context.Background()))
			require.NoError(t, f.s.Release(context.Background(), k, token))
			f.acquire(k, "fp", longLease)
		}},
	}
}
