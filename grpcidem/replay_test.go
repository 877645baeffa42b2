package grpcidem_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/scenario"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
	"github.com/idemhq/idem/server/memstore"
)

// TestReplaysThroughTheJournal: Replayed reports an answer of an earlier
// attempt, the server's replay or the journal's, and not a first
// execution; key reuse, from the server and then from the journal, is an
// *Error wrapping idem.ErrKeyReused with the server's status, sent once.
func TestReplaysThroughTheJournal(t *testing.T) {
	t.Parallel()
	svc := &scenario.Charges{Ledger: &scenario.MemLedger{}}
	addr := serve(t, svc, []grpc.UnaryServerInterceptor{grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), singleTenant)})
	j := openJournal(t)
	client, err := idem.New(idem.Options{Journal: j, Transport: grpcidem.NewTransport(nil)})
	require.NoError(t, err)
	c := dial(t, addr, grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{Client: client})))
	plain := dial(t, addr, grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{})))

	replayed := true
	first, err := c.Charge(t.Context(), charge("ann", 5), grpcidem.Key("k-r"), grpcidem.Replayed(&replayed))
	require.NoError(t, err)
	assert.False(t, replayed, "the first execution")
	again, err := c.Charge(t.Context(), charge("ann", 5), grpcidem.Key("k-r"), grpcidem.Replayed(&replayed))
	require.NoError(t, err)
	assert.True(t, replayed, "the journal's answer is an earlier attempt's")
	assert.Equal(t, first.GetId(), again.GetId())
	replayed = false
	_, err = plain.Charge(t.Context(), charge("ann", 5), grpcidem.Key("k-r"), grpcidem.Replayed(&replayed))
	require.NoError(t, err)
	assert.True(t, replayed, "the server's replay")
	assert.Equal(t, 1, svc.Ledger.Count(t, ""))

	_, err = plain.Charge(t.Context(), charge("bea", 7), grpcidem.Key("k-x"))
	require.NoError(t, err)
	for _, tc := range []struct {
		via      string
		c        testpb.ChargesClient
		key      string
		attempts int
	}{
		{"the server, no journal", plain, "k-r", 1},
		{"the server, journaled", c, "k-x", 1},
		{"the journal's record of the server's", c, "k-x", 0},
		{"the journal, another request under a key it answered", c, "k-r", 0},
	} {
		_, err = tc.c.Charge(t.Context(), charge("ann", 6), grpcidem.Key(tc.key))
		require.ErrorIs(t, err, idem.ErrKeyReused, tc.via)
		var e *grpcidem.Error
		require.ErrorAs(t, err, &e, tc.via)
		assert.Equal(t, tc.key, e.Key, tc.via)
		assert.Equal(t, tc.attempts, e.Attempts, tc.via)
		assert.Equal(t, codes.FailedPrecondition, status.Code(err), tc.via)
		r, _ := reason(err)
		assert.Equal(t, grpcidem.ReasonKeyReused, r, tc.via)
	}
	assert.Equal(t, 1, svc.Ledger.Count(t, "ann"))
	assert.Equal(t, 1, svc.Ledger.Count(t, "bea"))
}
