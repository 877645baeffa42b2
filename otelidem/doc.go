// Package otelidem records what idem does as OpenTelemetry metrics and
// traces, through the observer hooks of the server package (and of the
// client), named by OpenTelemetry's semantic conventions: lowercase dotted
// names, durations in seconds, and no attribute that grows with traffic
// (no key, scope, path, header value or body).
//
// The canonical call sequence, on the server:
//
//	obs, err := otelidem.NewServerObserver(otelidem.Options{}) // the global providers
//	if err != nil {
//		return err
//	}
//	once := server.Middleware(store, server.Options{Scope: accountOf, Observer: obs})
//	mux.Handle("POST /charges", once(createCharge))
//	handler := otelhttp.NewHandler(mux, "charges") // optional: the HTTP spans
//
// The same observer may be set in server.RunOptions for RunOnce.
//
// # Instruments
//
// The server observer ([NewServerObserver]) records:
//
//	instrument                     kind             unit       attributes
//	idem.server.requests           counter          {request}  idem.result, http.request.method, http.route
//	idem.server.claims.active      up-down counter  {claim}
//	idem.server.takeovers          counter          {claim}
//	idem.server.lease.renewals     counter          {renewal}  error.type (on failed renewals)
//	idem.store.operation.duration  histogram        s          db.system.name, db.operation.name, error.type
//
// idem.result is how the request was answered: executed, released (the
// handler's answer was not recorded: 5xx, 408, 425, 429), replayed,
// in_flight, key_reused, key_missing, key_invalid, scope_unavailable,
// body_too_large, body_unreadable, body_refused, store_unavailable, store_full,
// overloaded, lease_lost or handler_failed (see server.Outcome).
// http.route is the ServeMux pattern's path ("/charges/{id}"), absent
// when no pattern routed the request; RunOnce calls carry idem.result
// alone. db.operation.name is claim, renew, complete, release, begin,
// commit or rollback; db.system.name is what the store's StoreSystem
// method says ("postgresql", "redis", "memory"), absent if it has none.
// error.type is lease_lost, store_full, timeout, canceled, the Go type
// of the store's error ("*pgconn.PgError"), or _OTHER: never its text.
//
// The client observer ([NewClientObserver]) and the journal observer
// ([NewJournalObserver]) record, for the client half:
//
//	instrument                             kind       unit         attributes
//	idem.client.operation.duration         histogram  s            idem.outcome, idem.replayed, idem.from_journal, idem.resumed, http.request.method, server.address
//	idem.client.attempts                   histogram  {attempt}    as idem.client.operation.duration
//	idem.client.retries                    counter    {retry}      idem.retry.reason, http.request.method, http.response.status_code or error.type
//	idem.client.retry.delay                histogram  s            idem.retry_after, http.request.method
//	idem.client.budget.exhausted           counter    {retry}      http.request.method
//	idem.client.journal.commit.duration    histogram  s            error.type (on failed commits)
//	idem.client.journal.commit.batch_size  histogram  {write}
//	idem.client.operations.pending         gauge      {operation}
//
// idem.outcome is how a call of an operation ended: completed, failed
// (a final answer of 400 or more), key_reused, retries_exhausted,
// budget_exhausted, expired, abandoned, canceled, timeout or error (see
// idem.Outcome). Where the answer came from is apart from how the call
// ended, in two booleans: idem.replayed, the server answered this call
// with its replay of an earlier attempt's answer, and idem.from_journal,
// the journal answered it with no attempt (a repeat of a finished
// operation; its recorded answer's replay mark is not counted again as
// idem.replayed). So the server's replays a client received are the
// operations with idem.replayed=true, and its answers from the journal
// those with idem.from_journal=true, whatever their outcome (completed,
// failed or key_reused). server.address is the host name of the
// request's URL, without port or path (the client's events carry a host,
// never a URL).
//
// A gRPC call made through grpcidem's client interceptor is measured by
// the same instruments, with OpenTelemetry's RPC attributes in place of
// the HTTP ones: rpc.system.name "grpc" and rpc.method (the full method
// name, "package.Service/Method") for http.request.method, and on
// idem.client.operation.duration, idem.client.attempts and the span
// rpc.response.status_code (the code's name, "NOT_FOUND") for
// http.response.status_code; a retry carries no status, the transport's
// HTTP status being no server's answer. server.address is the host of the
// call's target. On the server, a call grpcidem's interceptor answered is
// counted in idem.server.requests under rpc.system.name and rpc.method,
// without http.request.method or http.route.
//
// idem.client.attempts records, when a call of an operation ends, how
// many attempts it made, each time the request was written counted:
// net/http's own resends of a request on a reused keep-alive connection
// that turned out dead included, so its sum is what the server (or a
// proxy) received. A call that made none (an answer from the journal, a
// call refused before its first attempt) records nothing there: it is
// counted in idem.client.operation.duration alone.
//
// idem.client.retries counts every attempt of a call but its first, by
// idem.retry.reason: status (a status worth another attempt was
// answered; http.response.status_code says which), timeout (the
// attempt's deadline passed; error.type timeout) or transport_error (any
// other transport error; error.type names its Go type, as
// "*net.OpError", or _OTHER). A resend by net/http is a transport_error
// retry without error.type: net/http does not say what failed, and it
// made no wait. So, in all or for one http.request.method or rpc.method, the sum of
// idem.client.retries is the sum of idem.client.attempts less its count:
// retries add up to attempts less operations. The one exception is a retry scheduled and
// never sent, because the call ended in its wait (its context ended, the
// operation was abandoned, PrepareRequest failed): it is counted, as its
// wait is, when it is scheduled. idem.client.retry.delay records each
// scheduled retry's wait, with idem.retry_after true when the server's
// Retry-After chose it (clamped to idem.Options.MaxRetryAfter) and false
// when the backoff did.
//
// idem.client.operations.pending is the journal's count of pending
// operations as of its last commit: a gauge, not the up-down counter one
// might expect, because a process that restarts finds operations already
// pending in its journal, which a sum kept from zero would miss.
//
// # Spans
//
// Each request that claims its key gets one span, idem.claim (internal
// kind), from the claim to its end, as a child of the span in the
// request's context, such as the one otelhttp starts; the handler runs
// inside it, so its own spans nest there. It carries idem.takeover and,
// at its end, idem.result; a request that failed on the server's side
// (handler_failed, lease_lost, store_unavailable, store_full, overloaded)
// sets error.type to the result and the span's status to Error. The key
// is recorded, as idem.key, only with Options.KeyOnSpans. Replays and
// refusals claim nothing and get no span: the HTTP span and
// idem.server.requests tell of them.
//
// Each call of an operation by the client gets one span, idem.operation
// (internal kind), from its start to its end, as a child of the span in
// the request's context; its attempts are sent in the span's context, so
// an instrumented transport's spans nest in it. It carries
// http.request.method, server.address and idem.resumed and, at its end, idem.outcome,
// idem.attempts, http.response.status_code (the last status, if any),
// idem.replayed (when the server replayed the answer) and
// idem.from_journal (when the journal gave it). A call that ended
// without the server's final answer (any outcome but completed and
// failed) sets error.type to the outcome and the span's status to Error.
// The client's events carry no key, so its spans never do.
//
// # Cost
//
// Measurements with a set of attributes seen before allocate nothing in
// the observer; the SDK and the span cost what they cost.
// BenchmarkMiddleware in this package measures a request with and
// without the server observer, BenchmarkClient a client's POST with and
// without the client observer, and BenchmarkClientEvents the client
// observer's events alone:
//
//	go test -run '^$' -bench 'BenchmarkMiddleware|BenchmarkClient' -benchmem ./otelidem/
package otelidem
