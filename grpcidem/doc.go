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
// or, for calls that survive the caller's crash, with a journaled
// idem.Client whose transport is this package's (as the Transport example shows):
//
//	transport := grpcidem.NewTransport(nil)
//	client, err := idem.New(idem.Options{Journal: journal, Transport: transport})
//	retry, err := grpcidem.UnaryClientInterceptor(grpcidem.ClientOptions{Client: client})
//	conn, err := grpc.NewClient(addr, grpc.WithUnaryInterceptor(retry), ...)
//	transport.Register(conn.Target(), conn)
//	resumed, err := client.Resume(ctx)
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
// The client interceptor sends each call through an idem.Client
// (ClientOptions.Client) as an HTTP request, "POST
// grpc:///package.Service/Method" with the call's target as its Host, the
// outgoing metadata as its header and the encoded request as its body;
// the Client's [Transport] makes each attempt as the gRPC call, and
// answers with the HTTP status idem's retry rules decide on:
//
//	Aborted                       409, retried
//	ResourceExhausted             429, retried
//	Unavailable                   503, retried
//	DeadlineExceeded              504, retried
//	an attempt past its timeout   retried, at the budget's TimeoutCost
//	FailedPrecondition KEY_REUSED 422: an [*Error] wrapping idem.ErrKeyReused
//	Unauthenticated               401, PermissionDenied 403: idem's refusals,
//	                              the answer, kept pending in the journal
//	any other code, OK included   200: the answer
//
// So the client retries Unavailable, Aborted, ResourceExhausted, and
// DeadlineExceeded while the call's own context lasts (the attempt's
// deadline, ClientOptions.AttemptTimeout, passed, not the call's). Any
// other code is the answer, returned as the server gave it, code,
// message and details (its gRPC code travels in the Grpc-Status header,
// its status in the body). The wait is the server's google.rpc.RetryInfo
// (as a Retry-After, whole seconds rounded up), clamped to
// ClientOptions.MaxRetryDelay, or idem.Backoff's capped exponential
// backoff with full jitter; a wait that would end past the call's
// deadline is not started (idem.ErrDeadline), and the Client's retry
// budget, shared by its HTTP requests and gRPC calls, stops retry storms
// (idem.ErrBudgetExhausted).
//
// A call that ends without the server's final answer is an [*Error],
// whose GRPCStatus is the code a plain gRPC call would end with:
// Canceled or DeadlineExceeded when the call's context ended or its next
// wait would outlast its deadline (the last attempt's status stays in
// Error.Status), DeadlineExceeded when every attempt ran past its
// timeout, ResourceExhausted for a request or an answer over the
// Client's MaxRequestBody or MaxResponseBody, FailedPrecondition
// KEY_REUSED for a key reused with another request (the server's
// refusal, or the journal's), FailedPrecondition RESULT_NOT_KEPT wrapping
// idem.ErrBodyTooLarge for a repeat whose answer the journal kept only in
// part (MaxJournalBody), and otherwise the last attempt's status. An
// Error never reports OK.
//
// # The journal
//
// With a journal in the Client's Options, a call is written down before
// its first attempt, with its key, method, target, metadata (never
// authorization or other credentials: see idem.Options.SecretHeaders) and
// encoded request, and its answer when it has one, as an HTTP request is.
// After a crash, Client.Resume sends the calls left pending, on the
// connection [Transport.Register] names for each call's target, through
// that connection's interceptors (the client interceptor lets a resumed
// attempt through as it is, and so does a second copy of it in a chain);
// [Answer] reads a resumed call's response. A repeat of a finished call's
// key is answered from the journal, and [Replayed] reports it as a
// replay: false means the server ran the call for this one.
//
// The metadata is sent on every attempt as a plain gRPC call sends it,
// binary values and the grpc- keys gRPC passes on (grpc-trace-bin,
// grpc-tags-bin) included; only the keys gRPC reserves for itself are
// left out. Credentials are sent on live attempts and never journaled;
// a resumed attempt carries what the connection's per-RPC credentials
// and idem.Options.PrepareRequest add.
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
