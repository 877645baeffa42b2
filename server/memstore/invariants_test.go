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
// must keep: the heaps hold exactly the map's records, each in its scope's
// heap, at its index, in heap order and keyed by its expiry from the
// epoch; every scope that holds records is in s.fronts, in heap order; a
// scope's heap array is not much larger than it needs; every scope's usage
// and the store's counts are the sums of their records'; and the bounds
// hold: keys, and bytes as the package documentation states them.
func (s *Store) check() error {
	if len(s.fronts) != len(s.scopes) {
		return fmt.Errorf("%d scopes in the front heap, %d in the map", len(s.fronts), len(s.scopes))
	}
	held := 0
	for i, u := range s.fronts {
		if u.index != i {
			return fmt.Errorf("scope at %d says %d", i, u.index)
		}
		if len(u.expiry) == 0 {
			return fmt.Errorf("scope at %d holds no record", i)
		}
		if i > 0 && s.fronts.Less(i, (i-1)/2) {
			return fmt.Errorf("front heap order broken at %d", i)
		}
		if c := cap(u.expiry); c > minShrink && len(u.expiry) < c/4-1 {
			return fmt.Errorf("scope heap of %d records keeps an array of %d", len(u.expiry), c)
		}
		held += len(u.expiry)
		for j, e := range u.expiry {
			r := e.r
			if e.at != s.at(r.expiresAt) {
				return fmt.Errorf("record %v at %d: heap has expiry %d, record %v", r.key, j, e.at, r.expiresAt)
			}
			if r.index != j {
				return fmt.Errorf("record %v at %d says %d", r.key, j, r.index)
			}
			if s.records[r.key] != r {
				return fmt.Errorf("record %v in a heap, not in the map", r.key)
			}
			if r.use != u || s.scopes[r.key.Scope] != u {
				return fmt.Errorf("record %v in another scope's heap", r.key)
			}
			if j > 0 && u.expiry.less(j, (j-1)/2) {
				return fmt.Errorf("heap order of scope %q broken at %d", r.key.Scope, j)
			}
		}
	}
	if held != len(s.records) {
		return fmt.Errorf("heaps hold %d records, map %d", held, len(s.records))
	}
	if len(s.records) > s.maxKeys {
		return fmt.Errorf("%d records, bound %d", len(s.records), s.maxKeys)
	}
	type sum struct {
		keys          int
		bytes, excess int64
	}
	want := map[string]sum{}
	var total, excess int64
	for k, r := range s.records {
		size := claimSize(k, r.fingerprint) + s.reserve
		var over int64
		if r.completed {
			size += responseSize(r.response) - s.reserve
			over = max(responseSize(r.response)-s.reserve, 0)
		}
		if r.size != size {
			return fmt.Errorf("record %v counts %d, holds %d", k, r.size, size)
		}
		u := want[k.Scope]
		u.keys++
		u.bytes += size
		u.excess += over
		want[k.Scope] = u
		total += size
		excess += over
	}
	if total != s.bytes {
		return fmt.Errorf("store counts %d bytes, records %d", s.bytes, total)
	}
	if total > s.maxBytes+excess {
		return fmt.Errorf("store counts %d bytes, over %d by more than the responses' excess %d", total, s.maxBytes, excess)
	}
	if len(want) != len(s.scopes) {
		return fmt.Errorf("%d scopes hold records, %d have a usage", len(want), len(s.scopes))
	}
	var charged int64
	for scope, u := range s.scopes {
		w := want[scope]
		if u.keys() != w.keys || u.bytes != w.bytes {
			return fmt.Errorf("scope %q counts %d keys and %d bytes, holds %+v", scope, u.keys(), u.bytes, w)
		}
		if scope == "" {
			charged += u.bytes
			continue
		}
		charged += min(u.bytes, s.scopeMaxBytes)
		if u.keys() > s.scopeMaxKeys {
			return fmt.Errorf("scope %q holds %d keys, share %d", scope, u.keys(), s.scopeMaxKeys)
		}
		if u.bytes > s.scopeMaxBytes+w.excess {
			return fmt.Errorf("scope %q counts %d bytes, over its share %d by more than its responses' excess %d",
				scope, u.bytes, s.scopeMaxBytes, w.excess)
		}
	}
	if charged != s.charged {
		return fmt.Errorf("store charges %d bytes, scopes %d", s.charged, charged)
	}
	return nil
}

// TestBookkeeping runs random claims, renewals, completions, releases and
// clock moves on a small store and checks its bookkeeping after each: with
// few keys a scope, and with scopes large enough that their heap arrays
// grow and, when the clock jumps, shrink.
func TestBookkeeping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opts      Options
		keys      int           // per scope
		retention time.Duration // the longest
		jumps     bool          // whether the clock sometimes jumps 2 h, expiring every record
	}{
		{"small scopes", Options{MaxKeys: 40, MaxBytes: 40 * 1024, ScopeMaxKeys: 15, ScopeMaxBytes: 15 * 1024,
			RunningReserve: 512, Abandon: time.Minute}, 60, 2 * time.Minute, false},
		{"large scopes", Options{MaxKeys: 600, MaxBytes: 400 * 1024, ScopeMaxKeys: 400, ScopeMaxBytes: 100 * 1024,
			RunningReserve: 512, Abandon: time.Hour}, 1000, time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rnd := rand.New(rand.NewPCG(7, 11))
			now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			opts := tt.opts
			opts.Now = func() time.Time { return now }
			s := New(opts)
			tokens := map[server.Key]string{}
			refused := 0
			for i := range 20_000 {
				k := server.Key{Scope: []string{"", "a", "b", "c"}[rnd.IntN(4)], Key: fmt.Sprint(rnd.IntN(tt.keys))}
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
					s.Complete(ctx, k, tokens[k], server.StoredResponse{Status: 200, Body: body}, time.Duration(rnd.Int64N(int64(tt.retention))))
				case op < 7:
					s.Renew(ctx, k, tokens[k], time.Duration(rnd.IntN(60))*time.Second)
				case op < 8:
					s.Release(ctx, k, tokens[k])
				case tt.jumps && rnd.IntN(1000) == 0:
					now = now.Add(2 * time.Hour)
				default:
					now = now.Add(time.Duration(rnd.IntN(5000)) * time.Millisecond)
				}
				require.NoError(t, s.check(), "after operation %d", i)
			}
			assert.Positive(t, refused, "the store was never full: the bounds were not exercised")
		})
	}
}

// TestHeapShrinksAfterPeak: a scope's heap array shrinks back as the
// records of its peak are forgotten.
func TestHeapShrinksAfterPeak(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New(Options{MaxKeys: 20_000, ScopeMaxKeys: 20_000, Now: func() time.Time { return now }})
	complete := func(k server.Key, retention time.Duration) {
		c, err := s.Claim(ctx, k, "fp", time.Minute)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, k, c.Token, server.StoredResponse{Status: 200}, retention))
	}
	for i := range 10_000 {
		complete(server.Key{Scope: "a", Key: fmt.Sprint(i)}, time.Minute)
	}
	for i := range 5 {
		complete(server.Key{Scope: "a", Key: fmt.Sprint("kept", i)}, time.Hour)
	}
	peak := cap(s.scopes["a"].expiry)
	now = now.Add(2 * time.Minute)
	for i := range 10_000/sweepLimit + 1 { // each forgets 64 expired records in passing
		complete(server.Key{Scope: "b", Key: fmt.Sprint(i)}, time.Hour)
	}
	require.Equal(t, 5, s.scopes["a"].keys())
	assert.LessOrEqual(t, cap(s.scopes["a"].expiry), minShrink, "the array of a peak of %d", peak)
	require.NoError(t, s.check())
}
