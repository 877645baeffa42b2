package grpcidem_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/scenario"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

// reason returns the ErrorInfo reason and the RetryInfo delay of err's
// status ("" and 0 if it has none).
func reason(err error) (string, time.Duration) {
	var r string
	var d time.Duration
	for _, det := range status.Convert(err).Details() {
		switch v := det.(type) {
		case *errdetails.ErrorInfo:
			if v.GetDomain() == grpcidem.Domain {
				r = v.GetReason()
			}
		case *errdetails.RetryInfo:
			d = v.GetRetryDelay().AsDuration()
		}
	}
	return r, d
}

// TestPlainClientInterop drives the interceptor with a plain grpc-go
// client that knows nothing of idem: the key in metadata, replays marked
// in the header, and the documented codes for every refusal.
func TestPlainClientInterop(t *testing.T) {
	t.Parallel()
	svc := &scenario.Charges{Ledger: &scenario.MemLedger{}}
	svc.Answer = func(_ context.Context, _ int64, req *testpb.ChargeRequest) error {
		switch req.GetCustomer() {
		case "nobody":
			st, _ := status.New(codes.NotFound, "no such customer").WithDetails(&errdetails.ResourceInfo{ResourceName: "customers/nobody"})
			return st.Err()
		case "flaky":
			if svc.Ledger.Count(t, "flaky") == 1 {
				return status.Error(codes.Unavailable, "card network down")
			}
		}
		return nil
	}
	addr := serve(t, svc, []grpc.UnaryServerInterceptor{grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), singleTenant)})
	c := dial(t, addr)
	ctx := t.Context()

	t.Run("replay", func(t *testing.T) {
		first, replayed, err := call(withKey(ctx, "k-replay"), c, charge("ann", 500))
		require.NoError(t, err)
		assert.False(t, replayed)
		again, replayed, err := call(withKey(ctx, "k-replay"), c, charge("ann", 500))
		require.NoError(t, err)
		assert.True(t, replayed)
		assert.True(t, proto.Equal(first, again), "the replay is the first answer")
		assert.Equal(t, 1, svc.Ledger.Count(t, "ann"))
	})
	t.Run("quoted and bare are one key", func(t *testing.T) {
		_, _, err := call(withKey(ctx, "k-quoted"), c, charge("bea", 1))
		require.NoError(t, err)
		_, replayed, err := call(withKey(ctx, `"k-quoted"`), c, charge("bea", 1))
		require.NoError(t, err)
		assert.True(t, replayed)
		assert.Equal(t, 1, svc.Ledger.Count(t, "bea"))
	})
	t.Run("key reused with another request", func(t *testing.T) {
		_, _, err := call(withKey(ctx, "k-reused"), c, charge("cid", 1))
		require.NoError(t, err)
		_, _, err = call(withKey(ctx, "k-reused"), c, charge("cid", 2))
		assert.Equal(t, codes.FailedPrecondition, status.Code(err))
		r, delay := reason(err)
		assert.Equal(t, grpcidem.ReasonKeyReused, r)
		assert.Zero(t, delay, "no retry can help")
		assert.Equal(t, 1, svc.Ledger.Count(t, "cid"))
	})
	t.Run("key missing", func(t *testing.T) {
		_, _, err := call(ctx, c, charge("dan", 1))
		assert.Equal(t, codes.InvalidArgument, status.Code(err))
		r, _ := reason(err)
		assert.Equal(t, grpcidem.ReasonKeyMissing, r)
		assert.Zero(t, svc.Ledger.Count(t, "dan"))
	})
	t.Run("key malformed", func(t *testing.T) {
		for name, ctx := range map[string]context.Context{
			"too long":   withKey(ctx, strings.Repeat("k", server.MaxKeyLen+1)),
			"two values": withKey(withKey(ctx, "k-one"), "k-two"),
			"bad quotes": withKey(ctx, `"k-open`),
		} {
			_, _, err := call(ctx, c, charge("eve", 1))
			assert.Equal(t, codes.InvalidArgument, status.Code(err), name)
			r, _ := reason(err)
			assert.Equal(t, grpcidem.ReasonKeyInvalid, r, name)
		}
		assert.Zero(t, svc.Ledger.Count(t, "eve"))
	})
	t.Run("final status recorded with its details", func(t *testing.T) {
		_, replayed, first := call(withKey(ctx, "k-notfound"), c, charge("nobody", 1))
		require.Equal(t, codes.NotFound, status.Code(first))
		assert.False(t, replayed)
		_, replayed, again := call(withKey(ctx, "k-notfound"), c, charge("nobody", 1))
		assert.True(t, replayed)
		assert.True(t, proto.Equal(status.Convert(first).Proto(), status.Convert(again).Proto()), "the replay is the first status, details and all")
		assert.Equal(t, 1, svc.Ledger.Count(t, "nobody"), "the handler ran once")
	})
	t.Run("retryable status released", func(t *testing.T) {
		_, _, err := call(withKey(ctx, "k-flaky"), c, charge("flaky", 1))
		require.Equal(t, codes.Unavailable, status.Code(err))
		reply, replayed, err := call(withKey(ctx, "k-flaky"), c, charge("flaky", 1))
		require.NoError(t, err)
		assert.False(t, replayed, "the retry ran the handler again")
		assert.NotZero(t, reply.GetRun())
		assert.Equal(t, 2, svc.Ledger.Count(t, "flaky"))
	})
}

// TestInFlightIsAborted holds a first call in its handler and sends its
// repeat: Aborted with a RetryInfo, and the handler runs once.
func TestInFlightIsAborted(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	svc := &scenario.Charges{Ledger: &scenario.MemLedger{}, Hold: func(_ context.Context, n int64) {
		if n == 1 {
			close(entered)
			<-release
		}
	}}
	addr := serve(t, svc, []grpc.UnaryServerInterceptor{grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), singleTenant)})
	c := dial(t, addr)
	done := make(chan error, 1)
	go func() {
		_, _, err := call(withKey(t.Context(), "k-held"), c, charge("ann", 1))
		done <- err
	}()
	<-entered
	_, _, err := call(withKey(t.Context(), "k-held"), c, charge("ann", 1))
	assert.Equal(t, codes.Aborted, status.Code(err))
	r, delay := reason(err)
	assert.Equal(t, grpcidem.ReasonInFlight, r)
	assert.Equal(t, time.Second, delay)
	close(release)
	require.NoError(t, <-done)
	_, replayed, err := call(withKey(t.Context(), "k-held"), c, charge("ann", 1))
	require.NoError(t, err)
	assert.True(t, replayed)
	assert.Equal(t, 1, svc.Ledger.Count(t, "ann"))
}

// TestScope keys calls by the client the scope function names: the same
// key from two clients is two operations, and a call without a client is
// Unauthenticated.
func TestScope(t *testing.T) {
	t.Parallel()
	svc := &scenario.Charges{Ledger: &scenario.MemLedger{}}
	opts := grpcidem.ServerOptions{Scope: func(ctx context.Context) (string, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get("x-client-id"); len(v) == 1 {
			if v[0] == "bad" {
				return "a\x00b", nil // a scope no store can keep
			}
			return v[0], nil
		}
		return "", errors.New("no client")
	}}
	addr := serve(t, svc, []grpc.UnaryServerInterceptor{grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), opts)})
	c := dial(t, addr)
	as := func(client string) context.Context {
		return metadata.AppendToOutgoingContext(withKey(t.Context(), "k-same"), "x-client-id", client)
	}
	a, _, err := call(as("alice"), c, charge("ann", 1))
	require.NoError(t, err)
	b, replayed, err := call(as("bob"), c, charge("ann", 1))
	require.NoError(t, err)
	assert.False(t, replayed, "bob's key is not alice's")
	assert.NotEqual(t, a.GetId(), b.GetId())
	_, _, err = call(withKey(t.Context(), "k-same"), c, charge("ann", 1))
	assert.Equal(t, codes.Unauthenticated, status.Code(err))
	r, _ := reason(err)
	assert.Equal(t, grpcidem.ReasonScopeUnavailable, r)
	_, _, err = call(as("bad"), c, charge("ann", 1))
	assert.Equal(t, codes.Unauthenticated, status.Code(err), "a scope no store can keep")
	assert.Equal(t, 2, svc.Ledger.Count(t, "ann"))
}

// TestKeyField reads the key from the request's request_id (AIP-155): the
// fingerprint leaves it out, a message without the field is the server's
// misconfiguration, and an empty request_id is a missing key.
func TestKeyField(t *testing.T) {
	t.Parallel()
	svc := &scenario.Charges{Ledger: &scenario.MemLedger{}}
	opts := grpcidem.ServerOptions{SingleTenant: true, KeyField: "request_id"}
	addr := serve(t, svc, []grpc.UnaryServerInterceptor{grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), opts)})
	c := dial(t, addr)
	req := charge("ann", 7)
	req.RequestId = "k-field"
	_, _, err := call(t.Context(), c, req)
	require.NoError(t, err)
	req.RequestId = `"k-field"` // the same key quoted: not another request
	_, replayed, err := call(t.Context(), c, req)
	require.NoError(t, err)
	assert.True(t, replayed)
	req.RequestId = ""
	_, _, err = call(t.Context(), c, req)
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Equal(t, 1, svc.Ledger.Count(t, "ann"))

	other := grpcidem.ServerOptions{SingleTenant: true, KeyField: "meta.request_id"}
	addr = serve(t, svc, []grpc.UnaryServerInterceptor{grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), other)})
	_, _, err = call(t.Context(), dial(t, addr), charge("bea", 1))
	assert.Equal(t, codes.Internal, status.Code(err))
	r, _ := reason(err)
	assert.Equal(t, grpcidem.ReasonKeyFieldMissing, r)
	assert.Zero(t, svc.Ledger.Count(t, "bea"))
}

// TestOptionalAndMethods: an unprotected method and, with Optional, a call
// without a key pass through untouched.
func TestOptionalAndMethods(t *testing.T) {
	t.Parallel()
	svc := &scenario.Charges{Ledger: &scenario.MemLedger{}}
	opts := grpcidem.ServerOptions{SingleTenant: true, Optional: true}
	addr := serve(t, svc, []grpc.UnaryServerInterceptor{grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), opts)})
	c := dial(t, addr)
	for range 2 {
		_, replayed, err := call(t.Context(), c, charge("ann", 1))
		require.NoError(t, err)
		assert.False(t, replayed)
	}
	assert.Equal(t, 2, svc.Ledger.Count(t, "ann"))

	// gRPC's own services (health checks) are never protected by default.
	ic := grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), singleTenant)
	reply, err := ic(t.Context(), "ping", &grpc.UnaryServerInfo{FullMethod: "/grpc.health.v1.Health/Check"},
		func(context.Context, any) (any, error) { return "healthy", nil })
	require.NoError(t, err)
	assert.Equal(t, "healthy", reply)
	_, err = ic(t.Context(), charge("x", 1), &grpc.UnaryServerInfo{FullMethod: "/idem.test.v1.Charges/Charge"},
		func(context.Context, any) (any, error) { return nil, nil })
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "the service's own methods are")

	none := grpcidem.ServerOptions{SingleTenant: true, Methods: func(string) bool { return false }}
	addr = serve(t, svc, []grpc.UnaryServerInterceptor{grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), none)})
	_, _, err = call(t.Context(), dial(t, addr), charge("bea", 1))
	require.NoError(t, err)
}

// TestStreamsWithKeysRefused: a stream carrying a key is refused before
// its handler runs; one without passes.
func TestStreamsWithKeysRefused(t *testing.T) {
	t.Parallel()
	svc := &scenario.Charges{Ledger: &scenario.MemLedger{}}
	addr := serve(t, svc, nil, grpcidem.StreamServerInterceptor(""))
	c := dial(t, addr)
	s, err := c.Watch(withKey(t.Context(), "k-stream"), charge("ann", 1))
	require.NoError(t, err)
	_, err = s.Recv()
	assert.Equal(t, codes.Unimplemented, status.Code(err))
	r, _ := reason(err)
	assert.Equal(t, grpcidem.ReasonStreaming, r)
	s, err = c.Watch(t.Context(), charge("ann", 1))
	require.NoError(t, err)
	got, err := s.Recv()
	require.NoError(t, err)
	assert.Equal(t, "watched", got.GetId())
}

// failingStore fails every Claim with err.
type failingStore struct {
	server.Store
	err error
}

func (s failingStore) Claim(context.Context, server.Key, string, time.Duration) (server.Claim, error) {
	return server.Claim{}, s.err
}

// TestStoreFailuresAreUnavailable: a store that fails, or is full, is
// Unavailable with a RetryInfo, and nothing runs.
func TestStoreFailuresAreUnavailable(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		err    error
		reason string
		delay  time.Duration
	}{
		"down": {errors.New("connection refused"), grpcidem.ReasonStoreUnavailable, time.Second},
		"full": {memstore.ErrFull, grpcidem.ReasonStoreFull, 30 * time.Second},
	} {
		svc := &scenario.Charges{Ledger: &scenario.MemLedger{}}
		addr := serve(t, svc, []grpc.UnaryServerInterceptor{grpcidem.UnaryServerInterceptor(failingStore{err: tc.err}, singleTenant)})
		_, _, err := call(withKey(t.Context(), "k"), dial(t, addr), charge("ann", 1))
		assert.Equal(t, codes.Unavailable, status.Code(err), name)
		r, delay := reason(err)
		assert.Equal(t, tc.reason, r, name)
		assert.Equal(t, tc.delay, delay, name)
		assert.NotContains(t, status.Convert(err).Message(), "refused", "no internal text on the wire")
		assert.Zero(t, svc.Ledger.Count(t, ""), name)
	}
}

// TestBadOptionsPanic: a misconfiguration is found at start-up.
func TestBadOptionsPanic(t *testing.T) {
	t.Parallel()
	store := memstore.New(memstore.Options{})
	scope := func(context.Context) (string, error) { return "s", nil }
	for name, o := range map[string]grpcidem.ServerOptions{
		"no scope":           {},
		"both scopes":        {Scope: scope, SingleTenant: true},
		"header and field":   {SingleTenant: true, Header: "x-key", KeyField: "request_id"},
		"uppercase header":   {SingleTenant: true, Header: "Idempotency-Key"},
		"binary header":      {SingleTenant: true, Header: "key-bin"},
		"reserved header":    {SingleTenant: true, Header: "grpc-key"},
		"bad field":          {SingleTenant: true, KeyField: "request id"},
		"negative retention": {SingleTenant: true, Retention: -1},
	} {
		assert.Panics(t, func() { grpcidem.UnaryServerInterceptor(store, o) }, name)
	}
	assert.Panics(t, func() { grpcidem.UnaryServerInterceptor(nil, singleTenant) })
}
