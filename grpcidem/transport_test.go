package grpcidem_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/scenario"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
	"github.com/idemhq/idem/server/memstore"
)

// TestAnswersThroughTheClient: every code a server can answer comes back
// to the caller as the server gave it, code, message and details, through
// idem's client; the journal records each call's final answer and a
// repeat of the key is answered from it without a second call.
func TestAnswersThroughTheClient(t *testing.T) {
	t.Parallel()
	final := []codes.Code{codes.OK, codes.InvalidArgument, codes.NotFound, codes.AlreadyExists,
		codes.PermissionDenied, codes.FailedPrecondition, codes.OutOfRange, codes.Unauthenticated,
		codes.Internal, codes.Unknown, codes.DataLoss, codes.Unimplemented, codes.Canceled}
	for _, code := range final {
		t.Run(code.String(), func(t *testing.T) {
			t.Parallel()
			svc := &scenario.Charges{Ledger: &scenario.MemLedger{}, Answer: func(context.Context, int64, *testpb.ChargeRequest) error {
				if code == codes.OK {
					return nil
				}
				st, err := status.New(code, "as the server said").WithDetails(&errdetails.ErrorInfo{Reason: "MINE", Domain: "example.com"})
				require.NoError(t, err)
				return st.Err()
			}}
			addr := serve(t, svc, nil)
			j := openJournal(t)
			client, err := idem.New(idem.Options{Journal: j, Transport: grpcidem.NewTransport(nil), MaxAttempts: 1})
			require.NoError(t, err)
			c := dial(t, addr, grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{Client: client})))
			for range 2 {
				reply, err := c.Charge(t.Context(), charge("ann", 7), grpcidem.Key("k-"+code.String()))
				st := status.Convert(err)
				require.Equal(t, code, st.Code(), "%v", err)
				if code == codes.OK {
					assert.EqualValues(t, 7, reply.GetAmount())
					continue
				}
				assert.Equal(t, "as the server said", st.Message())
				require.Len(t, st.Details(), 1)
				assert.Equal(t, "MINE", st.Details()[0].(*errdetails.ErrorInfo).GetReason())
				var e *grpcidem.Error
				assert.False(t, errors.As(err, &e), "a final answer is the server's status, not an *Error")
			}
			if code == codes.Unauthenticated || code == codes.PermissionDenied {
				// A refusal, as idem's 401 and 403: the journal keeps the
				// call pending, so a repeat is sent again (credentials may
				// have changed).
				assert.Equal(t, 2, svc.Ledger.Count(t, ""), "a refused call is sent again")
				return
			}
			assert.Equal(t, 1, svc.Ledger.Count(t, ""), "the repeat was answered from the journal")
			ops, err := j.Operations()
			require.NoError(t, err)
			require.Len(t, ops, 1)
			assert.Equal(t, "grpc:///idem.test.v1.Charges/Charge", ops[0].URL)
			assert.Equal(t, addr, ops[0].Host, "the target, for Resume")
		})
	}
}

// TestSharedBudget: one idem.Client serves HTTP requests and gRPC calls
// with one retry budget, so a storm of HTTP retries leaves the gRPC calls
// none, and a gRPC call sees ErrBudgetExhausted.
func TestSharedBudget(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var httpSent int
		down := roundTripper(func(r *http.Request) (*http.Response, error) {
			httpSent++
			return &http.Response{StatusCode: http.StatusServiceUnavailable, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
		})
		client, err := idem.New(idem.Options{Transport: grpcidem.NewTransport(down), MaxAttempts: 3,
			Budget: idem.BudgetOptions{Capacity: 10, RetryCost: 5}})
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, "http://provider.example/charges", nil)
		require.NoError(t, err)
		_, err = client.Do(req)
		require.ErrorIs(t, err, idem.ErrRetriesExhausted, "two retries paid: the bucket is empty")
		require.Equal(t, 3, httpSent, "the other requests go to the Transport's Next")

		f := &fake{answer: failing(10, codes.Unavailable)}
		err = invoke(t.Context(), interceptor(t, grpcidem.ClientOptions{Client: client}), f, charge("ann", 1))
		assert.ErrorIs(t, err, idem.ErrBudgetExhausted)
		assert.Len(t, f.sent, 1, "no retry: the HTTP requests spent the budget")
		assert.Equal(t, codes.Unavailable, status.Code(err))
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestTransportRefusals: what cannot be sent is a typed error, and
// nothing goes out.
func TestTransportRefusals(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	svc := &scenario.Charges{Ledger: &scenario.MemLedger{}, Hold: func(context.Context, int64) { calls.Add(1) }}
	addr := serve(t, svc, nil)

	// A Client whose transport is not grpcidem's.
	plain, err := idem.New(idem.Options{MaxAttempts: 1})
	require.NoError(t, err)
	c := dial(t, addr, grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{Client: plain})))
	_, err = c.Charge(t.Context(), charge("ann", 1))
	assert.ErrorIs(t, err, grpcidem.ErrNotGRPCTransport)

	// A call with a codec of its own.
	c = dial(t, addr, grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{})))
	_, err = c.Charge(t.Context(), charge("ann", 1), grpc.CallContentSubtype("json"))
	assert.ErrorIs(t, err, grpcidem.ErrOwnCodec)
	_, err = c.Charge(t.Context(), charge("ann", 1), grpc.UseCompressor(gzip.Name))
	assert.NoError(t, err, "other call options are the call's")

	// Retry fields beside a Client, a Client keyed in the body, headers
	// that disagree.
	for name, o := range map[string]grpcidem.ClientOptions{
		"retry fields": {Client: plain, MaxAttempts: 3},
		"header":       {Client: plain, Header: "x-key"},
	} {
		_, err := grpcidem.UnaryClientInterceptor(o)
		assert.Error(t, err, name)
	}
	square, err := idem.New(idem.Options{BodyKey: "idempotency_key"})
	require.NoError(t, err)
	_, err = grpcidem.UnaryClientInterceptor(grpcidem.ClientOptions{Client: square})
	assert.Error(t, err)
	assert.EqualValues(t, 1, calls.Load(), "only the compressed call reached the server")
}

// TestResumeNeedsItsConnection: a journaled call resumed with no
// connection registered for its target stays pending with ErrNoConn;
// registered, it is sent with its key and metadata and answered.
func TestResumeNeedsItsConnection(t *testing.T) {
	t.Parallel()
	store := memstore.New(memstore.Options{})
	svc := &scenario.Charges{Ledger: &scenario.MemLedger{}}
	var seen atomic.Value
	addr := serve(t, svc, []grpc.UnaryServerInterceptor{
		func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			md, _ := metadata.FromIncomingContext(ctx)
			seen.Store(md)
			return handler(ctx, req)
		},
		grpcidem.UnaryServerInterceptor(store, singleTenant)})
	path := filepath.Join(t.TempDir(), "j")
	j, err := idem.OpenJournal(path, idem.JournalOptions{})
	require.NoError(t, err)
	defer j.Close()

	// The first process: its calls fail before an answer, so they stay
	// pending.
	first, err := idem.New(idem.Options{Journal: j, Transport: grpcidem.NewTransport(nil), MaxAttempts: 1})
	require.NoError(t, err)
	down := dial(t, "127.0.0.1:1", grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{Client: first})))
	ctx := metadata.AppendToOutgoingContext(t.Context(), "x-tenant", "acme", "authorization", "Bearer s3cret")
	_, err = down.Charge(ctx, charge("ann", 5))
	require.ErrorIs(t, err, idem.ErrRetriesExhausted)
	pending, err := j.Pending()
	require.NoError(t, err)
	require.Len(t, pending, 1)
	key := pending[0].Key
	assert.Equal(t, []string{"acme"}, pending[0].Header.Values("X-Tenant"))
	assert.Empty(t, pending[0].Header.Values("Authorization"), "credentials are never journaled")

	// The next process resumes it on the connection registered for the
	// call's target, which is up now.
	tr := grpcidem.NewTransport(nil)
	next, err := idem.New(idem.Options{Journal: j, Transport: tr})
	require.NoError(t, err)
	res, err := next.Resume(t.Context())
	require.NoError(t, err)
	require.Len(t, res, 1)
	assert.ErrorIs(t, res[0].Err, grpcidem.ErrNoConn)

	ic := interceptor(t, grpcidem.ClientOptions{Client: next})
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(ic))
	require.NoError(t, err)
	defer cc.Close()
	tr.Register("127.0.0.1:1", cc) // the target the call was made to, served now at addr
	res, err = next.Resume(t.Context())
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err)
	var reply testpb.ChargeReply
	require.NoError(t, grpcidem.Answer(res[0].Response, &reply))
	assert.EqualValues(t, 5, reply.GetAmount())
	md := seen.Load().(metadata.MD)
	assert.Equal(t, []string{key}, md.Get(grpcidem.DefaultHeader), "the journaled key")
	assert.Equal(t, []string{"acme"}, md.Get("x-tenant"), "the journaled metadata")
	assert.Equal(t, 1, svc.Ledger.Count(t, ""))
	pending, err = j.Pending()
	require.NoError(t, err)
	assert.Empty(t, pending)
}

// TestNamedCalls: a call made with Named is sent under the key bound to
// the name in the journal, the name is kept with its record, and a
// repeat in another process (another Client on the same journal) is the
// same operation, answered from the journal. Named with another key, or
// without a journal, sends nothing.
func TestNamedCalls(t *testing.T) {
	t.Parallel()
	svc := &scenario.Charges{Ledger: &scenario.MemLedger{}}
	addr := serve(t, svc, []grpc.UnaryServerInterceptor{grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), singleTenant)})
	j := openJournal(t)
	named := func() testpb.ChargesClient {
		client, err := idem.New(idem.Options{Journal: j, Transport: grpcidem.NewTransport(nil)})
		require.NoError(t, err)
		return dial(t, addr, grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{Client: client})))
	}
	first, err := named().Charge(t.Context(), charge("ann", 3), grpcidem.Named("payout/2026-12-25/417"))
	require.NoError(t, err)
	var replayed bool
	again, err := named().Charge(t.Context(), charge("ann", 3), grpcidem.Named("payout/2026-12-25/417"), grpcidem.Replayed(&replayed))
	require.NoError(t, err)
	assert.Equal(t, first.GetId(), again.GetId())
	assert.True(t, replayed)
	assert.Equal(t, 1, svc.Ledger.Count(t, ""))
	ops, err := j.Operations()
	require.NoError(t, err)
	require.Len(t, ops, 1)
	assert.Equal(t, "payout/2026-12-25/417", ops[0].Name)
	key, err := (func() (string, error) {
		c, err := idem.New(idem.Options{Journal: j})
		require.NoError(t, err)
		return c.NamedKey("payout/2026-12-25/417")
	})()
	require.NoError(t, err)
	assert.Equal(t, key, ops[0].Key)

	_, err = named().Charge(t.Context(), charge("ann", 3), grpcidem.Named("payout/2"), grpcidem.Key("k-other"))
	assert.ErrorIs(t, err, idem.ErrInvalidKey)
	_, err = named().Charge(withKey(t.Context(), "k-other"), charge("ann", 3), grpcidem.Named("payout/2"))
	assert.ErrorIs(t, err, idem.ErrInvalidKey)
	_, err = dial(t, addr, grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{}))).Charge(t.Context(), charge("ann", 3), grpcidem.Named("payout/3"))
	assert.ErrorIs(t, err, idem.ErrNoJournal)
	assert.Equal(t, 1, svc.Ledger.Count(t, ""), "nothing else was sent")
}

// TestAnswerRefusesAPart: a response the journal kept only in part is an
// error, never decoded as the whole reply (a reply cut between fields
// decodes); a response that is no gRPC answer is an error too.
func TestAnswerRefusesAPart(t *testing.T) {
	t.Parallel()
	whole := &idem.Response{StatusCode: http.StatusOK, Header: http.Header{grpcidem.StatusHeader: {"0"}}}
	var err error
	whole.Body, err = proto.Marshal(&testpb.ChargeReply{Id: "ch_1", Amount: 4200})
	require.NoError(t, err)
	var reply testpb.ChargeReply
	require.NoError(t, grpcidem.Answer(whole, &reply))
	assert.EqualValues(t, 4200, reply.GetAmount())

	cut := *whole
	cut.Body, cut.Truncated = whole.Body[:len(whole.Body)-3], true
	assert.ErrorIs(t, grpcidem.Answer(&cut, &reply), idem.ErrBodyTooLarge)
	assert.Error(t, grpcidem.Answer(&idem.Response{StatusCode: http.StatusOK, Header: http.Header{}}, &reply))
}
