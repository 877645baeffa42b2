package pgstore_test

import (
	"testing"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/pgstore"
	"github.com/idemhq/idem/server/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opts pgstore.Options
	}{
		{"default", pgstore.Options{}},
		{"transactional", pgstore.Options{Transactional: true}},
		{"durable claims", pgstore.Options{DurableClaims: true}},
	}
	// The variants run one after another: each runs stampedes of 100
	// claims, and the suite's lease timings have margins of 100 ms.
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) server.Store {
				// The suite runs 100 claims at once; a pool of 20 makes
				// them queue for connections as a real service would.
				return newStore(t, newPool(t, poolConfig(t, 20)), tc.opts)
			})
		})
	}
}
