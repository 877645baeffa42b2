package etcdstore_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/etcdstore"
	"github.com/idemhq/idem/server/etcdstore/internal/cluster"
)

// TestOutOfSpace raises etcd's NOSPACE alarm, as a database at
// --quota-backend-bytes does, on a one-member cluster of its own: new
// keys are refused with an error wrapping server.ErrStoreFull (the
// middleware answers 503 with a full store's Retry-After), replays still
// work, and once the alarm is disarmed new keys are claimed again.
func TestOutOfSpace(t *testing.T) {
	c, err := cluster.Start(t.TempDir(), 1, cluster.Options{NoFsync: true})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	cli, err := c.Client()
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	store, err := etcdstore.New(cli, etcdstore.Options{})
	require.NoError(t, err)
	ctx := context.Background()

	kept := server.Key{Scope: "full", Key: "kept"}
	claim, err := store.Claim(ctx, kept, "fp", time.Minute)
	require.NoError(t, err)
	require.NoError(t, store.Complete(ctx, kept, claim.Token, server.StoredResponse{Status: http.StatusCreated}, time.Hour))

	status, err := cli.Status(ctx, c.Endpoints()[0])
	require.NoError(t, err)
	alarm := &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: status.Header.MemberId, Alarm: pb.AlarmType_NOSPACE}
	_, err = pb.NewMaintenanceClient(cli.ActiveConnection()).Alarm(ctx, alarm)
	require.NoError(t, err)

	err = store.Check(ctx)
	assert.ErrorIs(t, err, etcdstore.ErrAlarm, "Check names the alarm")
	assert.ErrorIs(t, err, etcdstore.ErrFewMembers, "and the lone member")

	_, err = store.Claim(ctx, server.Key{Scope: "full", Key: "new"}, "fp", time.Minute)
	assert.ErrorIs(t, err, etcdstore.ErrFull)
	assert.ErrorIs(t, err, server.ErrStoreFull)
	replay, err := store.Claim(ctx, kept, "fp", time.Minute)
	require.NoError(t, err, "a replay writes nothing")
	assert.True(t, replay.Record.Completed)

	_, err = cli.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: status.Header.MemberId, Alarm: pb.AlarmType_NOSPACE})
	require.NoError(t, err)
	fresh, err := store.Claim(ctx, server.Key{Scope: "full", Key: "new"}, "fp", time.Minute)
	require.NoError(t, err)
	assert.True(t, fresh.Acquired)
}
