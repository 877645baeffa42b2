package grpcidem_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/scenario"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
	"github.com/idemhq/idem/server/memstore"
)

// TestKeyFieldResumed: with the key in request_id on both halves, every
// attempt, the one resumed from the journal included, carries the key in
// the field and not in the metadata, whatever the Client journals of the
// header (JournalHeaders naming others only, too); the server runs the
// call once.
func TestKeyFieldResumed(t *testing.T) {
	t.Parallel()
	for name, journalHeaders := range map[string][]string{"default": nil, "JournalHeaders": {"X-Tenant"}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			svc := &scenario.Charges{Ledger: &scenario.MemLedger{}}
			addr := serve(t, svc, []grpc.UnaryServerInterceptor{rec.intercept,
				grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), grpcidem.ServerOptions{SingleTenant: true, KeyField: "request_id"})})
			j := openJournal(t)
			tr := grpcidem.NewTransport(nil)
			client, err := idem.New(idem.Options{Journal: j, Transport: tr, MaxAttempts: 2, BaseDelay: 1, MaxDelay: 1,
				ResumeJitter: -1, JournalHeaders: journalHeaders})
			require.NoError(t, err)
			cc := conn(t, addr, grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{Client: client, KeyField: "request_id"})))
			tr.Register(cc.Target(), cc)

			rec.fail.Store(true)
			_, err = testpb.NewChargesClient(cc).Charge(t.Context(), charge("ann", 3))
			require.ErrorIs(t, err, idem.ErrRetriesExhausted)
			rec.fail.Store(false)
			res, err := client.Resume(t.Context())
			require.NoError(t, err)
			require.Len(t, res, 1)
			require.NoError(t, res[0].Err)
			var reply testpb.ChargeReply
			require.NoError(t, grpcidem.Answer(res[0].Response, &reply))
			assert.EqualValues(t, 3, reply.GetAmount())

			seen := rec.seen()
			require.Len(t, seen, 3)
			key := rec.reqs[0].GetRequestId()
			require.NotEmpty(t, key)
			assert.Equal(t, res[0].Operation.Key, key)
			for i := range seen {
				assert.Equal(t, key, rec.reqs[i].GetRequestId(), "attempt %d: the key in the field", i)
				assert.Empty(t, seen[i].Get(grpcidem.DefaultHeader), "attempt %d: not in the metadata", i)
			}
			assert.Equal(t, 1, svc.Ledger.Count(t, ""))
		})
	}
}
