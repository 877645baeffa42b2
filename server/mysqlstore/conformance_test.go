package mysqlstore_test

import (
	"testing"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/mysqlstore"
	"github.com/idemhq/idem/server/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts mysqlstore.Options
	}{
		{"lease", mysqlstore.Options{}},
		{"transactional", mysqlstore.Options{Transactional: true}},
	} {
		// The variants run one after another: each runs stampedes of 100
		// claims, and the suite's lease timings have margins of 100 ms.
		t.Run(tc.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) server.Store {
				// The suite runs 100 claims at once; a pool of 20 makes
				// them queue for connections as a real service would.
				return newStore(t, newDB(t, 20), tc.opts)
			})
		})
	}
}
