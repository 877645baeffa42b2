// Package grpcidem makes retried state-changing gRPC calls safe, from both
// ends: a unary server interceptor that runs each call with an idempotency
// key at most once and replays its outcome, on any server.Store, and a
// unary client interceptor that gives each call one key and retries it
// with the same key and bytes.
//
// The canonical call sequence, server side:
//
//	store := memstore.New(memstore.Options{}) // or pgstore, redisstore
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(auth, grpcidem.UnaryServerInterceptor(store, grpcidem.ServerOptions{
//			Scope: func(ctx context.Context) (string, error) { return accountID(ctx) },
//		})),
//		grpc.ChainStreamInterceptor(grpcidem.StreamServerInterceptor("")),
//	)
//
// and client side:
//
//	retry, err := grpcidem.UnaryClientInterceptor(grpcidem.ClientOptions{})
//	conn, err := grpc.NewClient(addr, grpc.WithUnaryInterceptor(retry), ...)
//	reply, err := payments.NewChargesClient(conn).Charge(ctx, req)
//
// # Keys
//
// The key travels in the request metadata "idempotency-key" (bare or
// quoted, as server.ParseKey reads it), or in a string field of the
// request message that both halves name (KeyField: AIP-155's request_id).
// A plain gRPC client without idem sends it with
// metadata.AppendToOutgoingContext. Keys are scoped by ServerOptions.Scope
// (or SingleTenant), as the HTTP middleware's are. A repeat must be the
// same call: [Fingerprint] covers the full method name and the request's
// deterministic protobuf encoding (without the KeyField).
//
// # Codes
//
// The server interceptor answers, for a protected unary method:
//
//	key missing or malformed              InvalidArgument (KEY_MISSING, KEY_INVALID)
//	Scope finds no scope                  Unauthenticated (SCOPE_UNAVAILABLE)
//	first call with (scope, key)          the handler's answer, recorded
//	repeat, same fingerprint, recorded    the recorded response or status,
//	                                      header idempotent-replayed: true
//	repeat, different fingerprint         FailedPrecondition (KEY_REUSED)
//	repeat while the first still runs     Aborted (IN_FLIGHT), RetryInfo 1 s
//	                                      (or wait: ServerOptions.Wait)
//	lease taken over while it ran         Aborted (LEASE_LOST), RetryInfo 1 s
//	store failure                         Unavailable (STORE_UNAVAILABLE), 1 s
//	store full                            Unavailable (STORE_FULL), 30 s
//	work cannot start in time             Unavailable (OVERLOADED), 1 s
//	work's transaction did not commit     Unavailable (NOT_RECORDED), 1 s
//	answer too large to keep (replay)     FailedPrecondition (RESULT_NOT_KEPT)
//	KeyField not in the request message   Internal (KEY_FIELD_MISSING)
//
// Each carries a google.rpc.ErrorInfo with domain [Domain] and the reason
// in brackets (the Reason constants), a fixed message, and the
// google.rpc.RetryInfo shown. Aborted and Unavailable are what clients
// retry, with the same key; nothing else the interceptor answers is.
//
// Key reuse is FailedPrecondition, not InvalidArgument: gRPC's guide to
// its codes keeps InvalidArgument for requests that are wrong whatever the
// system's state, and FailedPrecondition for requests refused because of
// it. A reused key is such a request: the same call with a key never used
// before would run, and the caller's fix is a new key, not a new request.
// It also keeps key reuse apart from the key's own validation errors, as
// the HTTP middleware's 422 keeps it apart from its 400s.
//
// # Outcomes
//
// Recorded and replayed: a response message, and the final statuses
// InvalidArgument, NotFound, AlreadyExists, PermissionDenied,
// FailedPrecondition, OutOfRange and Unauthenticated, with their details.
// Released, so a retry runs the handler again: panics, non-status errors
// (Unknown), and Canceled, Unknown, DeadlineExceeded, ResourceExhausted,
// Aborted, Internal, Unavailable, Unimplemented and DataLoss
// (ServerOptions.StoreServerErrors records Unknown, Internal and DataLoss).
// This is the HTTP middleware's rule (4xx recorded, 5xx, 408 and 429
// released) on gRPC's own mapping of its codes to HTTP statuses.
//
// # The work and the caller
//
// The server interceptor runs the handler through server.RunOnce: once a
// call holds its key, the handler's context keeps the call's values but
// not its cancellation or deadline, bounded instead by
// ServerOptions.WorkTimeout, Shutdown and the lease. A client that gives
// up never makes the work run twice; its retry collects the outcome.
// server.KeyFrom gives the handler its key, from which the client
// interceptor (ClientOptions.Client's StepKey) derives the keys of the
// calls the handler makes, the same on every run.
//
// # Retries
//
// The client interceptor retries Unavailable, Aborted, ResourceExhausted,
// and DeadlineExceeded while the call's own context lasts (the attempt's
// deadline, ClientOptions.AttemptTimeout, passed, not the call's). Any
// other code is the answer, returned as the server gave it; key reuse is
// an [*Error] wrapping idem.ErrKeyReused. The wait is the server's
// google.rpc.RetryInfo, clamped to ClientOptions.MaxRetryDelay, or
// idem.Backoff's capped exponential backoff with full jitter; a wait that
// would end past the call's deadline is not started (idem.ErrDeadline),
// and a retry budget shared by the interceptor's calls stops retry storms
// (idem.ErrBudgetExhausted).
//
// # Streams and metadata
//
// Streaming calls cannot be run once: their answer is not one message.
// The unary interceptor never sees them; [StreamServerInterceptor] refuses
// those that carry a key (Unimplemented, STREAMING), so a client that
// thinks its stream protected learns it is not. Only the response or
// status is recorded: header and trailer metadata a handler sets go out
// with the first answer and are not replayed.
//
// # Observing
//
// ServerOptions.Observer takes a server.Observer, with its events as
// RunOnce reports them; each Request event's Route is the gRPC full method
// name ("/package.Service/Method") and its Method is empty.
package grpcidem
