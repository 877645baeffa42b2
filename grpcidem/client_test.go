package grpcidem_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/idemhq/idem"
	"github.com/idemhq/idem/grpcidem"
	"github.com/idemhq/idem/grpcidem/internal/scenario"
	"github.com/idemhq/idem/grpcidem/internal/testpb"
	"github.com/idemhq/idem/server"
	"github.com/idemhq/idem/server/memstore"
)

const chargeMethod = "/idem.test.v1.Charges/Charge"

// sent is one attempt as the fake transport saw it.
type sent struct {
	key   string
	body  []byte
	at    time.Time
	req   *testpb.ChargeRequest
	ctxOK bool // the attempt's context had not ended when it was sent
}

// fake is a transport under the interceptor: it records every attempt
// and answers the n-th (1-based) with answer(n, ctx).
type fake struct {
	sent   []sent
	answer func(n int, ctx context.Context) (replayed bool, err error)
}

func (f *fake) invoke(ctx context.Context, _ string, req, reply any, _ *grpc.ClientConn, opts ...grpc.CallOption) error {
	body, err := proto.Marshal(req.(proto.Message))
	if err != nil {
		return err
	}
	var decoded testpb.ChargeRequest
	if err := proto.Unmarshal(body, &decoded); err != nil {
		return err
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	var key string
	if v := md.Get(grpcidem.DefaultHeader); len(v) == 1 {
		key = v[0]
	}
	f.sent = append(f.sent, sent{key: key, body: body, at: time.Now(), req: &decoded, ctxOK: ctx.Err() == nil})
	replayed, err := f.answer(len(f.sent), ctx)
	if replayed {
		for _, o := range opts {
			if h, ok := o.(grpc.HeaderCallOption); ok {
				*h.HeaderAddr = metadata.Pairs(grpcidem.ReplayedHeader, "true")
			}
		}
	}
	if err == nil { // as a codec would: the reply's bytes into the reply given
		b, merr := proto.Marshal(&testpb.ChargeReply{Id: "ch_1"})
		if merr != nil {
			return merr
		}
		return proto.Unmarshal(b, reply.(proto.Message))
	}
	return err
}

func interceptor(t *testing.T, o grpcidem.ClientOptions) grpc.UnaryClientInterceptor {
	t.Helper()
	ic, err := grpcidem.UnaryClientInterceptor(o)
	require.NoError(t, err)
	return ic
}

func invoke(ctx context.Context, ic grpc.UnaryClientInterceptor, f *fake, req *testpb.ChargeRequest, opts ...grpc.CallOption) error {
	return ic(ctx, chargeMethod, req, &testpb.ChargeReply{}, nil, f.invoke, opts...)
}

// failing answers the first n attempts with code, then succeeds.
func failing(n int, code codes.Code) func(int, context.Context) (bool, error) {
	return func(i int, _ context.Context) (bool, error) {
		if i <= n {
			return false, status.Error(code, "injected")
		}
		return i > 1, nil
	}
}

func withRetryInfo(code codes.Code, d time.Duration) error {
	st, _ := status.New(code, "later").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
	return st.Err()
}

// TestSameKeyAndBytesOnEveryAttempt: a request with a map (whose plain
// encoding varies from one Marshal to the next) goes out with one key and
// byte-identical bodies, its deterministic encoding, on every attempt; the
// replay of the last is reported.
func TestSameKeyAndBytesOnEveryAttempt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fake{answer: failing(4, codes.Unavailable)}
		req := charge("ann", 1)
		for i := range 20 {
			req.Labels[string(rune('d'+i))] = "x"
		}
		var replayed bool
		require.NoError(t, invoke(t.Context(), interceptor(t, grpcidem.ClientOptions{}), f, req, grpcidem.Replayed(&replayed)))
		require.Len(t, f.sent, 5)
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
		require.NoError(t, err)
		for _, s := range f.sent {
			assert.Equal(t, f.sent[0].key, s.key)
			assert.Equal(t, want, s.body)
		}
		_, err = idem.ParseKey(f.sent[0].key)
		assert.NoError(t, err)
		assert.True(t, replayed)
	})
}

// TestRetryRules: which codes are retried, and what the caller gets when
// the interceptor stops.
func TestRetryRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code     codes.Code
		attempts int
		err      error // nil: the server's status, unchanged
	}{
		{codes.Unavailable, 3, idem.ErrRetriesExhausted},
		{codes.Aborted, 3, idem.ErrRetriesExhausted},
		{codes.ResourceExhausted, 3, idem.ErrRetriesExhausted},
		{codes.DeadlineExceeded, 3, idem.ErrRetriesExhausted},
		{codes.InvalidArgument, 1, nil},
		{codes.NotFound, 1, nil},
		{codes.FailedPrecondition, 1, nil},
		{codes.PermissionDenied, 1, nil},
		{codes.Internal, 1, nil},
		{codes.Unknown, 1, nil},
		{codes.Canceled, 1, nil},
	} {
		t.Run(tc.code.String(), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				f := &fake{answer: failing(10, tc.code)}
				err := invoke(t.Context(), interceptor(t, grpcidem.ClientOptions{MaxAttempts: 3}), f, charge("ann", 1))
				assert.Len(t, f.sent, tc.attempts)
				assert.Equal(t, tc.code, status.Code(err), "the caller sees the server's code")
				var e *grpcidem.Error
				if tc.err == nil {
					assert.False(t, errors.As(err, &e), "a final answer comes through as the server gave it")
					return
				}
				require.ErrorAs(t, err, &e)
				assert.ErrorIs(t, err, tc.err)
				assert.Equal(t, tc.attempts, e.Attempts)
				assert.Equal(t, f.sent[0].key, e.Key)
			})
		})
	}
}

// TestKeyReusedIsNotRetried: the server's key-reuse refusal is a typed
// error, sent once.
func TestKeyReusedIsNotRetried(t *testing.T) {
	t.Parallel()
	addr := serve(t, &scenario.Charges{Ledger: &scenario.MemLedger{}}, []grpc.UnaryServerInterceptor{grpcidem.UnaryServerInterceptor(memstore.New(memstore.Options{}), singleTenant)})
	cc := dial(t, addr, grpc.WithUnaryInterceptor(interceptor(t, grpcidem.ClientOptions{})))
	_, err := cc.Charge(t.Context(), charge("ann", 1), grpcidem.Key("k-once"))
	require.NoError(t, err)
	_, err = cc.Charge(t.Context(), charge("ann", 2), grpcidem.Key("k-once"))
	assert.ErrorIs(t, err, idem.ErrKeyReused)
	assert.Equal(t, codes.FailedPrecondition, status.Code(err))
	var e *grpcidem.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 1, e.Attempts)
}

// TestRetryInfoHonoured: the wait is the server's RetryInfo, clamped to
// MaxRetryDelay, never jittered shorter; without one, the backoff's.
func TestRetryInfoHonoured(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		hint, clamp, want time.Duration
	}{
		"as asked":  {3 * time.Second, 0, 3 * time.Second},
		"clamped":   {3 * time.Minute, 2 * time.Second, 2 * time.Second},
		"immediate": {0, 0, 0},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				f := &fake{answer: func(n int, _ context.Context) (bool, error) {
					if n == 1 {
						return false, withRetryInfo(codes.Aborted, tc.hint)
					}
					return false, nil
				}}
				ic := interceptor(t, grpcidem.ClientOptions{MaxRetryDelay: tc.clamp})
				require.NoError(t, invoke(t.Context(), ic, f, charge("ann", 1)))
				require.Len(t, f.sent, 2)
				assert.Equal(t, tc.want, f.sent[1].at.Sub(f.sent[0].at))
			})
		})
	}
	synctest.Test(t, func(t *testing.T) {
		f := &fake{answer: failing(3, codes.Unavailable)}
		ic := interceptor(t, grpcidem.ClientOptions{BaseDelay: time.Second, MaxDelay: time.Second})
		require.NoError(t, invoke(t.Context(), ic, f, charge("ann", 1)))
		for i := 1; i < len(f.sent); i++ {
			assert.Less(t, f.sent[i].at.Sub(f.sent[i-1].at), time.Second, "full jitter under the ceiling")
		}
	})
}

// TestNeverSleepsPastTheDeadline: a wait that would end after the call's
// deadline is not started.
func TestNeverSleepsPastTheDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		f := &fake{answer: func(int, context.Context) (bool, error) {
			return false, withRetryInfo(codes.Unavailable, 5*time.Second)
		}}
		began := time.Now()
		err := invoke(ctx, interceptor(t, grpcidem.ClientOptions{}), f, charge("ann", 1))
		assert.ErrorIs(t, err, idem.ErrDeadline)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Len(t, f.sent, 1)
		assert.Zero(t, time.Since(began), "it did not wait")
	})
}

// TestAttemptTimeoutRetried: an attempt that outlives AttemptTimeout ends
// DeadlineExceeded and is retried while the call's context lasts; the
// call's own deadline ends the call.
func TestAttemptTimeoutRetried(t *testing.T) {
	t.Parallel()
	hang := func(n int, ctx context.Context) (bool, error) {
		if n == 1 {
			<-ctx.Done()
			return false, status.FromContextError(ctx.Err()).Err()
		}
		return false, nil
	}
	synctest.Test(t, func(t *testing.T) {
		f := &fake{answer: hang}
		require.NoError(t, invoke(t.Context(), interceptor(t, grpcidem.ClientOptions{AttemptTimeout: time.Second}), f, charge("ann", 1)))
		assert.Len(t, f.sent, 2)
	})
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		f := &fake{answer: hang}
		err := invoke(ctx, interceptor(t, grpcidem.ClientOptions{AttemptTimeout: time.Minute}), f, charge("ann", 1))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
		assert.Len(t, f.sent, 1)
	})
}

// TestCancelledWaitRefundsTheBudget: a caller that gives up during a wait
// gets its context's error, and the retry it never sent costs nothing.
func TestCancelledWaitRefundsTheBudget(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ic := interceptor(t, grpcidem.ClientOptions{Budget: idem.BudgetOptions{Capacity: 5, RetryCost: 5}})
		ctx, cancel := context.WithCancel(t.Context())
		f := &fake{answer: func(int, context.Context) (bool, error) {
			time.AfterFunc(time.Millisecond, cancel)
			return false, withRetryInfo(codes.Unavailable, time.Second)
		}}
		assert.ErrorIs(t, invoke(ctx, ic, f, charge("ann", 1)), context.Canceled)
		f = &fake{answer: failing(1, codes.Unavailable)}
		require.NoError(t, invoke(t.Context(), ic, f, charge("ann", 1)), "the refunded tokens pay this retry")
	})
}

// TestBudgetStopsRetryStorms: once the shared bucket is empty, calls stop
// retrying with ErrBudgetExhausted while first attempts still go out.
func TestBudgetStopsRetryStorms(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ic := interceptor(t, grpcidem.ClientOptions{MaxAttempts: 2, Budget: idem.BudgetOptions{Capacity: 10, RetryCost: 5}})
		var exhausted, sentTotal int
		for range 4 {
			f := &fake{answer: failing(10, codes.Unavailable)}
			err := invoke(t.Context(), ic, f, charge("ann", 1))
			sentTotal += len(f.sent)
			if errors.Is(err, idem.ErrBudgetExhausted) {
				exhausted++
			}
		}
		assert.Equal(t, 2, exhausted, "two retries paid, then none")
		assert.Equal(t, 6, sentTotal)
	})
}

// TestKeys: a key given with Key, one already in the metadata, one
// derived from the key the work holds (the same on every run, distinct
// per method and step), or one minted per call.
func TestKeys(t *testing.T) {
	t.Parallel()
	ok := func(int, context.Context) (bool, error) { return false, nil }
	ic := interceptor(t, grpcidem.ClientOptions{})
	keyOf := func(ctx context.Context, opts ...grpc.CallOption) string {
		f := &fake{answer: ok}
		require.NoError(t, invoke(ctx, ic, f, charge("ann", 1), opts...))
		return f.sent[0].key
	}
	assert.Equal(t, "k-given", keyOf(t.Context(), grpcidem.Key("k-given")))
	assert.Equal(t, "k-md", keyOf(withKey(t.Context(), "k-md")))
	assert.NotEqual(t, keyOf(t.Context()), keyOf(t.Context()), "minted per call")
	f := &fake{answer: ok}
	err := invoke(withKey(t.Context(), "k-md"), ic, f, charge("ann", 1), grpcidem.Key("k-other"))
	assert.ErrorIs(t, err, idem.ErrInvalidKey)
	assert.Empty(t, f.sent)
	err = invoke(t.Context(), ic, f, charge("ann", 1), grpcidem.Key("k\x01"))
	assert.ErrorIs(t, err, idem.ErrInvalidKey)
	assert.Equal(t, codes.InvalidArgument, status.Code(err))

	// Inside work that holds a key, as a handler behind the server
	// interceptor is, the key is derived from it.
	held := func(step string) string {
		var k string
		_, _, err := server.RunOnce(t.Context(), memstore.New(memstore.Options{}), server.Key{Scope: "s", Key: "parent"}, "fp",
			func(ctx context.Context) ([]byte, error) {
				if step != "" {
					ctx = idem.Step(ctx, step)
				}
				k = keyOf(ctx)
				return nil, nil
			}, server.RunOptions{})
		require.NoError(t, err)
		return k
	}
	assert.Equal(t, held(""), held(""), "every run derives the same key")
	assert.NotEqual(t, held(""), held("refund"))
	assert.NotEqual(t, "parent", held(""))
}

// TestKeyFieldClient puts the key in request_id of a copy of the request.
func TestKeyFieldClient(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fake{answer: failing(1, codes.Unavailable)}
		req := charge("ann", 1)
		require.NoError(t, invoke(t.Context(), interceptor(t, grpcidem.ClientOptions{KeyField: "request_id"}), f, req))
		require.Len(t, f.sent, 2)
		assert.Empty(t, req.GetRequestId(), "the caller's message is not changed")
		assert.NotEmpty(t, f.sent[0].req.GetRequestId())
		assert.Equal(t, f.sent[0].req.GetRequestId(), f.sent[1].req.GetRequestId())
		assert.Empty(t, f.sent[0].key, "not in the metadata")

		req.RequestId = "k-caller"
		f = &fake{answer: failing(0, codes.OK)}
		require.NoError(t, invoke(t.Context(), interceptor(t, grpcidem.ClientOptions{KeyField: "request_id"}), f, req))
		assert.Equal(t, "k-caller", f.sent[0].req.GetRequestId())
	})
}

// TestClientOptionsRefused: bad options are an error from the
// constructor.
func TestClientOptionsRefused(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]grpcidem.ClientOptions{
		"header and field": {Header: "x-key", KeyField: "request_id"},
		"bad header":       {Header: "Idempotency-Key"},
		"bad field":        {KeyField: "a..b"},
		"negative":         {MaxAttempts: -1},
		"base over max":    {BaseDelay: time.Minute, MaxDelay: time.Second},
	} {
		_, err := grpcidem.UnaryClientInterceptor(o)
		assert.Error(t, err, name)
	}
}
