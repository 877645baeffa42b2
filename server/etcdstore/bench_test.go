package etcdstore_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server/etcdstore"
	"github.com/idemhq/idem/server/etcdstore/internal/cluster"
	"github.com/idemhq/idem/server/etcdstore/internal/httpbench"
)

// BenchmarkMiddleware measures requests through server.Middleware on an
// etcdstore on three members embedded in the test binary, started for
// it with fsync on (or the cluster IDEM_TEST_ETCD names): a new key, a
// replay, and new keys from 16 concurrent clients.
//
//	go test -run '^$' -bench . ./server/etcdstore/
//
// The same beside Redis Cluster, in one run: the module in ./bench.
func BenchmarkMiddleware(b *testing.B) {
	if os.Getenv("IDEM_TEST_ETCD") != "" {
		httpbench.Run(b, newStore(b, connect(b), etcdstore.Options{}))
		return
	}
	c, err := cluster.Start(b.TempDir(), 3, cluster.Options{})
	require.NoError(b, err)
	defer c.Close()
	cli, err := c.Client()
	require.NoError(b, err)
	defer cli.Close()
	store, err := etcdstore.New(cli, etcdstore.Options{})
	require.NoError(b, err)
	httpbench.Run(b, store)
}
