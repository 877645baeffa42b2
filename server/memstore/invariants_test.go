package memstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

// check verifies, with s.mu held or s idle, what the store's bookkeeping
// must keep: the heap holds exactly the map's records, each at its index
// and in heap order; every scope's usage and the store's byte count are
// the sums of their records'; and the bounds hold for keys, and for the
// claims' bytes.
func (s *Store) check() error {
	if len(s.expiry) != len(s.records) {
		return fmt.Errorf("heap holds %d records, map %d", len(s.expiry), len(s.records))
	}
	for i, e := range s.expiry {
		r := e.r
		if e.at != unixNano(r.expiresAt) {
			return fmt.Errorf("record %v at %d: heap has expiry %d, record %v", r.key, i, e.at, r.expiresAt)
		}
		if r.index != i {
			return fmt.Errorf("record %v at %d says %d", r.key, i, r.index)
		}
		if s.records[r.key] != r {
			return fmt.Errorf("record %v in the heap, not in the map", r.key)
		}
		if i > 0 && s.expiry.less(i, (i-1)/2) {
			return fmt.Errorf("heap order broken at %d", i)
		}
	}
	if len(s.records) > s.maxKeys {
		return fmt.Errorf("%d records, bound %d", len(s.records), s.maxKeys)
	}
	want := map[string]usage{}
	var total int64
	for k, r := range s.records {
		if r.use != s.scopes[k.Scope] {
			return fmt.Errorf("record %v counts towards another usage", k)
		}
		size := claimSize(k, r.fingerprint)
		if r.completed {
			size += responseSize(r.response)
		}
		if r.size != size {
			return fmt.Errorf("record %v counts %d, holds %d", k, r.size, size)
		}
		u := want[k.Scope]
		u.keys++
		u.bytes += size
		want[k.Scope] = u
		total += size
	}
	if total != s.bytes {
		return fmt.Errorf("store counts %d bytes, records %d", s.bytes, total)
	}
	if len(want) != len(s.scopes) {
		return fmt.Errorf("%d scopes hold records, %d have a usage", len(want), len(s.scopes))
	}
	for scope, u := range s.scopes {
		if *u != want[scope] {
			return fmt.Errorf("scope %q counts %+v, holds %+v", scope, *u, want[scope])
		}
		if scope != "" && u.keys > s.scopeMaxKeys {
			return fmt.Errorf("scope %q holds %d keys, share %d", scope, u.keys, s.scopeMaxKeys)
		}
	}
	return nil
}

// TestBookkeeping runs random claims, renewals, completions, releases and
// clock moves on a small store and checks its bookkeeping after each.
func TestBookkeeping(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(7, 11))
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New(Options{MaxKeys: 40, MaxBytes: 40 * 1024, ScopeMaxKeys: 15, Abandon: time.Minute,
		Now: func() time.Time { return now }})
	tokens := map[server.Key]string{}
	refused := 0
	for i := range 20_000 {
		k := server.Key{Scope: []string{"", "a", "b", "c"}[rnd.IntN(4)], Key: fmt.Sprint(rnd.IntN(60))}
		switch op := rnd.IntN(10); {
		case op < 4:
			c, err := s.Claim(ctx, k, fmt.Sprint("fp", rnd.IntN(2)), time.Duration(1+rnd.IntN(30))*time.Second)
			switch {
			case err != nil:
				refused++
			case c.Acquired:
				tokens[k] = c.Token
			}
		case op < 6:
			body := make([]byte, rnd.IntN(2000))
			s.Complete(ctx, k, tokens[k], server.Response{Status: 200, Body: body}, time.Duration(rnd.IntN(120))*time.Second)
		case op < 7:
			s.Renew(ctx, k, tokens[k], time.Duration(rnd.IntN(60))*time.Second)
		case op < 8:
			s.Release(ctx, k, tokens[k])
		default:
			now = now.Add(time.Duration(rnd.IntN(5000)) * time.Millisecond)
		}
		require.NoError(t, s.check(), "after operation %d", i)
	}
	assert.Positive(t, refused, "the store was never full: the bounds were not exercised")
}
