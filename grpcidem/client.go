// This file holds UnaryClientInterceptor: one key per call, the same key
// and bytes on every attempt, retries by status code, RetryInfo and the
// call's deadline.

package grpcidem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/idemhq/idem"
)

// ClientOptions configures [UnaryClientInterceptor]. The zero value means
// the documented defaults.
type ClientOptions struct {
	// Client is the idem client every call goes through: its retry rules
	// and budget (shared with the HTTP requests it sends), its journal
	// (a call is written to it before its first attempt, and
	// Client.Resume continues it after a crash), its Observer, and the
	// derivation of the key of a call made from inside work that holds a
	// key itself (a handler behind this package's server interceptor or
	// server.Middleware): Client.StepKey, with its DeriveSecret and
	// MaxKeyLen, the call's step named by idem.Step or, unnamed, "POST"
	// and the full method name (the HTTP/2 request a gRPC call is). Its
	// Options.Transport must be a [*Transport]; its Options.Header names
	// the metadata key (in lowercase) and must not be replaced by a
	// BodyKey. With Client set, the retry fields below must be zero: the
	// Client's Options hold them. Default: a client of idem.New with
	// Transport NewTransport(nil), Header and the fields below, and no
	// journal.
	Client *idem.Client
	// NewKey mints the key of a call that has none. Default idem.NewKey
	// (UUIDv7).
	NewKey func() string
	// Header is the request metadata key the key is sent in, for the
	// default Client. Default "idempotency-key"; with Client set, its
	// KeyHeader in lowercase (setting another is an error).
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
	// google.rpc.RetryInfo (whole seconds, rounded up). Default 60 s.
	MaxRetryDelay time.Duration
	// AttemptTimeout bounds one attempt; an attempt past it ends with
	// DeadlineExceeded and is retried while the call's own context lasts.
	// Default 30 s.
	AttemptTimeout time.Duration
	// Budget is the retry budget, shared by every call made through the
	// Client, with idem.BudgetOptions' rules and defaults (retries after
	// an attempt timed out cost TimeoutCost). Default: see
	// idem.BudgetOptions.
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
	// idem.ErrInvalidKey or ErrNoKeyField (nothing was sent),
	// idem.ErrBodyTooLarge (the request over the Client's MaxRequestBody,
	// nothing sent; the answer over its MaxResponseBody; or a repeat
	// whose answer the journal kept only in part, MaxJournalBody: never
	// a cut answer passed off as the whole), or the call's context error.
	Err error
	// Status is the last attempt's status (an attempt cut by its
	// timeout or the call's context: that context's code); nil if
	// nothing was sent. For
	// idem.ErrBodyTooLarge it is ResourceExhausted, as gRPC's own message
	// size limits are, or, for an answer the journal cut,
	// FailedPrecondition with reason RESULT_NOT_KEPT, as the server
	// interceptor answers a result it did not keep.
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

// GRPCStatus returns, for a call whose context ended (Err a context
// error) or whose next wait would have outlasted its deadline
// (idem.ErrDeadline), Canceled or DeadlineExceeded, as a plain gRPC
// call returns; otherwise the last attempt's status (DeadlineExceeded
// for an attempt cut by its timeout), or, if nothing was sent,
// InvalidArgument for a key or request that could not be sent.
func (e *Error) GRPCStatus() *status.Status {
	switch {
	case errors.Is(e.Err, context.Canceled), errors.Is(e.Err, context.DeadlineExceeded):
		// The call's context ended, or its deadline would have passed
		// in the next wait (idem.ErrDeadline): its code, as a plain
		// gRPC call's, whatever the last attempt got.
		return status.FromContextError(e.Err)
	case e.Status != nil && e.Status.Code() != codes.OK:
		return e.Status
	case e.Status != nil:
		// An error is never OK: an answer that could not be read.
		return status.New(codes.Internal, e.Error())
	}
	return status.New(codes.InvalidArgument, e.Error())
}

// stAnswerCut is the status of a repeated call whose answer the journal
// kept only in part: the server's answer to a result it did not keep.
var stAnswerCut = refusal(codes.FailedPrecondition, ReasonResultNotKept, "the call ran, and the journal kept only part of its answer (idem.Options.MaxJournalBody); look its result up another way", 0)

// keyOption carries Key's key to the interceptor.
type keyOption struct {
	grpc.EmptyCallOption
	key string
}

// Key returns a call option that gives the call its idempotency key, in
// place of one the interceptor would derive or mint: a key from
// idem.DeriveKey, or one kept to retry an operation later.
func Key(key string) grpc.CallOption { return keyOption{key: key} }

// namedOption carries Named's name to the interceptor.
type namedOption struct {
	grpc.EmptyCallOption
	name string
}

// Named returns a call option that makes the call under the key bound to
// an application name in the Client's journal (idem.Client.NamedKey,
// idem.Client.DoNamed), such as "payout/2026-12-25/417": the same key in
// every process that makes the call, before or after a crash, and the
// name kept with the call's record. It needs a journal
// (idem.ErrNoJournal); given with [Key], or with a key in the metadata or
// the KeyField that is not the name's, the call is refused with
// idem.ErrInvalidKey and nothing is sent.
func Named(name string) grpc.CallOption { return namedOption{name: name} }

// replayedOption carries Replayed's flag to the interceptor.
type replayedOption struct {
	grpc.EmptyCallOption
	to *bool
}

// Replayed returns a call option that sets *to, once the call has
// returned, to whether its answer was an earlier attempt's: the server's
// replay ("idempotent-replayed: true"), or the answer the Client's
// journal holds for the key (nothing was sent). False means the server
// ran the call for this one.
func Replayed(to *bool) grpc.CallOption { return replayedOption{to: to} }

// UnaryClientInterceptor returns a gRPC unary client interceptor that
// makes state-changing calls safe to retry: each call gets one
// idempotency key (given with [Key], already in the outgoing metadata or
// the KeyField, derived from the key the context's work holds, or
// minted), and every attempt sends the same key and the same bytes (the
// request's deterministic encoding, made once). The call goes through
// ClientOptions.Client as an HTTP request of scheme [Scheme], which its
// [Transport] makes as the gRPC call, so idem's retry rules apply as the
// package documentation's # Retries says: the server's
// google.rpc.RetryInfo honoured, no wait started that would end past the
// call's deadline, within the Client's retry budget; with the Client's
// journal, the call is written down before its first attempt and resumed
// after a crash. It fails on invalid options: a bad Header or KeyField,
// both set, a negative count or duration, BaseDelay above MaxDelay, retry
// fields set beside a Client, a Client whose key is in a JSON body.
//
// A final answer is returned as the server gave it; a call that ends
// without one returns an [*Error] that carries the key. The request is
// sent pre-encoded through the call's codec, so the interceptor suits the
// default proto codec; a call with a codec of its own (grpc.ForceCodec,
// grpc.CallContentSubtype) is refused with [ErrOwnCodec], and a request
// or reply that is not a protobuf message passes through untouched.
// Interceptors placed after it in the chain see every attempt,
// pre-encoded: put it last. Another interceptor of this package after it (installed twice)
// lets its attempts through untouched, as the one on the connection a
// resumed call is sent on does. It is safe for concurrent use.
func UnaryClientInterceptor(opts ClientOptions) (grpc.UnaryClientInterceptor, error) {
	ci, err := newClientInterceptor(opts)
	if err != nil {
		return nil, err
	}
	return ci.intercept, nil
}

// ErrOwnCodec is the error of a call made with a codec of its own: the
// interceptor sends protobuf bytes it encoded once, which only the default
// codec sends as they are. Nothing was sent. Leave such methods out with
// ClientOptions.Methods.
var ErrOwnCodec = errors.New("grpcidem: the call has a codec of its own; the interceptor sends the protobuf encoding")

type clientInterceptor struct {
	o      ClientOptions
	field  *fieldPath
	header string // the metadata key of the key: the Client's KeyHeader in lowercase
}

func newClientInterceptor(o ClientOptions) (*clientInterceptor, error) {
	switch {
	case o.Header != "" && o.KeyField != "":
		return nil, errors.New("grpcidem: ClientOptions sets both Header and KeyField; the key is in one place")
	case o.MaxAttempts < 0 || o.BaseDelay < 0 || o.MaxDelay < 0 || o.MaxRetryDelay < 0 || o.AttemptTimeout < 0:
		return nil, errors.New("grpcidem: ClientOptions has a negative MaxAttempts, BaseDelay, MaxDelay, MaxRetryDelay or AttemptTimeout")
	case o.BaseDelay > 0 && o.MaxDelay > 0 && o.BaseDelay > o.MaxDelay:
		return nil, errors.New("grpcidem: ClientOptions.BaseDelay is above MaxDelay")
	}
	ci := &clientInterceptor{o: o}
	if o.KeyField != "" {
		p, err := parseFieldPath(o.KeyField)
		if err != nil {
			return nil, fmt.Errorf("grpcidem: ClientOptions.KeyField: %w", err)
		}
		ci.field = p
	}
	if o.Header != "" {
		if err := checkHeader(o.Header); err != nil {
			return nil, fmt.Errorf("grpcidem: ClientOptions.Header: %w", err)
		}
	}
	if o.Client != nil {
		if o.MaxAttempts != 0 || o.BaseDelay != 0 || o.MaxDelay != 0 || o.MaxRetryDelay != 0 || o.AttemptTimeout != 0 || o.Budget != (idem.BudgetOptions{}) {
			return nil, errors.New("grpcidem: ClientOptions sets retry fields beside a Client; set them in the Client's idem.Options")
		}
		h := strings.ToLower(o.Client.KeyHeader())
		switch {
		case h == "":
			return nil, errors.New("grpcidem: ClientOptions.Client puts keys in a JSON body (BodyKey); a gRPC call's key goes in its metadata or KeyField")
		case o.Header != "" && o.Header != h:
			return nil, fmt.Errorf("grpcidem: ClientOptions.Header is %q but the Client sends keys in %q", o.Header, h)
		}
		if err := checkHeader(h); err != nil {
			return nil, fmt.Errorf("grpcidem: the Client's key header: %w", err)
		}
		ci.header = h
	} else {
		ci.header = o.Header
		if ci.header == "" {
			ci.header = DefaultHeader
		}
		c, err := idem.New(idem.Options{
			Transport: NewTransport(nil), Header: ci.header,
			MaxAttempts: o.MaxAttempts, BaseDelay: o.BaseDelay, MaxDelay: o.MaxDelay,
			MaxRetryAfter: o.MaxRetryDelay, AttemptTimeout: o.AttemptTimeout, Budget: o.Budget,
		})
		if err != nil {
			return nil, fmt.Errorf("grpcidem: ClientOptions: %w", err)
		}
		ci.o.Client = c
	}
	if ci.o.NewKey == nil {
		ci.o.NewKey = idem.NewKey
	}
	return ci, nil
}

func (ci *clientInterceptor) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if m, ok := ctx.Value(attemptKey{}).(proto.Message); ok && m == req {
		return invoker(ctx, method, req, reply, cc, opts...) // an attempt a Transport makes, keyed already
	}
	if ci.o.Methods != nil && !ci.o.Methods(method) {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	msg, ok := req.(proto.Message)
	if _, replyOK := reply.(proto.Message); !ok || !replyOK {
		return invoker(ctx, method, req, reply, cc, opts...) // not protobuf: nothing to encode once, or to decode
	}
	var (
		key, name string
		replayed  *bool
	)
	e := &Error{Method: method}
	for _, o := range opts {
		switch o := o.(type) {
		case keyOption:
			key = o.key
		case namedOption:
			name = o.name
		case replayedOption:
			replayed = o.to
		case grpc.ForceCodecCallOption, grpc.ForceCodecV2CallOption, grpc.ContentSubtypeCallOption:
			e.Err = ErrOwnCodec
			return e
		}
	}
	if name != "" {
		if key != "" {
			e.Key, e.Err = key, fmt.Errorf("%w: the call has both grpcidem.Key and grpcidem.Named", idem.ErrInvalidKey)
			return e
		}
		k, err := ci.o.Client.NamedKey(name)
		if err != nil {
			e.Err = err
			return e
		}
		key = k
	}
	key, msg, err := ci.place(ctx, method, key, msg)
	e.Key = key
	if err != nil {
		e.Err = err
		return e
	}
	body, err := deterministic.Marshal(msg)
	if err != nil {
		e.Err = err
		return e
	}
	hreq, lc := ci.request(ctx, method, key, body, cc, invoker, opts)
	var resp *idem.Response
	if name != "" {
		resp, err = ci.o.Client.DoNamed(name, hreq)
	} else {
		resp, err = ci.o.Client.Do(hreq)
	}
	if err != nil {
		var ie *idem.Error
		if !errors.As(err, &ie) {
			e.Err = err
			return e
		}
		e.Key, e.Attempts, e.Err = ie.Key, ie.Attempts, ie.Err
		if ie.Attempts > 0 && !lc.reached.Load() && !errors.Is(ie.Err, context.Canceled) && !errors.Is(ie.Err, context.DeadlineExceeded) {
			e.Err = fmt.Errorf("%w: %v", ErrNotGRPCTransport, ie.Err)
		}
		if ie.StatusCode != 0 {
			e.Status = lastStatus(ie.Header, ie.Body)
			if replayed != nil {
				*replayed = ie.Header.Get(ReplayedHeader) == "true"
			}
		}
		if e.Status == nil && ie.Cause != nil {
			// The last attempt ended without an answer: cut by its
			// timeout (DeadlineExceeded, as gRPC ends it), or an error an
			// interceptor after this one returned.
			e.Status = causeStatus(ie.Cause)
		}
		if errors.Is(ie.Err, idem.ErrKeyReused) && e.Status == nil {
			// Refused by the journal, which holds another request under
			// the key: the server's answer to such a call.
			e.Status = stKeyReused
		}
		if errors.Is(ie.Err, idem.ErrBodyTooLarge) {
			// The request over MaxRequestBody (nothing sent) or the
			// answer over MaxResponseBody (not read): gRPC's code for its
			// own message size limits, never the cut answer's.
			e.Status = status.New(codes.ResourceExhausted, ie.Err.Error())
		}
		return e
	}
	if replayed != nil {
		// The journal's answer is an earlier attempt's too: nothing ran
		// for this call.
		*replayed = resp.Replayed || resp.FromJournal
	}
	if resp.Truncated {
		// Answered from the journal, which kept only the first
		// MaxJournalBody bytes of the answer: decoding them would pass a
		// part off as the whole (a reply cut between fields decodes).
		e.Err = fmt.Errorf("%w: the journal kept only the first %d bytes of this call's answer (MaxJournalBody)", idem.ErrBodyTooLarge, len(resp.Body))
		e.Status = stAnswerCut
		return e
	}
	st, err := statusOf(resp.Header, resp.Body)
	switch {
	case err != nil:
		e.Attempts, e.Err = resp.Attempts, err
		if !lc.reached.Load() && !resp.FromJournal {
			e.Err = fmt.Errorf("%w: %v", ErrNotGRPCTransport, err)
		} else {
			e.Status = status.New(codes.Internal, err.Error())
		}
		return e
	case st != nil:
		return st.Err() // the server's final answer, as it gave it
	}
	if err := proto.Unmarshal(resp.Body, reply.(proto.Message)); err != nil {
		// As gRPC answers a reply it cannot decode.
		return status.Errorf(codes.Internal, "grpcidem: failed to unmarshal the received message: %v", err)
	}
	return nil
}

// request returns the HTTP request that stands for the call in idem's
// client: POST grpc:///method, the call's target as its Host, the
// outgoing metadata as its header with the key in the Client's key
// header, the encoded request as its body; and the live call its context
// carries to the Transport.
func (ci *clientInterceptor) request(ctx context.Context, method, key string, body []byte, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts []grpc.CallOption) (*http.Request, *liveCall) {
	lc := &liveCall{invoker: invoker, cc: cc, opts: opts}
	h := make(http.Header)
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		for k, vals := range md {
			if k == ci.header {
				continue // the key, set below
			}
			for _, v := range vals {
				h.Add(k, v)
			}
		}
	}
	h.Set(ci.header, key)
	if ci.field != nil {
		h.Set("Content-Type", mime.FormatMediaType(contentType, map[string]string{keyInFieldParam: ci.header}))
	} else {
		h.Set("Content-Type", contentType) // a caller's content-type metadata, which gRPC drops, never says JSON to idem
	}
	var target string
	if cc != nil {
		target = cc.Target()
	}
	hreq := (&http.Request{
		Method:        http.MethodPost,
		URL:           &url.URL{Scheme: Scheme, Path: method},
		Host:          target,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		GetBody:       func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil },
	}).WithContext(context.WithValue(ctx, liveCallKey{}, lc))
	return hreq, lc
}

// causeStatus is the status of an attempt that ended in err, not an
// answer: a context's end as gRPC gives it, or err's own status.
func causeStatus(err error) *status.Status {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err)
	}
	return status.Convert(err)
}

// lastStatus is the status of the last answer an *idem.Error describes:
// its encoding, or, cut short by the Client's MaxErrorBody, its code
// alone.
func lastStatus(h http.Header, body []byte) *status.Status {
	if st, err := statusOf(h, body); err == nil {
		if st == nil {
			return status.New(codes.OK, "")
		}
		return st
	}
	if code, err := strconv.ParseUint(h.Get(StatusHeader), 10, 32); err == nil {
		return status.New(codes.Code(code), "grpcidem: the status's details were cut to the client's MaxErrorBody")
	}
	return nil
}

// place returns the call's key and the request to send (in a copy, with
// the key in KeyField). The key is given (Key), or already in place, or
// derived from the key ctx's work holds, or minted.
func (ci *clientInterceptor) place(ctx context.Context, method, key string, msg proto.Message) (string, proto.Message, error) {
	var inPlace string
	if ci.field != nil {
		v, err := ci.field.get(msg.ProtoReflect())
		if err != nil {
			return key, msg, err
		}
		inPlace = v
		if key != "" && inPlace != "" && !sameKey(key, inPlace) {
			return key, msg, fmt.Errorf("%w: the request's %s carries another key than the call's option gives", idem.ErrInvalidKey, ci.o.KeyField)
		}
	} else if md, ok := metadata.FromOutgoingContext(ctx); ok {
		if vals := md.Get(ci.header); len(vals) > 0 {
			if len(vals) > 1 {
				// The server refuses a key of two values: so does this,
				// rather than send one of them.
				return key, msg, fmt.Errorf("%w: the call's metadata carries %d values of %q", idem.ErrInvalidKey, len(vals), ci.header)
			}
			inPlace = vals[0]
			if key != "" && !sameKey(key, inPlace) {
				return key, msg, fmt.Errorf("%w: the call's metadata carries another key than the call's option gives", idem.ErrInvalidKey)
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
		return key, msg, err
	}
	if ci.field != nil && inPlace != key {
		msg = ci.field.set(msg, key)
	}
	return key, msg, nil
}

// sameKey reports whether two key values name one key: bare and quoted
// forms are the same key, as for the server.
func sameKey(a, b string) bool {
	ka, errA := idem.ParseKey(a)
	kb, errB := idem.ParseKey(b)
	return errA == nil && errB == nil && ka == kb
}
