package etcdstore_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemhq/idem/server/etcdstore"
	"github.com/idemhq/idem/server/etcdstore/internal/cluster"
)

// The cluster the tests run against: IDEM_TEST_ETCD, comma-separated
// client endpoints of a cluster of one's own (its --max-request-bytes
// must be above 2.1 MiB for the large-body case), or else three members
// embedded in the test binary, on loopback ports picked free, with their
// data in a temporary directory, started once by TestMain and shared by
// the tests, each under a prefix of its own. The embedded members do not
// fsync: these tests check behaviour (claims, fences, expiry), which the
// disk does not change, and must keep up on a loaded machine under the
// race detector. TestFailover and the benchmarks start clusters of their
// own that fsync every write.
var endpoints []string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if env := os.Getenv("IDEM_TEST_ETCD"); env != "" {
		endpoints = strings.Split(env, ",")
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "idem-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	c, err := cluster.Start(dir, 3, cluster.Options{NoFsync: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	endpoints = c.Endpoints()
	return m.Run()
}

// connect returns a client of the test cluster, closed when the test
// ends.
func connect(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := cluster.NewClient(endpoints)
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = cli.Get(ctx, "idem-ping")
	require.NoError(t, err, "etcd at %v is unreachable", endpoints)
	return cli
}

// newStore returns a store on cli under a fresh prefix, whose keys are
// deleted when the test ends.
func newStore(t testing.TB, cli *clientv3.Client, opts etcdstore.Options) *etcdstore.Store {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = testPrefix(t, cli)
	}
	s, err := etcdstore.New(cli, opts)
	require.NoError(t, err)
	return s
}

// testPrefix returns a fresh key prefix; the keys under it are deleted
// when the test ends, so tests leave nothing in a shared cluster.
func testPrefix(t testing.TB, cli *clientv3.Client) string {
	prefix := "idemtest/" + rand.Text()[:10] + "/"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := cli.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
			t.Logf("deleting the test's keys under %q: %v", prefix, err)
		}
	})
	return prefix
}
