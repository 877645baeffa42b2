package etcdstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemhq/idem/server/etcdstore"
	"github.com/idemhq/idem/server/etcdstore/internal/cluster"
)

// TestCheck: a whole three-member cluster passes Check and has no
// findings; with a member killed, Check names it (the alarm and the lone
// member are TestOutOfSpace's).
func TestCheck(t *testing.T) {
	c, err := cluster.Start(t.TempDir(), 3, cluster.Options{NoFsync: true})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	cli, err := c.Client()
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	store, err := etcdstore.New(cli, etcdstore.Options{})
	require.NoError(t, err)
	ctx := context.Background()

	found, err := store.Findings(ctx)
	require.NoError(t, err)
	assert.Empty(t, found)
	require.NoError(t, store.Check(ctx))

	c.Kill(2)
	err = store.Check(ctx)
	assert.ErrorIs(t, err, etcdstore.ErrMemberDown)
	assert.NotErrorIs(t, err, etcdstore.ErrFewMembers, "the member is down, not gone")
}
