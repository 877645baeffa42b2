package grpcidem_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/scenario"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
	"github.com/idemhq/idem/server/memstore"
)

// TestInterceptorChains: interceptors before the client interceptor see
// the call once, with its message and final error, and what they add to
// the metadata goes out on every attempt; those after it see every
// attempt. The interceptor installed twice (in KeyField mode too) makes
// one call with one key, its attempts not multiplied by the inner one's.
func TestInterceptorChains(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]grpcidem.ClientOptions{
		"metadata": {MaxAttempts: 3, BaseDelay: 1, MaxDelay: 1},
		"KeyField": {MaxAttempts: 3, BaseDelay: 1, MaxDelay: 1, KeyField: "request_id"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			rec.fail.Store(true)
			svc := &scenario.Charges{Ledger: &scenario.MemLedger{}}
			so := grpcidem.ServerOptions{SingleTenant: true, KeyField: o.KeyField}
			addr := serve(t, svc, []grpc.UnaryServerInterceptor{rec.intercept, grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), so)})
			var (
				mu            sync.Mutex
				before, after int
				beforeErr     error
			)
			outer := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				_, ok := req.(*testpb.ChargeRequest)
				assert.True(t, ok, "before: the caller's message")
				ctx = metadata.AppendToOutgoingContext(ctx, "x-from-before", "b")
				err := invoker(ctx, method, req, reply, cc, opts...)
				mu.Lock()
				before++
				beforeErr = err
				mu.Unlock()
				return err
			}
			inner := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				mu.Lock()
				after++
				mu.Unlock()
				return invoker(metadata.AppendToOutgoingContext(ctx, "x-from-after", "a"), method, req, reply, cc, opts...)
			}
			c := dial(t, addr, grpc.WithChainUnaryInterceptor(outer,
				interceptor(t, o), interceptor(t, o), inner))
			_, err := c.Charge(t.Context(), charge("ann", 1))
			require.ErrorIs(t, err, idem.ErrRetriesExhausted)
			assert.Equal(t, codes.Unavailable, status.Code(err))
			seen := rec.seen()
			assert.Len(t, seen, 3, "MaxAttempts attempts, not MaxAttempts squared")
			assert.Equal(t, 1, before)
			assert.Equal(t, 3, after)
			assert.Equal(t, err, beforeErr)

			rec.fail.Store(false)
			seen0 := len(rec.seen())
			reply, err := c.Charge(t.Context(), charge("ann", 1))
			require.NoError(t, err)
			assert.EqualValues(t, 1, reply.GetAmount())
			seen = rec.seen()[seen0:]
			require.Len(t, seen, 1)
			assert.Equal(t, []string{"b"}, seen[0].Get("x-from-before"))
			assert.Equal(t, []string{"a"}, seen[0].Get("x-from-after"))
			if o.KeyField != "" {
				assert.Empty(t, seen[0].Get(grpcidem.DefaultHeader))
				assert.NotEmpty(t, rec.reqs[len(rec.reqs)-1].GetRequestId())
			} else {
				assert.Len(t, seen[0].Get(grpcidem.DefaultHeader), 1)
			}
		})
	}
}

// bearer is per-RPC credentials that work on an insecure connection.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return false }

// TestResumeThroughConnCredentials: a call resumed on a registered
// connection carries that connection's per-RPC credentials (the journal
// kept none) and passes the idem interceptor installed on it untouched:
// its key and bytes are the journal's, sent once per attempt.
func TestResumeThroughConnCredentials(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	svc := &scenario.Charges{Ledger: &scenario.MemLedger{}}
	addr := serve(t, svc, []grpc.UnaryServerInterceptor{rec.intercept, grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), singleTenant)})
	j := openJournal(t)

	first, err := idem.New(idem.Options{Journal: j, Transport: grpcidem.NewTransport(nil), MaxAttempts: 1})
	require.NoError(t, err)
	rec.fail.Store(true)
	_, err = dial(t, addr, grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{Client: first}))).
		Charge(metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer old"), charge("ann", 2))
	require.ErrorIs(t, err, idem.ErrRetriesExhausted)
	rec.fail.Store(false)

	tr := grpcidem.NewTransport(nil)
	next, err := idem.New(idem.Options{Journal: j, Transport: tr, ResumeJitter: -1})
	require.NoError(t, err)
	// Another interceptor of the same kind, in KeyField mode, which would
	// refuse the pre-encoded message if it did not let it through.
	cc := conn(t, addr, grpc.WithPerRPCCredentials(bearer("fresh")),
		grpc.WithChainUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{Client: next}), interceptor(t, grpcidem.ClientOptions{KeyField: "request_id"})))
	tr.Register(cc.Target(), cc)
	res, err := next.Resume(t.Context())
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err)
	var reply testpb.ChargeReply
	require.NoError(t, grpcidem.Answer(res[0].Response, &reply))
	assert.EqualValues(t, 2, reply.GetAmount())
	seen := rec.seen()
	require.Len(t, seen, 2)
	assert.Equal(t, []string{"Bearer old"}, seen[0].Get("authorization"))
	assert.Equal(t, []string{"Bearer fresh"}, seen[1].Get("authorization"), "the connection's credentials, not the journal's")
	assert.Equal(t, seen[0].Get(grpcidem.DefaultHeader), seen[1].Get(grpcidem.DefaultHeader))
	assert.Equal(t, 1, svc.Ledger.Count(t, ""))
}
