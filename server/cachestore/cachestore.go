// This file holds Store: the claims answered from the cache, and the
// calls passed on to the store it wraps.

package cachestore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemhq/idem/server"
)

// Defaults of [Options].
const (
	DefaultMaxEntries = 10_000
	DefaultMaxBytes   = 64 << 20
)

// Options configures a [Store]. The zero value means the defaults.
type Options struct {
	// MaxEntries bounds the records kept. Default 10,000.
	MaxEntries int
	// MaxBytes bounds the bytes the records kept count: each counts
	// EntryOverhead plus the lengths of its scope, key, fingerprint and
	// body, and per header field 64 bytes and its name's length, per
	// value 16 bytes and its length. A record counting more than
	// MaxBytes/8 is not kept. Default 64 MiB.
	MaxBytes int64
	// MaxAge, if set, bounds how long a record is served from the cache
	// after it was cached, besides its own ExpiresAt: the bound on how
	// long a record deleted from the store before its expiry is still
	// replayed here. Default 0: until the record expires.
	MaxAge time.Duration
	// Now is the clock entries expire by. Default time.Now.
	Now func() time.Time
}

// EntryOverhead is what each cached record counts towards
// Options.MaxBytes beyond its strings, body and header: its entry, list
// element and map slot, approximately as the Go heap holds them.
const EntryOverhead = 192

// Store is a [server.Store] that answers claims of completed keys from a
// bounded per-process cache in front of another store (see the package
// documentation). It is safe for concurrent use.
//
// Like memstore, it returns records that share their Response with the
// cache: no caller may modify a Response's Header or Body.
type Store struct {
	next  server.Store
	works server.WorkClaimer // next, if it is one
	tx    server.Transactor  // next, if it is one
	c     *cache
}

var (
	_ server.Store       = (*Store)(nil)
	_ server.Transactor  = (*Store)(nil)
	_ server.WorkClaimer = (*Store)(nil)
	_ server.SystemNamer = (*Store)(nil)
)

// New returns a Store caching the completed records of next. It panics
// if next is nil; it returns an error for a negative option.
func New(next server.Store, opts Options) (*Store, error) {
	if next == nil {
		panic("idem/cachestore: New needs a Store")
	}
	switch {
	case opts.MaxEntries < 0:
		return nil, fmt.Errorf("idem/cachestore: Options.MaxEntries is negative (%d)", opts.MaxEntries)
	case opts.MaxBytes < 0:
		return nil, fmt.Errorf("idem/cachestore: Options.MaxBytes is negative (%d)", opts.MaxBytes)
	case opts.MaxAge < 0:
		return nil, fmt.Errorf("idem/cachestore: Options.MaxAge is negative (%v)", opts.MaxAge)
	}
	if opts.MaxEntries == 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Store{next: next, c: newCache(opts)}
	s.works, _ = next.(server.WorkClaimer)
	s.tx, _ = next.(server.Transactor)
	return s, nil
}

// Claim answers from the cache if it holds a completed record of k that
// has not expired, whatever the fingerprint (a completed record is
// reported to every claim; the caller compares fingerprints); otherwise
// it claims k in the store and keeps the completed record the store
// reports, if any.
func (s *Store) Claim(ctx context.Context, k server.Key, fingerprint string, lease time.Duration) (server.Claim, error) {
	if rec, ok := s.c.get(k); ok {
		return server.Claim{Record: rec}, nil
	}
	c, err := s.next.Claim(ctx, k, fingerprint, lease)
	if err == nil {
		s.keep(k, c)
	}
	return c, err
}

// ClaimWork answers from the cache as Claim does, with a nil context and
// Work; otherwise it is the store's ClaimWork. If the store does not
// claim within its units of work it returns an error wrapping
// errors.ErrUnsupported, and the caller claims with Claim.
func (s *Store) ClaimWork(ctx context.Context, k server.Key, fingerprint string) (server.Claim, context.Context, server.Work, error) {
	if s.works == nil {
		return server.Claim{}, nil, nil, fmt.Errorf("idem/cachestore: the store does not claim within its units of work: %w", errors.ErrUnsupported)
	}
	if rec, ok := s.c.get(k); ok {
		return server.Claim{Record: rec}, nil, nil, nil
	}
	c, wctx, work, err := s.works.ClaimWork(ctx, k, fingerprint)
	if err == nil {
		s.keep(k, c)
	}
	return c, wctx, work, err
}

// keep caches the record of a claim that found k completed.
func (s *Store) keep(k server.Key, c server.Claim) {
	if !c.Acquired && c.Record.Completed && !c.Record.ExpiresAt.IsZero() {
		s.c.put(k, c.Record)
	}
}

// Renew is the store's.
func (s *Store) Renew(ctx context.Context, k server.Key, token string, lease time.Duration) error {
	return s.next.Renew(ctx, k, token, lease)
}

// Complete is the store's. The record it stores is cached when a later
// claim reports it.
func (s *Store) Complete(ctx context.Context, k server.Key, token string, resp server.StoredResponse, retention time.Duration) error {
	return s.next.Complete(ctx, k, token, resp, retention)
}

// Release is the store's.
func (s *Store) Release(ctx context.Context, k server.Key, token string) error {
	return s.next.Release(ctx, k, token)
}

// BeginWork is the store's, or, if the store does not begin units of
// work, ctx unchanged and a nil Work: the work then runs outside the
// store and its outcome is stored with Complete.
func (s *Store) BeginWork(ctx context.Context, k server.Key, token string) (context.Context, server.Work, error) {
	if s.tx == nil {
		return ctx, nil, nil
	}
	return s.tx.BeginWork(ctx, k, token)
}

// StoreSystem names the database system of the store it wraps, or "".
func (s *Store) StoreSystem() string {
	if n, ok := s.next.(server.SystemNamer); ok {
		return n.StoreSystem()
	}
	return ""
}

// Forget drops the cached record of k, if there is one: after a record
// was deleted from the store before its expiry (a purge), so that this
// process stops replaying it.
func (s *Store) Forget(k server.Key) { s.c.drop(k) }

// Stats are a Store's counters since New.
type Stats struct {
	// Hits counts claims answered from the cache; Misses, claims passed on
	// to the store.
	Hits, Misses int64
	// Entries and Bytes are what the cache holds now (Bytes as
	// Options.MaxBytes counts it).
	Entries int
	Bytes   int64
	// Evicted counts records dropped to make room.
	Evicted int64
}

// Stats returns the cache's counters.
func (s *Store) Stats() Stats { return s.c.stats() }
