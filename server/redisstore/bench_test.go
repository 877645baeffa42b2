package redisstore_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/redisstore"
)

// BenchmarkStore measures one Claim of a new key, one replay, and a claim
// and completion of a new key, sequentially, on every target, with and
// without WaitReplicas (where every master has a replica):
//
//	go test -run '^$' -bench . ./server/redisstore/
func BenchmarkStore(b *testing.B) {
	for _, env := range targets {
		b.Run(env, func(b *testing.B) {
			rdb := connect(b, env, nil)
			for _, wait := range []int{0, 1} {
				b.Run(fmt.Sprintf("WaitReplicas=%d", wait), func(b *testing.B) {
					if wait > 0 && !replicated(b, rdb) {
						b.Skip("a master has no replica to wait for")
					}
					benchStore(b, newStore(b, rdb, redisstore.Options{WaitReplicas: wait}))
				})
			}
		})
	}
}

func benchStore(b *testing.B, s *redisstore.Store) {
	ctx := context.Background()
	resp := server.StoredResponse{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"ch_1"}`)}
	n := 0
	key := func() server.Key { n++; return server.Key{Scope: "bench", Key: fmt.Sprintf("key-%d", n)} }
	b.Run("claim new key", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Claim(ctx, key(), "fp", time.Minute); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("claim and complete", func(b *testing.B) {
		for b.Loop() {
			k := key()
			c, err := s.Claim(ctx, k, "fp", time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Complete(ctx, k, c.Token, resp, time.Hour); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		k := key()
		c, err := s.Claim(ctx, k, "fp", time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Complete(ctx, k, c.Token, resp, time.Hour); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := s.Claim(ctx, k, "fp", time.Minute); err != nil {
				b.Fatal(err)
			}
		}
	})
}
