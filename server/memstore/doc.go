// Package memstore is a bounded, expiring, in-memory idempotency store for
// tests and single-process services, with no dependencies beyond the
// standard library.
//
// The canonical call sequence:
//
//	store := memstore.New(memstore.Options{})
//	handler = server.Middleware(store, server.Options{SingleTenant: true})(handler)
//
// # Bounds
//
// The store holds at most Options.MaxKeys records (default 100,000). When
// it is full, a new key makes room by forgetting expired records first,
// then the completed record that expires first (the oldest, when every
// record has the same retention); a running record is never forgotten to
// make room, so a store full of running keys answers [ErrFull] (which the
// middleware turns into 503).
//
// # Expiry
//
// A completed record expires after the retention its Complete call gave;
// a running record whose lease lapsed is kept for Options.Abandon (default
// 24 h) so a retry can take it over. Expired records are forgotten lazily,
// when their key is claimed, and in passing when a new key is added: the
// completed records sit in a queue in the order they expire, and each new
// key forgets the expired ones at its front, a bounded number at a time. No goroutine is needed and no call pays for a full scan.
//
// # Time
//
// Options.Now injects the clock, for tests of leases and expiry.
package memstore
