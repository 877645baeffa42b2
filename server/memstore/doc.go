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
// The store holds at most Options.MaxKeys records (default 100,000) and
// Options.MaxBytes bytes of them (default 256 MiB), running and completed.
// It never forgets a key inside its retention to make room, since a retry
// of a forgotten key would run again: when a new key does not fit, expired
// records are forgotten, and if that is not enough the key is refused with
// [ErrFull], which the middleware answers 503 with Retry-After (nothing
// runs; a retry later is safe). Keys the store holds are always answered.
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
// the expiry heap and its lease token; the lengths of its scope, key and
// fingerprint; and once completed, its stored response: the body's
// capacity (the memory it keeps, at least its length) and, for a header,
// 320 bytes plus, per field, 64 bytes and the name's length, and per
// value, 16 bytes and its length. (Measured with Go 1.26 on amd64: a
// record holds about 225 bytes beyond its strings, body and header, and a
// header map with one field about 430 bytes; they count 256 and 428.)
//
// A running record counts its claim only, since its response is not known
// yet. An outcome is stored even if it takes the store, or its scope, over
// its byte bound: its work has happened, and losing it would run the work
// again. The bound is then exceeded by at most the responses of the keys
// that were running when it was reached, and new keys are refused until
// expired records bring the count back under.
//
// # Fair shares
//
// Since nothing is forgotten inside its retention, fairness is decided
// when a key is admitted. Each scope (a client, as the middleware's
// Options.Scope names it) may hold at most Options.ScopeMaxKeys records
// and Options.ScopeMaxBytes bytes, a quarter of the store's bounds by
// default; a new key over its scope's share is refused with
// [ErrScopeFull], which wraps [ErrFull], however much room the store has.
// So a client that floods the store with keys takes at most its share, and
// the store keeps room for the others: with the default quarter, any
// client can use its whole share while up to three others are using
// theirs (for bytes, less the overshoot of their last responses, see
// Bounds). The empty scope (server.Options.SingleTenant) is limited by the
// store's bounds only: a single-tenant service has the whole store. A
// multi-tenant service with few clients may raise the shares, up to the
// store's bounds, which turns them off.
//
// # Expiry
//
// A completed record expires after the retention its Complete call gave;
// a running record whose lease lapsed is kept for Options.Abandon (default
// 24 h) so a retry can take it over, and expires then. Every record sits
// in a heap in the order it expires. Expired records are forgotten lazily:
// when their key is claimed, a few at a time (at most 64) whenever a new
// key is added, and as many as a new key needs to fit. No goroutine is
// needed and no call pays for a scan: adding, renewing, completing and
// forgetting a record cost O(log n).
//
// # Time
//
// Options.Now injects the clock, for tests of leases and expiry.
package memstore
