package memstore

import (
	"fmt"
	"time"

	"github.com/idemhq/idem/server"
)

// ErrFull is returned by [Store.Claim] when a new key does not fit: the
// store holds Options.MaxKeys records, or the key would take over
// Options.MaxBytes what the store counts (each named scope counting no
// more than its share, see "Bounds" in the package documentation), and no
// record that could make room has expired. Nothing is forgotten inside its
// retention to make room. It wraps [server.ErrStoreFull], so the
// middleware answers it 503 with [server.ProblemStoreFull] and
// Retry-After: 30; the request did not run, and a retry with the same key
// is safe.
var ErrFull = fmt.Errorf("idem/memstore: store full: %w", server.ErrStoreFull)

// ErrScopeFull is returned by [Store.Claim] when a new key does not fit in
// its scope's share (Options.ScopeMaxKeys, Options.ScopeMaxBytes), however
// much room the store has. It wraps [ErrFull]: errors.Is(err, ErrFull)
// and errors.Is(err, server.ErrStoreFull) hold for both.
var ErrScopeFull = fmt.Errorf("%w: the scope holds its share", ErrFull)

// What a record counts towards Options.MaxBytes (see "Bounds" in the
// package documentation): the bytes it holds, approximately as the Go heap
// holds them.
const (
	// RecordOverhead is what a record counts beyond the bytes of its
	// strings, body and header: the record itself, its map entry, its place
	// in the expiry heap and its lease token, measured on 64-bit platforms
	// and rounded up.
	RecordOverhead = 256

	headerOverhead = 320 // a stored header map's own structure and first slots
	fieldOverhead  = 64  // a field's slot in the map, and its slice's array
	valueOverhead  = 16  // a value's string header in the field's slice
)

// claimSize is what a record for k with fingerprint counts beyond its
// response, or beyond the reserve while it runs.
func claimSize(k server.Key, fingerprint string) int64 {
	return int64(RecordOverhead + len(k.Scope) + len(k.Key) + len(fingerprint))
}

// responseSize is what storing resp adds to its record's count.
func responseSize(resp server.StoredResponse) int64 {
	n := int64(cap(resp.Body))
	if resp.Header == nil {
		return n
	}
	n += headerOverhead
	for name, vals := range resp.Header {
		n += int64(fieldOverhead + len(name) + valueOverhead*len(vals))
		for _, v := range vals {
			n += int64(len(v))
		}
	}
	return n
}

// usage is one scope's records: what they count, and the order they
// expire in. A scope that holds no record has no usage.
type usage struct {
	bytes  int64
	expiry expiryHeap // the scope's records, the one that expires first in front
	index  int        // its place in Store.fronts
}

// keys is the number of records the scope holds.
func (u *usage) keys() int { return len(u.expiry) }

// admit decides, with s.mu held, whether a new key of scope that counts
// cost bytes fits, and returns its scope's usage (nil if the scope holds
// no record). It forgets up to sweepLimit expired records in passing.
// Then, while the key does not fit, it forgets the expired records that
// can make room for it: its scope's own, those that expire first first,
// while the scope is over its share, since no other scope's record can
// make room in it; else the store's, those that expire first first. A key
// that still does not fit is refused with ErrScopeFull or ErrFull. The
// empty scope is limited by the store's bounds only.
func (s *Store) admit(scope string, cost int64, now time.Time) (*usage, error) {
	s.sweep(now, sweepLimit)
	for {
		u, err := s.fits(scope, cost)
		switch {
		case err == nil:
			return u, nil
		case err == ErrScopeFull:
			if !s.reclaim(u, now) {
				return nil, err
			}
		default:
			if !s.reclaimFirst(now) {
				return nil, err
			}
		}
	}
}

// fits reports whether a new key of scope that counts cost bytes fits now,
// and returns its scope's usage. A scope over its share is told so even
// when the store is full too. The store's byte bound is checked against
// s.charged, where a named scope counts no more than its share: a scope
// whose outcomes took it over its share does not take the room of the
// others.
func (s *Store) fits(scope string, cost int64) (*usage, error) {
	u := s.scopes[scope]
	if scope != "" {
		var keys int
		var bytes int64
		if u != nil {
			keys, bytes = u.keys(), u.bytes
		}
		if keys >= s.scopeMaxKeys || bytes+cost > s.scopeMaxBytes {
			return u, ErrScopeFull
		}
	}
	if len(s.records) >= s.maxKeys || s.charged+cost > s.maxBytes {
		return u, ErrFull
	}
	return u, nil
}

// add counts the new record r, of size bytes, in its scope (u, nil if the
// scope holds no record yet) and puts it in its place by expiry, which
// must be set.
func (s *Store) add(r *record, u *usage, size int64) {
	if u == nil {
		u = new(usage)
		s.scopes[r.key.Scope] = u
	}
	r.use = u
	s.place(r)
	s.count(r, size)
}

// count adds n bytes, maybe negative, to what the record r, its scope and
// the store count.
func (s *Store) count(r *record, n int64) {
	u := r.use
	charged := s.charge(r.key.Scope, u.bytes)
	r.size += n
	u.bytes += n
	s.bytes += n
	s.charged += s.charge(r.key.Scope, u.bytes) - charged
}

// charge is what a scope that counts bytes adds to s.charged: all of them
// for the empty scope, which has no share, and no more than the share for
// a named scope.
func (s *Store) charge(scope string, bytes int64) int64 {
	if scope == "" {
		return bytes
	}
	return min(bytes, s.scopeMaxBytes)
}

// forget deletes the record r and its place in its scope's heap, and takes
// back what it counted; a scope's usage goes with its last record.
func (s *Store) forget(r *record) {
	delete(s.records, r.key)
	s.unplace(r)
	s.count(r, -r.size)
	if r.use.keys() == 0 {
		delete(s.scopes, r.key.Scope)
	}
	r.use = nil
}
