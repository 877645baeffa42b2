// Package server makes retried state-changing HTTP requests safe to
// receive: the first request with an idempotency key runs, its outcome is
// recorded, and every repeat gets the recorded answer instead of running
// the work again.
//
// The canonical call sequence wraps the handlers that change state:
//
//	store := memstore.New(memstore.Options{}) // or pgstore.New(pool, ...)
//	once := server.Middleware(store, server.Options{
//		Scope: func(r *http.Request) (string, error) {
//			return accountID(r) // whoever the request belongs to
//		},
//	})
//	mux.Handle("POST /orders", once(createOrder))
//
// and queue consumers call [RunOnce] with the message ID as the key.
//
// # The wire contract
//
// For a POST or PATCH (see Options.Methods) the middleware answers:
//
//	key missing or malformed              400 problem+json
//	Options.Scope finds no scope          401 problem+json
//	body over Options.MaxBody             413 problem+json
//	first request with (scope, key)       the handler's answer, recorded
//	repeat, same fingerprint, recorded    the recorded status, headers and
//	                                      body, plus Idempotent-Replayed: true
//	repeat, different fingerprint         422 problem+json
//	repeat while the first still runs     409 with Retry-After (or wait:
//	                                      Options.Wait)
//	store failure                         503 with Retry-After: 1
//	store full (ErrStoreFull)             503 with Retry-After: 30
//	work cannot start in time             503 with Retry-After (key released,
//	                                      nothing ran: Options.StartTimeout)
//
// Every answer the middleware writes itself is a problem document (RFC
// 9457) with its own type URI ([ProblemKeyReused] and the other Problem
// constants) and fixed texts. Internal error text never reaches the wire;
// it goes to Options.Logger.
//
// # Keys and scopes
//
// [ParseKey] accepts the key bare (Stripe's form) or as a Structured Field
// string (the IETF draft's form); both spell the same key. Keys are 1 to
// 255 printable ASCII characters, not beginning or ending with a space. A
// key belongs to a scope, given by
// Options.Scope (tenant, account, API credential), so two clients using
// the same key never meet; a service with one client says SingleTenant.
//
// # Fingerprints
//
// A repeat must be the same request. [Fingerprint] covers the method, the
// path, the query in canonical order and the body; JSON bodies (Content-Type
// application/json or …+json) are canonicalised, so member order and
// whitespace do not matter. Other bodies count byte for byte.
//
// # Outcomes
//
// Recorded and replayed: 2xx, 3xx and 4xx. Released, so a retry runs the
// handler again: panics, 5xx, 408, 425 and 429. Options.StoreServerErrors
// records 5xx other than 502, 503 and 504. Recorded headers leave out
// hop-by-hop fields, Set-Cookie, Date and Content-Length (recomputed).
//
// # Claims and leases
//
// The first request claims (scope, key) in the [Store] with a lease
// (Options.Lease, default 30 s), which is renewed about every third of a
// lease while the handler runs, by one goroutine per middleware (a request
// that ends within a sixth of a lease is never renewed and costs nothing).
// Recording the outcome is fenced by the lease's token: if the handler's process stalls past its lease and a retry takes
// the key over, the stale outcome is refused ([ErrLeaseLost]) and its
// client is told to retry (409). A recorded outcome is kept for
// Options.Retention (default 24 h), separately from the lease, so a crash
// never wedges a key for a day.
//
// Each claim ends exactly once: its outcome is recorded (Complete, or the
// unit of work's Commit) or its key released (Release, after the unit of
// work's Rollback), whether the handler returns, panics, gives up on a
// cancelled request, loses its lease, or the store fails to record.
//
// # Admission
//
// A first request starts its handler within Options.StartTimeout
// (default a third of the lease) of acquiring its key, or not at all:
// while it waits for a slot under Options.MaxConcurrent, or for the
// store's unit of work to begin (a pooled database connection; with a
// [WorkClaimer], the claim that begins it), its lease is renewed; past the
// bound its key is released and it is answered 503
// with [ProblemOverloaded] and Retry-After. Work that could not start is
// refused, rather than started late into an overloaded store.
//
// # Transactions
//
// A store that implements [Transactor] (pgstore does) runs the handler
// inside its unit of work: the handler's writes commit together with the
// recorded outcome, or roll back when the outcome is released. Without
// one, an outcome is recorded after the work, and a crash between the two
// lets the retry after the lease run the work again.
//
// A store that implements [WorkClaimer] (pgstore in transactional mode
// does) goes one step further: the claim itself lives in the unit of
// work, as a lock its transaction holds. The
// claim, the handler's writes and the outcome commit together in one
// transaction, with no lease to renew and no token to fence, and a
// crashed worker's claim goes with its connection.
//
// # Observing
//
// Options.Observer (and RunOptions.Observer) receives an event for each
// request answered, with its [Outcome] ("executed", "replayed",
// "in_flight", "key_reused" and the others), method and route; for each
// claim's start and end, where a tracer opens and closes a span around
// the work; for each lease renewal; and for each store call, with its
// duration. Events never carry a key (unless [Observer].IncludeKey), a
// scope, a header value, a body or an error's text. A nil Observer costs
// nothing. Package otelidem makes OpenTelemetry metrics and spans of
// them.
//
// # Stores
//
// memstore is bounded and in-process; pgstore keeps records in PostgreSQL
// for services with more than one process. Every store passes the storetest
// conformance suite.
//
// # Testing with testing/synctest
//
// A middleware's limits (Options.WorkTimeout, Options.StartTimeout) and
// lease renewals run on the clock of the goroutine that serves each
// request. A middleware made outside any bubble (in TestMain, or a
// package-level variable) may serve the requests of bubbles, one after
// another or at once, and beside requests outside them, each on its own
// clock, and leaves no goroutine in a bubble once its requests are
// answered. A middleware made in a bubble serves that bubble only, and
// its lease renewer is one goroutine, ended at its first tick (every
// Options.Lease/6) that finds nothing to renew: a test that served
// requests with a lease lets that much fake time pass before it returns
// (time.Sleep, then synctest.Wait), or synctest reports the goroutine
// blocked.
package server
