package grpcidem_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
)

// TestCallsEndWithTheirContextsCode: a call whose context ends, during
// an attempt or during the wait after one the server refused, returns
// the context's gRPC code (Canceled, DeadlineExceeded) as a plain gRPC
// call does, with a cause of the caller's own too, and not the code of
// the last attempt; the last attempt's status stays in the *Error. A
// wait the deadline would cut is not started, and is DeadlineExceeded.
// Every goroutine the call started has ended when the bubble does.
func TestCallsEndWithTheirContextsCode(t *testing.T) {
	t.Parallel()
	shutdown := errors.New("shutting down")
	hang := func(_ int, ctx context.Context) (bool, error) {
		<-ctx.Done()
		return false, status.FromContextError(ctx.Err()).Err()
	}
	refuse := func(int, context.Context) (bool, error) {
		return false, withRetryInfo(codes.Unavailable, 10*time.Second)
	}
	for name, tc := range map[string]struct {
		answer func(int, context.Context) (bool, error)
		ctx    func(context.Context) (context.Context, func())
		code   codes.Code
		is     error
		last   codes.Code // the *Error's Status
	}{
		"cancelled in an attempt": {hang, func(ctx context.Context) (context.Context, func()) {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(time.Second, cancel)
			return ctx, cancel
		}, codes.Canceled, context.Canceled, codes.Canceled},
		"cancelled with a cause in an attempt": {hang, func(ctx context.Context) (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(ctx)
			time.AfterFunc(time.Second, func() { cancel(shutdown) })
			return ctx, func() { cancel(nil) }
		}, codes.Canceled, context.Canceled, codes.Canceled},
		"deadline with a cause in an attempt": {hang, func(ctx context.Context) (context.Context, func()) {
			return context.WithTimeoutCause(ctx, time.Second, shutdown)
		}, codes.DeadlineExceeded, context.DeadlineExceeded, codes.DeadlineExceeded},
		"cancelled in the wait": {refuse, func(ctx context.Context) (context.Context, func()) {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(time.Second, cancel)
			return ctx, cancel
		}, codes.Canceled, context.Canceled, codes.Unavailable},
		"wait past the deadline": {refuse, func(ctx context.Context) (context.Context, func()) {
			return context.WithTimeout(ctx, 5*time.Second)
		}, codes.DeadlineExceeded, idem.ErrDeadline, codes.Unavailable},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := tc.ctx(t.Context())
				defer cancel()
				f := &fake{answer: tc.answer}
				err := invoke(ctx, interceptor(t, grpcidem.ClientOptions{}), f, charge("ann", 1))
				require.ErrorIs(t, err, tc.is)
				assert.Equal(t, tc.code, status.Code(err), "%v", err)
				var e *grpcidem.Error
				require.ErrorAs(t, err, &e)
				if assert.NotNil(t, e.Status) {
					assert.Equal(t, tc.last, e.Status.Code(), "the last attempt's status is kept")
				}
			})
		})
	}
}

// TestHangingServer: a server whose handler never answers is cut by
// AttemptTimeout and retried, and the caller's deadline ends the call
// DeadlineExceeded; WaitForReady on a connection that never comes up
// ends the same way.
func TestHangingServer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	attempts := make(chan struct{}, 100)
	hanging := &hangs{arrived: attempts, release: release}
	addr := serve(t, hanging, nil)
	client, err := idem.New(idem.Options{Transport: grpcidem.NewTransport(nil), AttemptTimeout: 50 * time.Millisecond, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
	require.NoError(t, err)
	c := dial(t, addr, grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{Client: client})))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	_, err = c.Charge(ctx, charge("ann", 1))
	require.ErrorIs(t, err, idem.ErrRetriesExhausted, "every attempt was cut by AttemptTimeout and retried")
	var e *grpcidem.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 5, e.Attempts)
	assert.NotEmpty(t, attempts)
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "the last attempt's end")

	ctx, cancel = context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err = c.Charge(ctx, charge("ann", 1))
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)

	down := dial(t, "127.0.0.1:1", grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{})))
	ctx, cancel = context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err = down.Charge(ctx, charge("ann", 1), grpc.WaitForReady(true))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
}

// hangs holds every Charge until release is closed, after telling
// arrived.
type hangs struct {
	testpb.UnimplementedChargesServer
	arrived chan<- struct{}
	release <-chan struct{}
}

func (h *hangs) Charge(ctx context.Context, _ *testpb.ChargeRequest) (*testpb.ChargeReply, error) {
	h.arrived <- struct{}{}
	select {
	case <-h.release:
		return nil, status.Error(codes.Unavailable, "released")
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}
