package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/redisstore"
	"github.com/idemhq/idem/server/storetest"
)

// TestConformance runs the store conformance suite on every target, and
// again with WaitReplicas where every master has a replica.
func TestConformance(t *testing.T) {
	forEachTarget(t, func(t *testing.T, rdb redis.UniversalClient) {
		t.Run("default", func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) server.Store {
				return newStore(t, rdb, redisstore.Options{})
			})
		})
		t.Run("WaitReplicas", func(t *testing.T) {
			if !replicated(t, rdb) {
				t.Skip("a master has no replica to wait for")
			}
			storetest.Run(t, func(t *testing.T) server.Store {
				return newStore(t, rdb, redisstore.Options{WaitReplicas: 1})
			})
		})
	})
}
