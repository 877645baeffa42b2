// This file holds Observer, the hooks through which Middleware and RunOnce
// report what they did (for metrics and traces), the events they carry,
// and the classification of results and store errors the events use.

package server

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/idemhq/idem/internal/errtype"
)

// Observer receives events from [Middleware] (through Options.Observer)
// and [RunOnce] (through RunOptions.Observer), to turn into metrics and
// traces; the otelidem package makes OpenTelemetry instruments and spans
// of them. Every field is optional: a nil hook, or a nil *Observer, costs
// nothing (no allocation, no clock reading).
//
// Events carry what a metric needs and nothing secret: never the key
// (unless IncludeKey says so), the scope, a header value, a body, or an
// error's text. Hooks are called synchronously, from the goroutines that
// serve requests and renew leases, possibly at the same time: they must
// be safe for concurrent use, fast, and must not panic. Each hook gets a
// context for exemplars and trace correlation: the request's (a run's),
// or that of the store call it reports on.
//
// An Observer must not be changed once Middleware or RunOnce has it.
type Observer struct {
	// Request is called once for each request the middleware handles (one
	// of Options.Methods carrying a key, or required to), with how it was
	// answered, before the answer is written; and once for each RunOnce
	// call, before it returns, with an empty Method and Route.
	Request func(context.Context, RequestInfo)

	// ClaimStart is called when a request (or RunOnce call) has acquired
	// its key, before its work starts. The context it returns is the one
	// the work runs with, and the one ClaimEnd gets: a tracer starts a span
	// there (a child of whatever span ctx carries, such as otelhttp's) and
	// returns ctx with it. It must return ctx or a context descending from
	// it; a nil return means ctx.
	ClaimStart func(ctx context.Context, info ClaimStartInfo) context.Context

	// ClaimEnd is called exactly once for each acquired claim (after its
	// ClaimStart), when the claim has ended (the outcome recorded, or the
	// key released or lost), before the answer is written or RunOnce
	// returns, whether the work returned or panicked. ctx is the context
	// ClaimStart returned. The claims running at any moment are the
	// ClaimStarts minus the ClaimEnds.
	ClaimEnd func(ctx context.Context, info ClaimEndInfo)

	// Renewal is called after each lease renewal the store was asked for
	// (a claim held by a WorkClaimer's unit of work has no lease and is
	// never renewed).
	Renewal func(context.Context, RenewalInfo)

	// StoreOp is called after each call Middleware or RunOnce makes to the
	// store or to a store's unit of work, with its duration. Stores'
	// background work (memstore's and pgstore's purges of expired keys)
	// is not called from here and not reported.
	StoreOp func(context.Context, StoreOpInfo)

	// IncludeKey puts the request's idempotency key in ClaimStartInfo.Key,
	// for a tracer that records it on spans. Default false: no event
	// carries a key. The scope is never given.
	IncludeKey bool
}

// Outcome is how a request (or RunOnce call) with an idempotency key was
// answered. Its values are lowercase words, fit for a metric attribute.
type Outcome string

// Outcomes of [Observer.Request] and [Observer.ClaimEnd].
const (
	// OutcomeExecuted: the work ran and its outcome was recorded for
	// replay (or, if recording failed, was answered all the same: the
	// work happened; the failure is a StoreOp with an ErrorType).
	OutcomeExecuted Outcome = "executed"
	// OutcomeReleased: the work ran and answered with an outcome that is
	// not recorded (5xx, 408, 425, 429; for RunOnce, an error), so its key
	// was released and a retry runs it again.
	OutcomeReleased Outcome = "released"
	// OutcomeReplayed: a repeat was answered with the recorded outcome.
	OutcomeReplayed Outcome = "replayed"
	// OutcomeInFlight: a repeat arrived while the first request with its
	// key was still running (409, or ErrInFlight).
	OutcomeInFlight Outcome = "in_flight"
	// OutcomeKeyReused: the key was first used with another request (422,
	// or ErrKeyReused).
	OutcomeKeyReused Outcome = "key_reused"
	// OutcomeKeyMissing: the request carried no key and needs one (400).
	OutcomeKeyMissing Outcome = "key_missing"
	// OutcomeKeyInvalid: the key is malformed (400).
	OutcomeKeyInvalid Outcome = "key_invalid"
	// OutcomeScopeUnavailable: Options.Scope found no scope (401).
	OutcomeScopeUnavailable Outcome = "scope_unavailable"
	// OutcomeBodyTooLarge: the body is over the limit (413).
	OutcomeBodyTooLarge Outcome = "body_too_large"
	// OutcomeBodyUnreadable: reading the body failed (400).
	OutcomeBodyUnreadable Outcome = "body_unreadable"
	// OutcomeStoreUnavailable: the store failed, so nothing ran (503), or
	// the unit of work's commit failed, undoing the work.
	OutcomeStoreUnavailable Outcome = "store_unavailable"
	// OutcomeStoreFull: the store had no room for a new key
	// ([ErrStoreFull]), so nothing ran (503).
	OutcomeStoreFull Outcome = "store_full"
	// OutcomeOverloaded: the work could not start in time, so its key was
	// released and nothing ran (503, or ErrOverloaded).
	OutcomeOverloaded Outcome = "overloaded"
	// OutcomeLeaseLost: the request's lease lapsed and another took the
	// key over; its outcome was not recorded (409, or ErrLeaseLost).
	OutcomeLeaseLost Outcome = "lease_lost"
	// OutcomeHandlerFailed: the handler (or RunOnce's work) panicked, or
	// gave up on a cancelled request without answering; its key was
	// released (500).
	OutcomeHandlerFailed Outcome = "handler_failed"
)

// RequestInfo describes one answered request, for [Observer.Request].
type RequestInfo struct {
	// Method is the request's method; empty for RunOnce.
	Method string
	// Route is the path pattern of the http.ServeMux pattern that routed
	// the request (Request.Pattern without its method, such as
	// "/charges/{id}"), or empty when no pattern routed it, and for
	// RunOnce. It is OpenTelemetry's http.route.
	Route string
	// RPCMethod is, for a gRPC call answered by grpcidem's server
	// interceptor, its full method name without the leading slash
	// ("package.Service/Method", OpenTelemetry's rpc.method); Method is
	// then empty and Route is the full method name. Empty otherwise.
	RPCMethod string
	// Outcome is how the request was answered.
	Outcome Outcome
}

// ClaimStartInfo describes an acquired claim, for [Observer.ClaimStart].
type ClaimStartInfo struct {
	// TakenOver reports that the key was taken over from a worker whose
	// lease lapsed (see Claim.TakenOver).
	TakenOver bool
	// Leased reports that the claim holds a lease, renewed while the work
	// runs; false for a claim held by a WorkClaimer's unit of work.
	Leased bool
	// Key is the idempotency key, if Observer.IncludeKey is set; empty
	// otherwise.
	Key string
}

// ClaimEndInfo describes an ended claim, for [Observer.ClaimEnd].
type ClaimEndInfo struct {
	// Outcome is how the request that held the claim was answered, as
	// RequestInfo.Outcome.
	Outcome Outcome
}

// RenewalInfo describes one lease renewal, for [Observer.Renewal].
type RenewalInfo struct {
	// ErrorType is empty if the lease was renewed, and otherwise names
	// the failure as StoreOpInfo.ErrorType does ("lease_lost": the key
	// was taken over, and the work is told to stop).
	ErrorType string
}

// Store operations, the values of StoreOpInfo.Op.
const (
	OpClaim    = "claim"    // Store.Claim or WorkClaimer.ClaimWork
	OpRenew    = "renew"    // Store.Renew
	OpComplete = "complete" // Store.Complete
	OpRelease  = "release"  // Store.Release
	OpBegin    = "begin"    // Transactor.BeginWork
	OpCommit   = "commit"   // Work.Commit
	OpRollback = "rollback" // Work.Rollback
)

// StoreOpInfo describes one store call, for [Observer.StoreOp].
type StoreOpInfo struct {
	// Op is the operation: OpClaim, OpRenew, OpComplete, OpRelease,
	// OpBegin, OpCommit or OpRollback. It is OpenTelemetry's
	// db.operation.name.
	Op string
	// System names the store's database system, as its StoreSystem method
	// says (see [SystemNamer]); empty if it has none. It is
	// OpenTelemetry's db.system.name.
	System string
	// Duration is how long the call took.
	Duration time.Duration
	// ErrorType is empty if the call succeeded. Otherwise it names the
	// class of its error, never its text: "lease_lost" ([ErrLeaseLost]),
	// "store_full" ([ErrStoreFull]), "timeout" (a deadline passed),
	// "canceled" (the context was cancelled), else the Go type of the
	// outermost error in its chain that is more than a wrapper (such as
	// "*pgconn.PgError"), or "_OTHER". It is OpenTelemetry's error.type.
	ErrorType string
}

// SystemNamer is implemented by stores that name the database system
// they keep records in, as OpenTelemetry's db.system.name spells it:
// "postgresql", "redis"; memstore's is "memory". Observers get it in
// StoreOpInfo.System.
type SystemNamer interface {
	StoreSystem() string
}

// systemOf returns the database system store names, or "".
func systemOf(store Store) string {
	if n, ok := store.(SystemNamer); ok {
		return n.StoreSystem()
	}
	return ""
}

// timing returns the time a store call starts, or the zero time if no
// one observes store calls.
func (o *Observer) timing() time.Time {
	if o == nil || o.StoreOp == nil {
		return time.Time{}
	}
	return time.Now()
}

// storeOp reports a call op to store that began at began (from timing)
// and returned err.
func (o *Observer) storeOp(ctx context.Context, store Store, op string, began time.Time, err error) {
	if o == nil || o.StoreOp == nil {
		return
	}
	o.StoreOp(ctx, StoreOpInfo{Op: op, System: systemOf(store), Duration: time.Since(began), ErrorType: errorType(err)})
}

// request reports a request answered with res.
func (o *Observer) request(ctx context.Context, method, pattern string, res Outcome) {
	if o == nil || o.Request == nil {
		return
	}
	o.Request(ctx, RequestInfo{Method: method, Route: route(pattern), Outcome: res})
}

// renewal reports a renewal that returned err.
func (o *Observer) renewal(ctx context.Context, err error) {
	if o == nil || o.Renewal == nil {
		return
	}
	o.Renewal(ctx, RenewalInfo{ErrorType: errorType(err)})
}

// route returns the path part of a ServeMux pattern: the pattern without
// its method, as OpenTelemetry's http.route has it.
func route(pattern string) string {
	if i := strings.IndexAny(pattern, " \t"); i >= 0 {
		return strings.TrimLeft(pattern[i:], " \t")
	}
	return pattern
}

// storeResult is the Outcome of a request refused because the store
// failed with err.
func storeResult(err error) Outcome {
	if errors.Is(err, ErrStoreFull) {
		return OutcomeStoreFull
	}
	return OutcomeStoreUnavailable
}

// errorType names the class of err for StoreOpInfo.ErrorType (see
// there), or returns "" for a nil err. It reads no error's text.
func errorType(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrLeaseLost):
		return "lease_lost"
	case errors.Is(err, ErrStoreFull):
		return "store_full"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return errtype.Name(err)
}
