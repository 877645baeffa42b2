package memstore_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// BenchmarkClaimComplete claims a fresh key and completes it, the store's
// share of a first execution, in a store that is filling up and in one
// that is full and evicting.
//
//	go test -run '^$' -bench . -benchmem ./server/memstore/
func BenchmarkClaimComplete(b *testing.B) {
	for _, tc := range []struct {
		name    string
		maxKeys int
	}{{"filling", 1 << 30}, {"full", 10_000}} {
		b.Run(tc.name, func(b *testing.B) {
			s := memstore.New(memstore.Options{MaxKeys: tc.maxKeys})
			keys := make([]server.Key, b.N)
			for i := range keys {
				keys[i] = server.Key{Key: "key-" + strconv.Itoa(i)}
			}
			resp := server.Response{Status: 201}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				c, err := s.Claim(ctx, keys[i], "fp", time.Minute)
				if err != nil || !c.Acquired {
					b.Fatal(err)
				}
				if err := s.Complete(ctx, keys[i], c.Token, resp, time.Hour); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
