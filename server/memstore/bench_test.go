package memstore_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// BenchmarkClaimComplete claims a fresh key and completes it, the store's
// share of a first execution: in a store that is filling up, and in a full
// one whose oldest record expires as each new key arrives (the clock moves
// 1 µs per operation and records are kept for 10,000 operations), so every
// new key is admitted by reclaiming an expired record.
//
//	go test -run '^$' -bench . -benchmem ./server/memstore/
func BenchmarkClaimComplete(b *testing.B) {
	for _, tc := range []struct {
		name      string
		opts      memstore.Options
		retention time.Duration
	}{
		{"filling", memstore.Options{MaxKeys: 1 << 30, MaxBytes: 1 << 50}, time.Hour},
		{"full", memstore.Options{MaxKeys: 10_000}, 10_000 * time.Microsecond},
	} {
		b.Run(tc.name, func(b *testing.B) {
			now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			opts := tc.opts
			opts.Now = func() time.Time { return now }
			s := memstore.New(opts)
			keys := make([]server.Key, b.N)
			for i := range keys {
				keys[i] = server.Key{Scope: "acct_" + strconv.Itoa(i%16), Key: "key-" + strconv.Itoa(i)}
			}
			resp := server.StoredResponse{Status: 201, Body: []byte(`{"id":"ch_1","status":"succeeded"}`)}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				now = now.Add(time.Microsecond)
				c, err := s.Claim(ctx, keys[i], "fp", time.Minute)
				if err != nil || !c.Acquired {
					b.Fatal(err)
				}
				if err := s.Complete(ctx, keys[i], c.Token, resp, tc.retention); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
