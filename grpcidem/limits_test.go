package grpcidem_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
)

// sized answers Charge with a reply whose ID is as long as the request's
// amount, or, for customer "status", a NotFound whose ErrorInfo carries
// that many bytes, or, for customer "busy", Unavailable with them. It
// counts its runs.
type sized struct {
	testpb.UnimplementedChargesServer
	runs int
}

func (s *sized) Charge(_ context.Context, req *testpb.ChargeRequest) (*testpb.ChargeReply, error) {
	s.runs++
	big := strings.Repeat("x", int(req.GetAmount()))
	switch req.GetCustomer() {
	case "status", "busy":
		code := codes.NotFound
		if req.GetCustomer() == "busy" {
			code = codes.Unavailable
		}
		st, err := status.New(code, "big").WithDetails(&errdetails.ErrorInfo{Reason: "BIG", Metadata: map[string]string{"big": big}})
		if err != nil {
			return nil, err
		}
		return nil, st.Err()
	}
	// The ID first: a journal that cuts the encoding where the ID ends
	// leaves a message that decodes, without its amount and run.
	return &testpb.ChargeReply{Id: big, Amount: req.GetAmount(), Run: 1}, nil
}

// TestLimitsAreTypedErrors: every limit of idem's client on a call's
// bytes is a typed error, never an answer cut short: a reply or final
// status the journal kept only part of (MaxJournalBody) is
// idem.ErrBodyTooLarge on a repeat of the key, a request over
// MaxRequestBody and a reply over MaxResponseBody too, while calls near
// gRPC's own 4 MiB limit go through whole; the last status of a call
// whose retries ran out, cut to MaxErrorBody, keeps its code.
func TestLimitsAreTypedErrors(t *testing.T) {
	t.Parallel()
	svc := &sized{}
	addr := serve(t, svc, nil)
	j := openJournal(t)
	client, err := idem.New(idem.Options{Journal: j, Transport: grpcidem.NewTransport(nil), MaxAttempts: 2, BaseDelay: 1, MaxDelay: 1})
	require.NoError(t, err)
	c := dial(t, addr, grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{Client: client})))
	ctx := t.Context()

	t.Run("reply cut in the journal", func(t *testing.T) {
		const idLen = 64<<10 - 4 // tag, 3 bytes of length, the ID: 64 KiB exactly
		reply, err := c.Charge(ctx, charge("ann", idLen), grpcidem.Key("k-cut"))
		require.NoError(t, err)
		assert.EqualValues(t, idLen, reply.GetAmount(), "the live answer is whole")
		runs := svc.runs
		reply, err = c.Charge(ctx, charge("ann", idLen), grpcidem.Key("k-cut"))
		require.ErrorIs(t, err, idem.ErrBodyTooLarge, "not the first 64 KiB passed off as the reply: %v", reply)
		assert.Nil(t, reply)
		assert.Equal(t, codes.FailedPrecondition, status.Code(err), "as the server answers a result it did not keep")
		var e *grpcidem.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "k-cut", e.Key)
		assert.Equal(t, runs, svc.runs, "answered from the journal")
	})
	t.Run("status cut in the journal", func(t *testing.T) {
		_, err := c.Charge(ctx, charge("status", 100<<10), grpcidem.Key("k-cut-status"))
		require.Equal(t, codes.NotFound, status.Code(err))
		_, err = c.Charge(ctx, charge("status", 100<<10), grpcidem.Key("k-cut-status"))
		require.ErrorIs(t, err, idem.ErrBodyTooLarge)
		assert.Equal(t, codes.FailedPrecondition, status.Code(err))
	})
	t.Run("near gRPC's 4 MiB", func(t *testing.T) {
		const n = 4<<20 - 1<<10
		req := charge("ann", n)
		req.Currency = strings.Repeat("e", n)
		reply, err := c.Charge(ctx, req)
		require.NoError(t, err)
		assert.Len(t, reply.GetId(), n)
	})
	t.Run("last status cut to MaxErrorBody", func(t *testing.T) {
		_, err := c.Charge(ctx, charge("busy", 10<<10))
		require.ErrorIs(t, err, idem.ErrRetriesExhausted)
		assert.Equal(t, codes.Unavailable, status.Code(err))
	})

	small, err := idem.New(idem.Options{Transport: grpcidem.NewTransport(nil), MaxAttempts: 1, MaxRequestBody: 1 << 10, MaxResponseBody: 1 << 10})
	require.NoError(t, err)
	sc := dial(t, addr, grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{Client: small})))
	t.Run("request over MaxRequestBody", func(t *testing.T) {
		runs := svc.runs
		req := charge("ann", 1)
		req.Currency = strings.Repeat("e", 2<<10)
		_, err := sc.Charge(ctx, req)
		require.ErrorIs(t, err, idem.ErrBodyTooLarge)
		assert.Equal(t, codes.ResourceExhausted, status.Code(err), "as gRPC's own send limit")
		assert.Equal(t, runs, svc.runs, "nothing was sent")
	})
	t.Run("reply over MaxResponseBody", func(t *testing.T) {
		reply, err := sc.Charge(ctx, charge("ann", 2<<10))
		require.ErrorIs(t, err, idem.ErrBodyTooLarge)
		assert.Nil(t, reply)
		assert.Equal(t, codes.ResourceExhausted, status.Code(err), "as gRPC's own receive limit")
	})
	_ = proto.Size
}
