package etcdstore_test

import (
	"testing"

	"github.com/idemhq/idem/server/etcdstore"
	"github.com/idemhq/idem/server/etcdstore/internal/httpbench"
)

// BenchmarkMiddleware measures requests through server.Middleware on an
// etcdstore on the test cluster (three members embedded in the test
// binary, fsync on, unless IDEM_TEST_ETCD names one): a new key, a
// replay, and new keys from 16 concurrent clients.
//
//	go test -run '^$' -bench . ./server/etcdstore/
//
// The same beside Redis Cluster, in one run: the module in ./bench.
func BenchmarkMiddleware(b *testing.B) {
	httpbench.Run(b, newStore(b, connect(b), etcdstore.Options{}))
}
