package redisstore

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server"
)

// TestScanPassesOverMoved: a record that another master holds by the time
// its HMGET reaches the node SCAN found it on (a resharding) is passed
// over, not an error, and any other failure is one. The MOVED answer is
// a real cluster's: HMGET sent to a master for a slot it does not own.
func TestScanPassesOverMoved(t *testing.T) {
	t.Parallel()
	addrs := os.Getenv("IDEM_TEST_REDIS")
	if addrs == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("IDEM_TEST_REDIS is not set and CI=true: the Redis tests must run")
		}
		t.Skip("set IDEM_TEST_REDIS to the addresses scripts/redis-cluster.sh start prints")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
	defer c.Close()
	node, err := c.MasterForKey(ctx, "idemtest:moved:0")
	require.NoError(t, err)
	var elsewhere string
	for i := 1; i < 1000 && elsewhere == ""; i++ {
		name := fmt.Sprintf("idemtest:moved:%d", i)
		m, err := c.MasterForKey(ctx, name)
		require.NoError(t, err)
		if m.Options().Addr != node.Options().Addr {
			elsewhere = name
		}
	}
	require.NotEmpty(t, elsewhere, "every key on one master")

	var cmds []*redis.SliceCmd
	_, err = node.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmds = append(cmds, p.HMGet(ctx, "idemtest:moved:0", "s", "l"), p.HMGet(ctx, elsewhere, "s", "l"))
		return nil
	})
	require.Error(t, err)
	assert.True(t, moved(err), "%v", err)
	require.NoError(t, cmds[0].Err(), "the key of its own slot")
	assert.True(t, movedAll(cmds))
	_, ok := readScanned(server.Key{}, cmds[1])
	assert.False(t, ok)

	// Another failure is not passed over.
	cmds[0].SetErr(fmt.Errorf("connection reset"))
	assert.False(t, movedAll(cmds))
}
