package etcdstore_test

import (
	"testing"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/etcdstore"
	"github.com/idemhq/idem/server/storetest"
)

// TestConformance runs the store conformance suite on the test cluster.
// Its large-body case stores 2 MiB, over the default MaxResponse: the
// store here takes 4 MiB, which the embedded members' --max-request-bytes
// admits.
func TestConformance(t *testing.T) {
	cli := connect(t)
	storetest.Run(t, func(t *testing.T) server.Store {
		return newStore(t, cli, etcdstore.Options{MaxResponse: 4 << 20})
	})
}
