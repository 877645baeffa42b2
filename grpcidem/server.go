// This file holds UnaryServerInterceptor: reading a call's key, scope and
// fingerprint, running it once through server.RunOnce, and answering its
// repeats; and StreamServerInterceptor, which refuses keyed streams.

package grpcidem

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/idemhq/idem/server"
)

// UnaryServerInterceptor returns a gRPC unary server interceptor that
// runs each call with an idempotency key at most once per (scope, key)
// and answers its repeats from store, on the contract of server.Store:
// any store (memstore, pgstore, redisstore) works. It panics if store is
// nil or opts is invalid (neither or both of Scope and SingleTenant, both
// Header and KeyField, a bad Header or KeyField, a negative duration): a
// misconfiguration found at start-up, not per call.
//
// For a call to one of ServerOptions.Methods (default: every unary
// method but those of gRPC's own services, such as health checks) it:
//
//   - reads the key from the request metadata (ServerOptions.Header,
//     default "idempotency-key"; bare or quoted, by server.ParseKey's
//     rules, one value) or from a string field of the request message
//     (ServerOptions.KeyField, AIP-155's request_id);
//   - answers InvalidArgument if the key is missing (unless
//     ServerOptions.Optional, which lets the call through unprotected) or
//     malformed, Unauthenticated if ServerOptions.Scope finds no scope;
//   - claims (scope, key) with the call's [Fingerprint] (the full method
//     name and the request's deterministic encoding) through
//     server.RunOnce, which runs the handler once the key is held and
//     records its outcome: the response message, or a final status with
//     its details (InvalidArgument, NotFound, AlreadyExists,
//     PermissionDenied, FailedPrecondition, OutOfRange, Unauthenticated;
//     with ServerOptions.StoreServerErrors also Unknown, Internal and
//     DataLoss). Any other status, a non-status error (Unknown) or a
//     panic releases the key, so a retry runs the handler again; a panic
//     is re-raised after the release;
//   - on a repeat with the same fingerprint, answers the recorded
//     response or status, with "idempotent-replayed: true" in the
//     response header metadata; while the first call still runs, answers
//     Aborted (or waits: ServerOptions.Wait);
//   - on a repeat with a different fingerprint, answers
//     FailedPrecondition.
//
// Store failures are answered Unavailable (nothing ran), and so is work
// that could not start in time; each status the interceptor writes itself
// carries a google.rpc.ErrorInfo (domain [Domain], a Reason constant) and,
// when a retry with the same key is the remedy, a google.rpc.RetryInfo.
// See the package documentation for the whole table and why each code.
//
// Once a call holds its key, its handler runs to its end whatever the
// caller does: the handler's context keeps the call's values (metadata,
// peer, the key through server.KeyFrom) but not its cancellation or
// deadline, so a client that times out or a connection that drops never
// aborts a charge half done; its outcome is recorded and the client's
// retry collects it. The work is bounded on the server's side
// (ServerOptions.WorkTimeout, Shutdown, a lost lease), as server.RunOnce
// says; a handler that would rather stop when nobody waits watches
// server.ClientContext.
//
// Only the response message or status is recorded: header and trailer
// metadata the handler sets are sent with the first answer, not replayed.
// A replayed message is decoded into a new message of the type its name
// resolves to in protoregistry.GlobalTypes, where generated code
// registers every message type.
//
// The interceptor sees unary calls only; streaming calls never reach it
// (see [StreamServerInterceptor]). It is safe for concurrent use.
func UnaryServerInterceptor(store server.Store, opts ServerOptions) grpc.UnaryServerInterceptor {
	if store == nil {
		panic("grpcidem: UnaryServerInterceptor needs a server.Store")
	}
	cfg, err := opts.config()
	if err != nil {
		panic(err)
	}
	s := &serverInterceptor{cfg: cfg, store: store}
	return s.intercept
}

type serverInterceptor struct {
	cfg   serverConfig
	store server.Store
}

func (s *serverInterceptor) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	method := info.FullMethod
	if !s.cfg.methods(method) {
		return handler(ctx, req)
	}
	msg, isProto := req.(proto.Message)
	key, st := s.key(ctx, msg, isProto, method)
	switch {
	case st == stKeyMissing && s.cfg.optional:
		return handler(ctx, req)
	case st != nil:
		return nil, st.Err()
	}
	scope, ok := s.scope(ctx)
	if !ok {
		s.cfg.observe(ctx, method, server.OutcomeScopeUnavailable)
		return nil, stScopeUnavailable.Err()
	}
	fpMsg := msg
	if s.cfg.field != nil {
		fpMsg = s.cfg.field.without(msg)
	}
	fp, err := Fingerprint(method, fpMsg)
	if err != nil {
		s.logError(ctx, "idem: fingerprint", err)
		s.cfg.observe(ctx, method, server.OutcomeKeyInvalid)
		return nil, status.Error(stKeyInvalid.Code(), "idem: the request cannot be encoded to fingerprint it")
	}

	// The handler's own answer, kept so a first call is answered with the
	// values it returned rather than a decoded copy.
	var (
		ran     bool
		resp    any
		respErr error
		workErr error // what work returned as its error: the key is released
	)
	work := func(wctx context.Context) ([]byte, error) {
		ran = true
		resp, respErr = handler(wctx, req)
		if respErr != nil {
			final := status.Convert(respErr)
			if !s.cfg.recorded(final.Code()) {
				workErr = respErr
				return nil, respErr
			}
			b, err := encodeStatus(final)
			if err != nil {
				workErr = respErr
				return nil, respErr // not kept, so a retry runs it again
			}
			return b, nil
		}
		m, ok := resp.(proto.Message)
		if !ok {
			workErr = errNotProto
			return nil, errNotProto
		}
		b, err := encodeMessage(m)
		if err != nil {
			workErr = err
			return nil, err
		}
		return b, nil
	}
	k := server.Key{Scope: scope, Key: key}
	res, replayed, err := server.RunOnce(s.cfg.withMethod(ctx, method), s.store, k, fp, work, s.cfg.run)
	switch {
	case replayed:
		return s.replay(ctx, res, err)
	case err == nil:
		return resp, respErr
	case ran && res != nil:
		// The work ran and succeeded; recording its outcome failed, and the
		// key stays held until its lease lapses. The work has happened:
		// answer it.
		s.logError(ctx, "idem: record outcome", err)
		return resp, respErr
	case errors.Is(err, server.ErrLeaseLost):
		s.logError(ctx, "idem: lease lost", err)
		return nil, stLeaseLost.Err()
	case ran && workErr != nil:
		if errors.Is(workErr, errNotProto) {
			s.logError(ctx, "idem: handler answered no proto message", workErr)
			return nil, status.Error(stOutcomeUnreadable.Code(), "idem: the handler's answer is not a protobuf message")
		}
		return nil, respErr
	case ran:
		// The work succeeded in the store's unit of work, whose commit
		// failed: it was undone, or went through after all and a retry
		// replays it.
		s.logError(ctx, "idem: commit", err)
		return nil, stNotRecorded.Err()
	}
	return nil, s.refused(ctx, err)
}

// errNotProto is work's error for a handler that answered something other
// than a proto.Message (a codec other than protobuf).
var errNotProto = errors.New("grpcidem: the handler's response is not a proto.Message")

// key returns the call's key, or the status it is refused with: stKeyMissing
// (which ServerOptions.Optional lets through), stKeyInvalid, or
// stKeyFieldMissing. Refusals other than stKeyMissing under Optional are
// observed and logged here.
func (s *serverInterceptor) key(ctx context.Context, msg proto.Message, isProto bool, method string) (string, *status.Status) {
	var raw string
	if s.cfg.field != nil {
		var err error
		if isProto {
			raw, err = s.cfg.field.get(msg.ProtoReflect())
		} else {
			err = errNotProto
		}
		if err != nil {
			s.logError(ctx, "idem: KeyField", err)
			s.cfg.observe(ctx, method, server.OutcomeKeyInvalid)
			return "", stKeyFieldMissing
		}
	} else {
		md, _ := metadata.FromIncomingContext(ctx)
		vals := md.Get(s.cfg.header)
		switch {
		case len(vals) > 1:
			s.cfg.observe(ctx, method, server.OutcomeKeyInvalid)
			return "", stKeyInvalid
		case len(vals) == 1:
			raw = vals[0]
		}
	}
	if raw == "" {
		if !s.cfg.optional {
			s.cfg.observe(ctx, method, server.OutcomeKeyMissing)
		}
		return "", stKeyMissing
	}
	if !isProto {
		s.logError(ctx, "idem: request", errNotProto)
		s.cfg.observe(ctx, method, server.OutcomeKeyInvalid)
		return "", stOutcomeUnreadable
	}
	key, err := server.ParseKey(raw)
	if err != nil {
		s.cfg.observe(ctx, method, server.OutcomeKeyInvalid)
		return "", stKeyInvalid
	}
	return key, nil
}

// scope returns the call's scope, or false if ServerOptions.Scope found
// none (an error, an empty scope, or one no store can keep).
func (s *serverInterceptor) scope(ctx context.Context) (string, bool) {
	if s.cfg.scope == nil { // SingleTenant
		return "", true
	}
	scope, err := s.cfg.scope(ctx)
	switch {
	case err != nil:
		s.logError(ctx, "idem: scope", err)
		return "", false
	case scope == "" || !server.ValidScope(scope):
		return "", false
	}
	return scope, true
}

// replay answers a repeat from the stored outcome b (or RunOnce's err).
func (s *serverInterceptor) replay(ctx context.Context, b []byte, err error) (any, error) {
	_ = grpc.SetHeader(ctx, metadata.Pairs(ReplayedHeader, "true")) // fails only without a stream
	if errors.Is(err, server.ErrResultNotKept) {
		return nil, stResultNotKept.Err()
	}
	m, st, derr := decodeOutcome(b)
	if derr != nil {
		s.logError(ctx, "idem: replay", derr)
		return nil, stOutcomeUnreadable.Err()
	}
	if st != nil {
		return nil, st.Err()
	}
	return m, nil
}

// refused maps RunOnce's error for a call whose work never ran to the
// status the caller gets.
func (s *serverInterceptor) refused(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, server.ErrKeyReused):
		return stKeyReused.Err()
	case errors.Is(err, server.ErrInFlight):
		return stInFlight.Err()
	case errors.Is(err, server.ErrOverloaded):
		return stOverloaded.Err()
	case errors.Is(err, server.ErrInvalidScope):
		return stScopeUnavailable.Err()
	case errors.Is(err, server.ErrStoreFull):
		if s.cfg.log != nil {
			s.cfg.log.WarnContext(ctx, "idem: store full")
		}
		return stStoreFull.Err()
	}
	s.logError(ctx, "idem: store", err)
	return stStoreUnavailable.Err()
}

func (s *serverInterceptor) logError(ctx context.Context, msg string, err error) {
	if s.cfg.log != nil {
		s.cfg.log.ErrorContext(ctx, msg, "err", err)
	}
}

// StreamServerInterceptor returns a gRPC stream server interceptor that
// refuses every streaming call carrying an idempotency key in the request
// metadata (header, default "idempotency-key") with Unimplemented
// (ErrorInfo reason [ReasonStreaming]) before its handler runs, and passes
// every other stream through untouched. Neither idem nor
// UnaryServerInterceptor can run a stream once: its answer is not one
// message that can be recorded. The refusal tells a client that believes
// its stream is protected that it is not. An empty header means
// DefaultHeader; it panics on a header UnaryServerInterceptor would
// refuse. Safe for concurrent use.
func StreamServerInterceptor(header string) grpc.StreamServerInterceptor {
	if header == "" {
		header = DefaultHeader
	}
	if err := checkHeader(header); err != nil {
		panic("grpcidem: StreamServerInterceptor: " + err.Error())
	}
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if md, ok := metadata.FromIncomingContext(ss.Context()); ok && len(md.Get(header)) > 0 {
			return stStreaming.Err()
		}
		return handler(srv, ss)
	}
}
