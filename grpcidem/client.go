// This file holds UnaryClientInterceptor: one key per call, the same key
// and bytes on every attempt, retries by status code, RetryInfo and the
// call's deadline.

package grpcidem

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/idemhq/idem"
)

// ClientOptions configures [UnaryClientInterceptor]. The zero value means
// the documented defaults.
type ClientOptions struct {
	// Client derives the key of a call made from inside work that holds a
	// key itself (a handler behind this package's server interceptor or
	// server.Middleware): Client.StepKey, with its DeriveSecret and
	// MaxKeyLen, the call's step named by idem.Step or, unnamed, "POST"
	// and the full method name (the HTTP/2 request a gRPC call is).
	// Default: a client of idem.New(idem.Options{}).
	Client *idem.Client
	// NewKey mints the key of a call that has none. Default idem.NewKey
	// (UUIDv7).
	NewKey func() string
	// Header is the request metadata key the key is sent in. Default
	// "idempotency-key".
	Header string
	// KeyField, if set, sends the key in a string field of the request
	// message instead (AIP-155's request_id; a dotted path names a nested
	// field), as ServerOptions.KeyField reads it: a key the caller put
	// there is used, and an empty field gets one, in a copy of the
	// request (the caller's message is not changed). Setting both Header
	// and KeyField is an error. Default "": the key is in the metadata.
	KeyField string
	// Methods reports whether a unary method (by its full name) gets a key
	// and retries. Other calls pass through untouched. Default nil: every
	// unary call.
	Methods func(fullMethod string) bool
	// MaxAttempts is the most attempts one call makes, the first
	// included. Default 5.
	MaxAttempts int
	// BaseDelay and MaxDelay shape the backoff between attempts (see
	// idem.Backoff). Defaults 200 ms and 10 s.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxRetryDelay clamps the delay a server asks for in a
	// google.rpc.RetryInfo. Default 60 s.
	MaxRetryDelay time.Duration
	// AttemptTimeout bounds one attempt; an attempt past it ends with
	// DeadlineExceeded and is retried while the call's own context lasts.
	// Default 30 s; negative: no bound but the call's.
	AttemptTimeout time.Duration
	// Budget is the interceptor's retry budget, shared by every call it
	// makes, with idem.BudgetOptions' rules and defaults (retries after a
	// DeadlineExceeded cost TimeoutCost). Default: see idem.BudgetOptions.
	Budget idem.BudgetOptions
}

// Error is the error of a call the client interceptor stopped retrying
// without a final answer, or whose answer is key reuse, or that it would
// not send. Use errors.Is on it for the reason; status.Code and
// status.FromError read its GRPCStatus, the last attempt's status.
type Error struct {
	// Method is the call's full method name.
	Method string
	// Key is the call's idempotency key: retry later with the same key.
	Key string
	// Attempts is how many attempts were sent.
	Attempts int
	// Err is the reason: idem.ErrRetriesExhausted, idem.ErrBudgetExhausted,
	// idem.ErrDeadline (the next wait would end past the call's deadline),
	// idem.ErrKeyReused (the server said so: never retried),
	// idem.ErrInvalidKey or ErrNoKeyField (nothing was sent), or the
	// call's context error.
	Err error
	// Status is the last attempt's status; nil if nothing was sent.
	Status *status.Status
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "grpcidem: %s (key %q): %v", e.Method, e.Key, e.Err)
	if e.Attempts > 0 {
		fmt.Fprintf(&b, " after %d attempt", e.Attempts)
		if e.Attempts > 1 {
			b.WriteByte('s')
		}
	}
	if e.Status != nil {
		fmt.Fprintf(&b, ", last status %s: %s", e.Status.Code(), e.Status.Message())
	}
	return b.String()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// GRPCStatus returns the last attempt's status, or, if nothing was sent,
// InvalidArgument for a key or request that could not be sent and the
// status of a context error.
func (e *Error) GRPCStatus() *status.Status {
	switch {
	case e.Status != nil:
		return e.Status
	case errors.Is(e.Err, context.Canceled), errors.Is(e.Err, context.DeadlineExceeded):
		return status.FromContextError(e.Err)
	}
	return status.New(codes.InvalidArgument, e.Error())
}

// keyOption carries Key's key to the interceptor.
type keyOption struct {
	grpc.EmptyCallOption
	key string
}

// Key returns a call option that gives the call its idempotency key, in
// place of one the interceptor would derive or mint: a key from
// idem.DeriveKey, or one kept to retry an operation later.
func Key(key string) grpc.CallOption { return keyOption{key: key} }

// replayedOption carries Replayed's flag to the interceptor.
type replayedOption struct {
	grpc.EmptyCallOption
	to *bool
}

// Replayed returns a call option that sets *to, once the call has
// returned, to whether its answer was the server's replay of an earlier
// attempt's ("idempotent-replayed: true").
func Replayed(to *bool) grpc.CallOption { return replayedOption{to: to} }

// UnaryClientInterceptor returns a gRPC unary client interceptor that
// makes state-changing calls safe to retry: each call gets one
// idempotency key (given with [Key], already in the outgoing metadata or
// the KeyField, derived from the key the context's work holds, or
// minted), and every attempt sends the same key and the same bytes (the
// request's deterministic encoding, made once). Failed attempts are
// retried as the package documentation's # Retries says, honouring the
// server's google.rpc.RetryInfo, never starting a wait that would end past
// the call's deadline, within the retry budget. It fails on invalid
// options: a bad Header or KeyField, both set, a negative count or
// duration, BaseDelay above MaxDelay.
//
// A final answer is returned as the server gave it; a call that ends
// without one returns an [*Error] that carries the key. The interceptor
// sends the request as pre-encoded protobuf through the call's codec, so
// it suits the default proto codec; a call with its own codec option
// (grpc.ForceCodec, grpc.CallContentSubtype) is sent as its message.
// Interceptors placed after it in the chain see the pre-encoded request:
// put it last. It is safe for concurrent use.
func UnaryClientInterceptor(opts ClientOptions) (grpc.UnaryClientInterceptor, error) {
	ci, err := newClientInterceptor(opts)
	if err != nil {
		return nil, err
	}
	return ci.intercept, nil
}

type clientInterceptor struct {
	o      ClientOptions
	field  *fieldPath
	budget *budget
}

func newClientInterceptor(o ClientOptions) (*clientInterceptor, error) {
	switch {
	case o.Header != "" && o.KeyField != "":
		return nil, errors.New("grpcidem: ClientOptions sets both Header and KeyField; the key is in one place")
	case o.MaxAttempts < 0 || o.BaseDelay < 0 || o.MaxDelay < 0 || o.MaxRetryDelay < 0:
		return nil, errors.New("grpcidem: ClientOptions has a negative MaxAttempts, BaseDelay, MaxDelay or MaxRetryDelay")
	}
	ci := &clientInterceptor{o: o, budget: newBudget(o.Budget)}
	if o.KeyField != "" {
		p, err := parseFieldPath(o.KeyField)
		if err != nil {
			return nil, fmt.Errorf("grpcidem: ClientOptions.KeyField: %w", err)
		}
		ci.field = p
	}
	if ci.o.Header == "" {
		ci.o.Header = DefaultHeader
	}
	if err := checkHeader(ci.o.Header); err != nil {
		return nil, fmt.Errorf("grpcidem: ClientOptions.Header: %w", err)
	}
	if ci.o.Client == nil {
		c, err := idem.New(idem.Options{})
		if err != nil {
			return nil, err
		}
		ci.o.Client = c
	}
	if ci.o.NewKey == nil {
		ci.o.NewKey = idem.NewKey
	}
	if ci.o.MaxAttempts == 0 {
		ci.o.MaxAttempts = 5
	}
	if ci.o.MaxDelay == 0 {
		ci.o.MaxDelay = 10 * time.Second
	}
	if ci.o.BaseDelay == 0 {
		ci.o.BaseDelay = min(200*time.Millisecond, ci.o.MaxDelay)
	}
	if ci.o.BaseDelay > ci.o.MaxDelay {
		return nil, errors.New("grpcidem: ClientOptions.BaseDelay is above MaxDelay")
	}
	if ci.o.MaxRetryDelay == 0 {
		ci.o.MaxRetryDelay = time.Minute
	}
	if ci.o.AttemptTimeout == 0 {
		ci.o.AttemptTimeout = 30 * time.Second
	}
	return ci, nil
}

func (ci *clientInterceptor) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if ci.o.Methods != nil && !ci.o.Methods(method) {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	msg, ok := req.(proto.Message)
	if !ok {
		return invoker(ctx, method, req, reply, cc, opts...) // not protobuf: nothing to encode once
	}
	var (
		key      string
		replayed *bool
		ownCodec bool
	)
	for _, o := range opts {
		switch o := o.(type) {
		case keyOption:
			key = o.key
		case replayedOption:
			replayed = o.to
		case grpc.ForceCodecCallOption, grpc.ForceCodecV2CallOption, grpc.ContentSubtypeCallOption:
			ownCodec = true
		}
	}
	e := &Error{Method: method}
	key, msg, ctx, err := ci.place(ctx, method, key, msg)
	e.Key = key
	if err != nil {
		e.Err = err
		return e
	}
	payload := any(msg)
	if !ownCodec {
		b, err := deterministic.Marshal(msg)
		if err != nil {
			e.Err = err
			return e
		}
		// Its unknown fields are the encoded request, sent verbatim by any
		// protobuf codec: the same bytes on every attempt.
		frozen := &emptypb.Empty{}
		frozen.ProtoReflect().SetUnknown(b)
		payload = frozen
	}
	var header metadata.MD
	callOpts := append(opts[:len(opts):len(opts)], grpc.Header(&header))
	var lastCost int
	for attempt := 1; ; attempt++ {
		header = nil
		actx, cancel := ci.attemptContext(ctx)
		err := invoker(actx, method, payload, reply, cc, callOpts...)
		cancel()
		e.Attempts = attempt
		if replayed != nil {
			*replayed = len(header.Get(ReplayedHeader)) > 0 && header.Get(ReplayedHeader)[0] == "true"
		}
		if err == nil {
			if attempt == 1 {
				ci.budget.refund(ci.budget.opts.SuccessRefund)
			} else {
				ci.budget.refund(lastCost)
			}
			return nil
		}
		st := status.Convert(err)
		e.Status = st
		if cerr := ctx.Err(); cerr != nil {
			e.Err = context.Cause(ctx)
			return e
		}
		switch classify(st) {
		case reused:
			e.Err = idem.ErrKeyReused
			return e
		case final:
			return err
		}
		if attempt >= ci.o.MaxAttempts {
			e.Err = idem.ErrRetriesExhausted
			return e
		}
		wait := delay(st, attempt, ci.o.BaseDelay, ci.o.MaxDelay, ci.o.MaxRetryDelay)
		if dl, ok := ctx.Deadline(); ok && !time.Now().Add(wait).Before(dl) {
			e.Err = idem.ErrDeadline
			return e
		}
		cost, ok := ci.budget.take(st.Code() == codes.DeadlineExceeded)
		if !ok {
			e.Err = idem.ErrBudgetExhausted
			return e
		}
		lastCost = cost
		if err := sleep(ctx, wait); err != nil {
			ci.budget.refund(cost) // the retry is never sent
			e.Err = err
			return e
		}
	}
}

// place returns the call's key and the request to send, and ctx with the
// key in the outgoing metadata (unless it goes in KeyField). The key is
// given (Key), or already in place, or derived from the key ctx's work
// holds, or minted.
func (ci *clientInterceptor) place(ctx context.Context, method, key string, msg proto.Message) (string, proto.Message, context.Context, error) {
	var inPlace string
	if ci.field != nil {
		v, err := ci.field.get(msg.ProtoReflect())
		if err != nil {
			return key, msg, ctx, err
		}
		inPlace = v
	} else if md, ok := metadata.FromOutgoingContext(ctx); ok {
		if vals := md.Get(ci.o.Header); len(vals) > 0 {
			inPlace = vals[0]
			if key != "" && key != inPlace {
				return key, msg, ctx, fmt.Errorf("%w: the call's metadata carries another key than grpcidem.Key gives", idem.ErrInvalidKey)
			}
		}
	}
	switch {
	case key == "" && inPlace != "":
		key = inPlace
	case key == "":
		if k, ok := ci.o.Client.StepKey(ctx, &http.Request{Method: http.MethodPost, URL: &url.URL{Path: method}}); ok {
			key = k
		} else {
			key = ci.o.NewKey()
		}
	}
	if _, err := idem.ParseKey(key); err != nil {
		return key, msg, ctx, err
	}
	switch {
	case ci.field != nil && inPlace != key:
		msg = ci.field.set(msg, key)
	case ci.field == nil && inPlace == "":
		ctx = metadata.AppendToOutgoingContext(ctx, ci.o.Header, key)
	}
	return key, msg, ctx, nil
}

// attemptContext returns the context of one attempt: ctx bounded by
// AttemptTimeout.
func (ci *clientInterceptor) attemptContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ci.o.AttemptTimeout < 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, ci.o.AttemptTimeout)
}

// sleep waits d, or until ctx ends, and then returns ctx's cause.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
