package memstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/idemhq/idem/server"
)

// ErrFull is returned by [Store.Claim] when a new key does not fit: the
// store holds Options.MaxKeys records, or the key would take it over
// Options.MaxBytes, and no record has expired. Nothing is forgotten to make
// room. The middleware answers it 503 with Retry-After; the request did
// not run, and a retry with the same key is safe.
var ErrFull = errors.New("idem/memstore: store full")

// ErrScopeFull is returned by [Store.Claim] when a new key does not fit in
// its scope's share (Options.ScopeMaxKeys, Options.ScopeMaxBytes), however
// much room the store has. It wraps [ErrFull]: errors.Is(err, ErrFull)
// holds for both.
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

// claimSize is what a running record for k with fingerprint counts.
func claimSize(k server.Key, fingerprint string) int64 {
	return int64(RecordOverhead + len(k.Scope) + len(k.Key) + len(fingerprint))
}

// responseSize is what storing resp adds to its record's count.
func responseSize(resp server.Response) int64 {
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

// usage is what one scope's records count. A scope that holds no record
// has no usage.
type usage struct {
	keys  int
	bytes int64
}

// admit decides, with s.mu held, whether a new key of scope that counts
// cost bytes fits, and returns its scope's usage (nil if the scope holds
// no record). It forgets up to sweepLimit expired records in passing,
// then, while the key does not fit, every further expired record it
// needs; a key that still does not fit is refused with ErrFull or
// ErrScopeFull. The empty scope is limited by the store's bounds only.
func (s *Store) admit(scope string, cost int64, now time.Time) (*usage, error) {
	s.sweep(now, sweepLimit)
	for {
		u, err := s.fits(scope, cost)
		if err == nil || !s.reclaim(now) {
			return u, err
		}
	}
}

// fits reports whether a new key of scope that counts cost bytes fits now.
// A scope over its share is told so even when the store is full too.
func (s *Store) fits(scope string, cost int64) (*usage, error) {
	u := s.scopes[scope]
	if scope != "" {
		var keys int
		var bytes int64
		if u != nil {
			keys, bytes = u.keys, u.bytes
		}
		if keys >= s.scopeMaxKeys || bytes+cost > s.scopeMaxBytes {
			return nil, ErrScopeFull
		}
	}
	if len(s.records) >= s.maxKeys || s.bytes+cost > s.maxBytes {
		return nil, ErrFull
	}
	return u, nil
}

// count adds n bytes of the record r to what it, its scope (u, nil if the
// scope holds no record yet) and the store count; for a record r has not
// counted yet, it adds one key too.
func (s *Store) count(r *record, u *usage, n int64) {
	if r.use == nil {
		if u == nil {
			u = new(usage)
			s.scopes[r.key.Scope] = u
		}
		r.use = u
		u.keys++
	}
	r.size += n
	u.bytes += n
	s.bytes += n
}

// uncount takes back what the forgotten record r counted, and forgets its
// scope's usage when it was the scope's last record.
func (s *Store) uncount(r *record) {
	u := r.use
	s.bytes -= r.size
	u.bytes -= r.size
	if u.keys--; u.keys == 0 {
		delete(s.scopes, r.key.Scope)
	}
	r.use, r.size = nil, 0
}
