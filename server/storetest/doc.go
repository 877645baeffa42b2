// Package storetest is the conformance suite every idempotency store
// runs, so memstore, pgstore and third-party stores share one specification
// of [server.Store]. It is written on the standard testing package alone,
// as testing/fstest.TestFS is, so a store's tests need no other
// dependency.
//
// The canonical call sequence, in the store's tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) server.Store {
//			return mystore.New(...)
//		})
//	}
//
// # What it checks
//
// A free key is acquired under a token; a held key reports its running
// record; a completed key reports its response byte for byte; a different
// fingerprint never acquires a key, running, lapsed or completed; a lapsed
// lease is taken over by the same fingerprint and the old token is then
// fenced (Renew, Complete and Release return [server.ErrLeaseLost]); Renew
// extends a lease; Release frees a key; retention expiry frees a key;
// scopes are separate; exactly one of 100 concurrent claims of a fresh key
// acquires it; large, binary and empty responses round-trip. A store that
// honours a cancelled context must return its error and claim nothing.
// Stores that implement [server.Transactor] are checked for Commit and
// Rollback too, and stores that implement [server.WorkClaimer] for claims
// held by units of work, alone and meeting leases (see [Run]). A Work must
// end once: a second Commit, or a Commit after Rollback, fails and stores
// nothing, and a Rollback after Commit returns nil, so that a caller may
// defer it.
//
// # Time
//
// The store's clock may be real (PostgreSQL's now()). Leases in the suite
// are 100 ms long and waits are bounded polls, so the suite takes about a
// second; subtests run in parallel on one store, each with its own scope.
package storetest
