// Package memstore is a bounded, expiring, in-memory idempotency store for
// tests and single-process services, with no dependencies beyond the
// standard library.
//
// The canonical call sequence:
//
//	store := memstore.New(memstore.Options{})
//	handler = server.Middleware(store, server.Options{SingleTenant: true})(handler)
//
// Records live in the process: they are lost when it exits, and two
// processes do not share them. A service with more than one process, or
// whose keys must outlive a restart, needs a shared store (pgstore).
//
// # Bounds
//
// The store holds at most Options.MaxKeys records (default 100,000),
// running and completed, and Options.MaxBytes bytes of them (default
// 256 MiB), exceeded only by what outcomes add beyond what their keys
// reserved (see below).
// It never forgets a key inside its retention to make room, since a retry
// of a forgotten key would run again: when a new key does not fit, expired
// records are forgotten, and if that is not enough the key is refused with
// [ErrFull], which wraps server.ErrStoreFull: the middleware answers it
// 503 with server.ProblemStoreFull and Retry-After: 30 (nothing runs; a
// retry later is safe). Keys the store holds are always answered.
// A full store admits new keys again as its records expire, so its history
// is bounded: to take every new key, it must hold the new keys of a whole
// retention. 100,000 keys cover 24 h at 1.16 new keys a second; at 100 a
// second, 24 h needs 8.64 million keys and gigabytes of memory, so a
// shorter retention or a shared store. With small answers MaxKeys is
// reached first (100,000 records of a short JSON answer count about
// 85 MB); MaxBytes bounds large ones.
//
// A record counts the bytes it holds, approximately as the Go heap holds
// them: [RecordOverhead] (256) for the record, its map entry, its place in
// its scope's expiry heap and its lease token; the lengths of its scope,
// key and fingerprint; and once completed, its stored response: the body's
// capacity (the memory it keeps, at least its length) and, for a header,
// 320 bytes plus, per field, 64 bytes and the name's length, and per
// value, 16 bytes and its length. (Measured with Go 1.26 on amd64: a
// record holds about 225 bytes beyond its strings, body and header, and a
// header map with one field about 430 bytes; they count 256 and 428.)
//
// A running record's response is not known yet: it counts
// Options.RunningReserve in its place (default 4 KiB, at most a sixteenth
// of the smaller byte bound), and Complete replaces the reserve with what
// the response counts. A new key is admitted if, with it counted running,
// the store holds at most MaxKeys records, its scope at most its share
// (see Fair shares), and the store counts at most MaxBytes bytes, each
// named scope counting no more than ScopeMaxBytes towards them. An outcome
// is stored even if its response counts more than the reserve and takes
// its scope, or the store, over its byte bound: its work has happened, and
// losing it would run the work again. So every byte past a bound is a
// stored response's excess over the reserve:
//
//	Store.Bytes() <= MaxBytes + Σ max(0, response - RunningReserve)
//	a named scope's bytes <= ScopeMaxBytes + Σ max(0, response - RunningReserve)
//
// the sums taken over the completed records the store, or the scope,
// holds. A store whose answers count less than the reserve is never over.
// A scope over its share has its new keys refused until expired records
// bring it back under, but counts only its share against MaxBytes, so it
// does not take the other scopes' room; the empty scope counts all it
// holds.
//
// Memory the store no longer uses is not all returned: the records map
// keeps the room of its largest size, since Go maps do not shrink, for the
// records that come next. After a peak of 100,000 records, about 65 bytes
// per record of the peak stay allocated once they are all forgotten
// (measured with Go 1.26 on amd64); [Store.Bytes] does not count them. A
// scope's expiry heap shrinks back as its records are forgotten, and goes
// with its last record.
//
// # Fair shares
//
// Since nothing is forgotten inside its retention, fairness is decided
// when a key is admitted. Each named scope (a client, as the middleware's
// Options.Scope names it) may hold at most Options.ScopeMaxKeys records
// and Options.ScopeMaxBytes bytes; a new key over its scope's share is
// refused with [ErrScopeFull], which wraps [ErrFull], however much room
// the store has. By default a share is a quarter of MaxKeys, and a quarter
// of MaxBytes but at least 64 KiB (or MaxBytes, if less): in a store
// smaller than 256 KiB a share is more than a quarter of its bytes, and in
// one of 64 KiB or less it is all of them, so that a share holds records.
//
// N scopes take N shares: with the default quarter, four scopes at their
// shares fill the store, and every other scope is refused with [ErrFull]
// until records expire. The shares keep one client from filling the store:
// any client can use its whole share while up to three others are using
// theirs, for bytes as for keys, since a scope over its byte share counts
// only its share against MaxBytes. A service with many clients that must
// all be served needs a store sized for them, or smaller shares.
//
// The empty scope (server.Options.SingleTenant) has no share, even in a
// store shared with named scopes: it is limited by the store's bounds
// only, counts all it holds against them, and can take the room the
// shares leave to named scopes. A single-tenant service has the whole
// store. A multi-tenant service with few clients may raise the shares, up
// to the store's bounds, which turns them off.
//
// # Expiry
//
// A completed record expires after the retention its Complete call gave;
// a running record whose lease lapsed is kept for Options.Abandon (default
// 24 h) so a retry can take it over, and expires then. Each scope keeps
// its records in a heap in the order they expire, and the store keeps the
// scopes in a heap in the order their first records expire. Expired
// records are forgotten lazily: when their key is claimed; a few at a time
// (at most 64, those that expired first) whenever a new key is added; and,
// when a new key does not fit, those that can make room for it, as many as
// it needs: its scope's own while the scope is over its share, since no
// other scope's record can make room in a share, else the store's. A claim
// refused by its scope's share so forgets at most 64 records of other
// scopes. No goroutine is needed and no call pays for a scan: adding,
// renewing, completing and forgetting a record cost O(log n).
//
// # Time
//
// Options.Now injects the clock, for tests of leases and expiry. Records
// expire as time.Time.Before compares times: by the monotonic clock when
// both carry its reading, as time.Now's do, so a step of the wall clock
// neither forgets records early nor stalls their forgetting.
package memstore
