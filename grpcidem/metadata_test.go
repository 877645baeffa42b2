package grpcidem_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/scenario"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
)

// recorder is a server interceptor that keeps the incoming metadata and
// request of every call it sees and, while fail is set, answers
// Unavailable before the handler runs.
type recorder struct {
	mu   sync.Mutex
	md   []metadata.MD
	reqs []*testpb.ChargeRequest
	fail atomic.Bool
}

func (r *recorder) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	r.mu.Lock()
	r.md = append(r.md, md.Copy())
	if cr, ok := req.(*testpb.ChargeRequest); ok {
		r.reqs = append(r.reqs, cr)
	}
	r.mu.Unlock()
	if r.fail.Load() {
		return nil, status.Error(codes.Unavailable, "not now")
	}
	return handler(ctx, req)
}

func (r *recorder) seen() []metadata.MD {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]metadata.MD(nil), r.md...)
}

// userMetadata is the outgoing metadata of a caller's worst day: binary
// values (every byte), several values for a key, keys
// gRPC reserves for itself, a grpc- key gRPC lets through, and a value
// far larger than a header usually is.
func userMetadata(ctx context.Context) context.Context {
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	ctx = metadata.NewOutgoingContext(ctx, metadata.MD{
		"x-multi":        {"one", "two", "three"},
		"x-blob-bin":     {string(binary), "\xff\xfe\x00"},
		"grpc-trace-bin": {"\x00\x01trace"},
	})
	return metadata.AppendToOutgoingContext(ctx,
		":authority", "evil.example", "grpc-timeout", "1S", "content-type", "application/json",
		"te", "gzip", "user-agent", "mine/1.0",
		"x-large", strings.Repeat("v", 100<<10),
		"x-multi", "four")
}

// comparable returns md without what differs between two calls by
// design: the idempotency key (the plain call carries none).
func comparable(md metadata.MD) metadata.MD {
	md = md.Copy()
	delete(md, grpcidem.DefaultHeader)
	return md
}

// TestMetadataAsAPlainCallSendsIt: the server sees, on every attempt of a
// call through the interceptor and on its attempt resumed from the
// journal, the metadata a plain gRPC call with the same context sends
// (binary values byte for byte, every value of a key in order, keys gRPC
// reserves dropped as gRPC drops them), plus the key.
func TestMetadataAsAPlainCallSendsIt(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	addr := serve(t, &scenario.Charges{Ledger: &scenario.MemLedger{}}, []grpc.UnaryServerInterceptor{rec.intercept})
	ctx := userMetadata(t.Context())

	_, err := dial(t, addr).Charge(ctx, charge("ann", 1))
	require.NoError(t, err)
	plain := rec.seen()[0]
	require.Equal(t, []string{"one", "two", "three", "four"}, plain.Get("x-multi"), "the plain call, as gRPC sends it")

	j := openJournal(t)
	tr := grpcidem.NewTransport(nil)
	client, err := idem.New(idem.Options{Journal: j, Transport: tr, MaxAttempts: 2, BaseDelay: 1, MaxDelay: 1, ResumeJitter: -1})
	require.NoError(t, err)
	cc := conn(t, addr, grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{Client: client})))
	tr.Register(cc.Target(), cc)

	rec.fail.Store(true)
	_, err = testpb.NewChargesClient(cc).Charge(ctx, charge("ann", 1))
	require.ErrorIs(t, err, idem.ErrRetriesExhausted)
	rec.fail.Store(false)
	res, err := client.Resume(t.Context())
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err)

	seen := rec.seen()
	require.Len(t, seen, 4, "the plain call, two attempts, the resumed one")
	key := seen[1].Get(grpcidem.DefaultHeader)
	require.Len(t, key, 1)
	for i, md := range seen[1:] {
		assert.Equal(t, key, md.Get(grpcidem.DefaultHeader), "attempt %d: the key", i)
		want := comparable(plain)
		got := comparable(md)
		if i == 2 {
			// Resumed: the journal kept everything but the credentials,
			// and this call carried none.
			assert.Equal(t, want, got, "resumed: the metadata the plain call sent")
			continue
		}
		assert.Equal(t, want, got, "attempt %d: the metadata the plain call sent", i)
	}
}

// conn returns a ClientConn to addr, closed when the test ends.
func conn(t *testing.T, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	return cc
}

// TestCredentialsSentNeverJournaled: authorization and the headers
// idem.Options.SecretHeaders names go out on every live attempt and are
// never written to the journal; a resumed call carries what
// PrepareRequest puts back. A key given in upper case (which gRPC itself
// refuses in a metadata.MD literal) is sent lowercased, the same on every
// attempt.
func TestCredentialsSentNeverJournaled(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	addr := serve(t, &scenario.Charges{Ledger: &scenario.MemLedger{}}, []grpc.UnaryServerInterceptor{rec.intercept})
	j := openJournal(t)
	tr := grpcidem.NewTransport(nil)
	client, err := idem.New(idem.Options{Journal: j, Transport: tr, MaxAttempts: 2, BaseDelay: 1, MaxDelay: 1, ResumeJitter: -1,
		SecretHeaders: []string{"X-Card-Number"},
		PrepareRequest: func(r *http.Request) error {
			if r.Header.Get("Authorization") == "" {
				r.Header.Set("Authorization", "Bearer fresh")
			}
			return nil
		}})
	require.NoError(t, err)
	cc := conn(t, addr, grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{Client: client})))
	tr.Register(cc.Target(), cc)

	ctx := metadata.NewOutgoingContext(t.Context(), metadata.MD{"X-Upper": {"Kept"}})
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer s3cret", "x-card-number", "4242", "x-tenant", "acme")
	rec.fail.Store(true)
	_, err = testpb.NewChargesClient(cc).Charge(ctx, charge("ann", 1))
	require.ErrorIs(t, err, idem.ErrRetriesExhausted)
	pending, err := j.Pending()
	require.NoError(t, err)
	require.Len(t, pending, 1)
	for name := range pending[0].Header {
		assert.NotContains(t, []string{"Authorization", "X-Card-Number"}, name, "journaled")
	}
	assert.Equal(t, []string{"acme"}, pending[0].Header.Values("X-Tenant"))

	rec.fail.Store(false)
	res, err := client.Resume(t.Context())
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err)
	seen := rec.seen()
	require.Len(t, seen, 3)
	for i, md := range seen[:2] {
		assert.Equal(t, []string{"Bearer s3cret"}, md.Get("authorization"), "live attempt %d", i)
		assert.Equal(t, []string{"4242"}, md.Get("x-card-number"), "live attempt %d", i)
		assert.Equal(t, []string{"Kept"}, md.Get("x-upper"), "live attempt %d", i)
	}
	assert.Equal(t, []string{"Bearer fresh"}, seen[2].Get("authorization"), "resumed: PrepareRequest's")
	assert.Empty(t, seen[2].Get("x-card-number"), "resumed: not journaled")
	assert.Equal(t, []string{"Kept"}, seen[2].Get("x-upper"))
	assert.Equal(t, []string{"acme"}, seen[2].Get("x-tenant"))
}

// TestKeyInMetadataEdges: a key of two values in the metadata is refused
// before anything is sent (the server would refuse it; sending one of
// them would not be the call the caller made), and a key given quoted in
// the metadata and bare with grpcidem.Key is one key.
func TestKeyInMetadataEdges(t *testing.T) {
	t.Parallel()
	ok := func(int, context.Context) (bool, error) { return false, nil }
	ic := interceptor(t, grpcidem.ClientOptions{})
	f := &fake{answer: ok}
	err := invoke(withKey(withKey(t.Context(), "k-one"), "k-two"), ic, f, charge("ann", 1))
	require.ErrorIs(t, err, idem.ErrInvalidKey)
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Empty(t, f.sent)

	require.NoError(t, invoke(withKey(t.Context(), `"k-quoted"`), ic, f, charge("ann", 1), grpcidem.Key("k-quoted")))
	require.Len(t, f.sent, 1)
	assert.Equal(t, "k-quoted", f.sent[0].key)
}
