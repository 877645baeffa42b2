// Package cachestore keeps, in front of a shared store, a per-process
// cache of completed records, so that repeats of a completed key are
// answered without a round trip to the store.
//
// The canonical call sequence:
//
//	shared, _ := pgstore.New(pool, pgstore.Options{})
//	store := cachestore.New(shared, cachestore.Options{})
//	handler = server.Middleware(store, opts)(handler)
//
// Claim (and ClaimWork) answer from the cache when it holds a completed
// record of the key, and otherwise ask the store, keeping the completed
// record the store reports, if any. Only completed records are kept:
// never a running key, whose record changes when its work ends (a cached
// running record would answer 409 long after the outcome was stored).
// The first repeat of a key in a process reads the store; the later ones
// are served from memory. Renew, Complete, Release and units of work go
// to the store unchanged, and a Store is a [server.Transactor] and a
// [server.WorkClaimer] exactly as far as the store it wraps is: pgstore's
// transactional mode stays transactional behind it.
//
// # Staleness
//
// A completed record never changes until it expires: the store contract
// lets no claim acquire a completed key inside its retention, and every
// claim of it reports the same record. So a cached record is the record
// the store holds, with two exceptions, both bounded by the record's own
// expiry:
//
//   - past its ExpiresAt the store would let a new request claim the key
//     afresh, so an entry is never served at or after its ExpiresAt (by
//     this process's clock: a clock behind the store's serves a replay
//     for as long as it lags, where the store would run the request
//     again; a retention is a minimum, so that is safe);
//   - a record deleted from the store before it expired (an operator's
//     purge, a store wiped) is still replayed by a process that cached
//     it, until its ExpiresAt, or Options.MaxAge after it was cached if
//     that is sooner, or until [Store.Forget].
//
// Each process has its own cache: another process's cache is not told of
// anything, which the rule above makes harmless.
//
// # Bounds
//
// The cache holds at most Options.MaxEntries records and Options.MaxBytes
// bytes of them, counted as their key, fingerprint, body and header take
// (see [Options]); the least recently used are dropped to make room. A
// record larger than an eighth of MaxBytes is not kept, so one large
// answer cannot empty the cache. Dropping an entry loses nothing: the
// store still holds the record.
package cachestore
