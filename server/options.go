// This file holds Options, the Middleware's configuration, its defaults,
// and config, the validated form the middleware runs with.

package server

import (
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/idemhq/idem/internal/bodykey"
)

// Defaults of [Options] and [RunOptions].
const (
	DefaultHeader    = "Idempotency-Key"
	DefaultLease     = 30 * time.Second
	DefaultRetention = 24 * time.Hour
	DefaultMaxBody   = 1 << 20
	// DefaultAbandon is every store's default for how long after its
	// lease lapsed a running record (a worker died holding it) may be
	// purged: memstore's, pgstore's and redisstore's Options.Abandon.
	DefaultAbandon = 24 * time.Hour
)

// ReplayedHeader is set to "true" on every replayed answer.
const ReplayedHeader = "Idempotent-Replayed"

// Options configures [Middleware]. The zero value of every field means its
// documented default, but a zero Options is not valid on its own: either
// Scope or SingleTenant must be set.
type Options struct {
	// Scope names the client a request belongs to (a tenant, account or
	// API credential), so the same key from two clients names two
	// operations and one client can never replay another's response.
	// It is called for every request that carries a key, after the
	// handlers in front of the middleware (authentication) have run.
	// An error or an empty scope is answered 401 with
	// [ProblemScopeUnavailable]; the error is logged, never sent.
	// Required unless SingleTenant is set; setting both is an error.
	Scope func(*http.Request) (string, error)

	// SingleTenant declares that every request belongs to one client, so
	// keys need no scope (the scope is ""). Default false.
	SingleTenant bool

	// Header is the name of the field carrying the key. Default
	// "Idempotency-Key"; APIs also use "X-Idempotency-Key" and others.
	// The problem documents about a missing or malformed key name it.
	Header string

	// BodyKey, if set, reads the key from a field of the JSON request body
	// instead of the Header, as Square's API takes it ("idempotency_key";
	// a dotted path such as "payment.idempotency_key" names a nested
	// field), the way the idem client's Options.BodyKey sends it. The body
	// is read first. A field that is absent or null is a missing key; a
	// body that is no JSON object, a field that holds no string or appears
	// twice (or under another case), or a string that is no key under
	// ParseKey's rules for a bare key, is a malformed key. The fingerprint
	// is taken over the body without the field (Fingerprint of that body),
	// so the key is not part of the request it names. The handler gets the
	// body as it was sent. Setting both Header and BodyKey is an error.
	// Default "": the key is in the Header.
	BodyKey string

	// Methods are the request methods the middleware handles. A request
	// with any other method passes through untouched, key or not. Default
	// POST and PATCH: PUT and DELETE are idempotent by definition.
	Methods []string

	// Optional lets a request with one of Methods but no key pass through
	// untouched, instead of being answered 400 with [ProblemKeyMissing].
	// Default false: the key is required.
	Optional bool

	// Lease is how long a running request holds its key before another
	// request with the same key and fingerprint may take it over (because
	// the first one's process died). While the handler runs the lease is
	// renewed about every Lease/3 (a request done within Lease/6 is never
	// renewed: it costs nothing). Default 30 s.
	Lease time.Duration

	// Retention is how long an outcome is kept for replay after it is
	// recorded. Clients must not retry a key after it; publish it. Default
	// 24 h.
	Retention time.Duration

	// Wait is how long a repeat that arrives while the first request with
	// its key is still running waits for that request's outcome. Zero (the
	// default) answers 409 with [ProblemInFlight] and Retry-After at once.
	// Above zero, the repeat waits up to Wait and replays the outcome, or
	// runs the handler itself if the first request's outcome was released,
	// or answers 409 if the first is still running when Wait is over.
	// Repeats in the same process wake as soon as the first finishes;
	// repeats of a request running in another process poll the store with
	// capped, jittered backoff.
	Wait time.Duration

	// MaxBody is the largest request body the middleware reads (it must
	// buffer the body to fingerprint it). A larger body is answered 413
	// with [ProblemBodyTooLarge], whose detail names the limit ("over 1
	// MiB"), and nothing runs. Default 1 MiB.
	MaxBody int64

	// MaxConcurrent bounds the first executions running at once behind
	// the middleware: handlers running under a key they acquired (replays
	// and repeats in flight are not counted). A first request that finds
	// MaxConcurrent running waits for one to end, up to StartTimeout.
	// Default 0: no bound.
	MaxConcurrent int

	// StartTimeout bounds how long a first request, once it holds its
	// key, may wait for its handler to start: for a slot under
	// MaxConcurrent, and for the store's unit of work to begin
	// ([Transactor.BeginWork], which may wait for a pooled database
	// connection). For a store that claims within its unit of work
	// ([WorkClaimer.ClaimWork], pgstore in transactional mode) the bound
	// starts before the claim and covers it, since the claim itself
	// waits for the connection. The lease is renewed while it waits. Past
	// it, the key is released (or was never held) and the request is
	// answered 503 with [ProblemOverloaded] and Retry-After; the handler
	// never runs. Work that could not start in time is refused rather
	// than started late into an overloaded store, where its lease might
	// not be kept. It applies only when there is something to wait for
	// (MaxConcurrent is set, or the store implements Transactor or
	// WorkClaimer). Default Lease/3.
	StartTimeout time.Duration

	// WorkTimeout bounds how long a first request's handler may run once
	// it holds its key. The client going away does not cancel the work
	// (see Middleware); past WorkTimeout the handler's context is
	// cancelled with cause [ErrWorkTimeout], and a handler that fails
	// then is released like any other. Set it above the slowest call the
	// handler makes. Default 2 minutes ([DefaultWorkTimeout]).
	WorkTimeout time.Duration

	// Shutdown, if set, is closed when the service shuts down (pass a
	// signal context's Done): the context of every handler running under
	// a key is then cancelled with cause [ErrShutdown]. Without it, work
	// runs on through http.Server.Shutdown (which waits for it) and ends
	// only with WorkTimeout or the process. Default nil.
	Shutdown <-chan struct{}

	// StoreServerErrors records 5xx outcomes and replays them, like Stripe's
	// API v1, instead of releasing the key so a retry runs again. Even so,
	// 502, 503 and 504 are always released: they say the work was not done.
	// Default false.
	StoreServerErrors bool

	// Logger receives store failures, panics and lost leases. Default nil:
	// nothing is logged.
	Logger *slog.Logger

	// Observer receives an event for each request answered, each claim,
	// lease renewal and store call, for metrics and traces (package
	// otelidem turns them into OpenTelemetry's). Default nil: nothing is
	// reported, at no cost.
	Observer *Observer

	// Fingerprint says which parts of a JSON body make a repeat the same
	// request; see [FingerprintRule] for the rule and its trade-off.
	// Default: the whole body ([Fingerprint]).
	Fingerprint FingerprintRule

	// ReplayHeaders, if set, is the only list of response header fields
	// recorded and replayed, besides Content-Type, Content-Encoding and
	// Location, which always are (a replayed body needs its type and
	// coding, a 201 or a redirect its Location). It may name Set-Cookie
	// or Date, which the default leaves out; it may not name what is
	// never replayed: hop-by-hop fields (Connection, Keep-Alive,
	// Transfer-Encoding, ...), Content-Length and Idempotent-Replayed,
	// which the replay sets itself, or a field the response's Connection
	// names. A field sent several times (Set-Cookie, Link) is recorded
	// and replayed line by line, never joined. Default nil: every field
	// the handler set but hop-by-hop fields, the fields Connection names,
	// Date, Set-Cookie (a replay must not hand one client's cookie, or
	// session, to a retry), Content-Length, Idempotent-Replayed and
	// trailers.
	ReplayHeaders []string

	// OnReplay, if set, is called for every replayed answer, with the
	// request, the header about to be sent (the recorded fields, copies
	// the hook may change, add to or delete) and the record replayed,
	// which it must not modify: the place to say how old the record is
	// (rec.ExpiresAt less Retention is when it was recorded) or to drop a
	// field for some clients. What is stored does not change.
	// Idempotent-Replayed and Content-Length are set after it, so the
	// hook cannot remove them. rec.ExpiresAt is zero for an outcome a
	// repeat waiting in this process (Wait) took from the run it waited
	// for, which has just been recorded. It is called from the request's
	// goroutine. Default nil.
	OnReplay func(r *http.Request, h http.Header, rec *Record)

	// Routes gives routes options of their own, keyed by the
	// http.ServeMux pattern the route was registered with, exactly as
	// written ("POST /payments", "PATCH /orders/{id}"). A request is
	// matched by r.Pattern when the middleware wraps the mux's handlers
	// (mux.Handle(pattern, mw(h))); when it wraps the mux itself
	// (mw(mux)), by the pattern the mux would route the request to
	// (ServeMux.Handler). A request whose pattern is not listed takes the
	// options above. Every pattern must be one ServeMux accepts, and the
	// patterns must not conflict with one another. Default nil.
	Routes map[string]RouteOptions
}

// RouteOptions are a route's own options in [Options.Routes]. A zero
// field takes the value of the Options field of its name, so a route
// can set, but not clear, what Options sets: to have some routes wait
// and others not, leave Options.Wait zero and set Wait on the routes that
// wait. Everything else (Scope, Lease, MaxConcurrent, the store) is the
// middleware's, shared by its routes.
type RouteOptions struct {
	// Methods are the methods the middleware handles on the route.
	Methods []string
	// Fingerprint is the route's FingerprintRule.
	Fingerprint FingerprintRule
	// Retention is how long the route's outcomes are kept for replay.
	Retention time.Duration
	// Wait is how long a repeat on the route waits for a first request
	// still running.
	Wait time.Duration
	// MaxBody is the largest request body read on the route.
	MaxBody int64
	// ReplayHeaders is the route's allow-list of replayed header fields.
	ReplayHeaders []string
	// BodyKey reads the route's keys from this JSON body field (see
	// Options.BodyKey), for APIs whose operations name their key fields
	// each their own way (ClientToken, IdempotencyToken); Options.Header
	// is then not read on the route.
	BodyKey string
}

// forRoute returns o with the route's fields set over it, and no Routes.
func (o Options) forRoute(ro RouteOptions) Options {
	if ro.Methods != nil {
		o.Methods = ro.Methods
	}
	if !ro.Fingerprint.isZero() {
		o.Fingerprint = ro.Fingerprint
	}
	if ro.Retention != 0 {
		o.Retention = ro.Retention
	}
	if ro.Wait != 0 {
		o.Wait = ro.Wait
	}
	if ro.MaxBody != 0 {
		o.MaxBody = ro.MaxBody
	}
	if ro.ReplayHeaders != nil {
		o.ReplayHeaders = ro.ReplayHeaders
	}
	if ro.BodyKey != "" {
		o.BodyKey, o.Header = ro.BodyKey, ""
	}
	o.Routes = nil
	return o
}

// isZero reports whether r is the default rule.
func (r FingerprintRule) isZero() bool {
	return r.Select == nil && r.Check == nil && r.Func == nil && r.Version == ""
}

// checkPatterns reports the first of patterns that http.ServeMux refuses,
// alone or beside the others.
func checkPatterns(patterns map[string]RouteOptions) (err error) {
	mux := http.NewServeMux()
	names := slices.Sorted(maps.Keys(patterns))
	for _, p := range names {
		func() {
			defer func() {
				if v := recover(); v != nil {
					err = fmt.Errorf("idem/server: Options.Routes has %q, which http.ServeMux refuses: %v", p, v)
				}
			}()
			mux.Handle(p, http.NotFoundHandler())
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// config is Options with defaults applied.
type config struct {
	scope             func(*http.Request) (string, error)
	header            string
	methods           []string
	optional          bool
	lease             time.Duration
	renewEvery        time.Duration
	retention         time.Duration
	wait              time.Duration
	maxBody           int64
	maxConcurrent     int
	startLimit        time.Duration
	workLimit         time.Duration
	shutdown          <-chan struct{}
	storeServerErrors bool
	log               *slog.Logger
	obs               *Observer
	problems          limitProblems    // built from header (or bodyKey) and maxBody
	bodyKey           bodykey.Path     // Options.BodyKey; nil: the key is in the header
	fp                *ruleFingerprint // Options.Fingerprint; nil: the default rule
	replay            *replayHeaders   // Options.ReplayHeaders; nil: the default deny-list
	onReplay          func(*http.Request, http.Header, *Record)
}

// config validates o and applies the defaults.
func (o Options) config() (config, error) {
	c := config{
		scope:             o.Scope,
		header:            http.CanonicalHeaderKey(o.Header),
		methods:           slices.Clone(o.Methods),
		optional:          o.Optional,
		lease:             o.Lease,
		retention:         o.Retention,
		wait:              o.Wait,
		maxBody:           o.MaxBody,
		maxConcurrent:     o.MaxConcurrent,
		startLimit:        o.StartTimeout,
		workLimit:         orDefault(o.WorkTimeout, DefaultWorkTimeout),
		shutdown:          o.Shutdown,
		storeServerErrors: o.StoreServerErrors,
		log:               o.Logger,
		obs:               o.Observer,
		onReplay:          o.OnReplay,
	}
	switch {
	case o.Scope == nil && !o.SingleTenant:
		return c, fmt.Errorf("idem/server: Options needs a Scope function, or SingleTenant for a service with one client")
	case o.Scope != nil && o.SingleTenant:
		return c, fmt.Errorf("idem/server: Options sets both Scope and SingleTenant; keys are either scoped or not")
	case o.Lease < 0 || o.Retention < 0 || o.Wait < 0 || o.MaxBody < 0 || o.MaxConcurrent < 0 || o.StartTimeout < 0 || o.WorkTimeout < 0:
		return c, fmt.Errorf("idem/server: Options has a negative Lease, Retention, Wait, MaxBody, MaxConcurrent, StartTimeout or WorkTimeout")
	}
	if o.BodyKey != "" {
		if o.Header != "" {
			return c, fmt.Errorf("idem/server: Options sets both Header and BodyKey; the key is in one place")
		}
		p, err := bodykey.ParsePath(o.BodyKey)
		if err != nil {
			return c, fmt.Errorf("idem/server: Options.BodyKey: %w", err)
		}
		c.bodyKey = p
	}
	var err error
	if c.fp, err = o.Fingerprint.compile(); err != nil {
		return c, fmt.Errorf("idem/server: Options.%w", err)
	}
	if c.replay, err = newReplayHeaders(o.ReplayHeaders); err != nil {
		return c, err
	}
	if len(o.Routes) > 0 {
		if err := checkPatterns(o.Routes); err != nil {
			return c, err
		}
	}
	if c.header == "" {
		c.header = DefaultHeader
	}
	if len(c.methods) == 0 {
		c.methods = []string{http.MethodPost, http.MethodPatch}
	}
	for _, m := range c.methods {
		for _, std := range []string{http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete, http.MethodGet} {
			if m != std && strings.EqualFold(m, std) {
				return c, fmt.Errorf("idem/server: Options.Methods has %q: methods are case-sensitive, so it would protect no %s request", m, std)
			}
		}
	}
	if c.lease == 0 {
		c.lease = DefaultLease
	}
	if c.retention == 0 {
		c.retention = DefaultRetention
	}
	if c.maxBody == 0 {
		c.maxBody = DefaultMaxBody
	}
	c.renewEvery = max(c.lease/3, time.Millisecond)
	if c.startLimit == 0 {
		c.startLimit = c.renewEvery
	}
	c.problems = newLimitProblems(c.header, c.maxBody)
	if c.bodyKey != nil {
		c.problems.keyMissing, c.problems.keyInvalid = bodyKeyProblems(c.bodyKey)
	}
	return c, nil
}

// handles reports whether requests with method are the middleware's.
func (c *config) handles(method string) bool {
	for _, m := range c.methods {
		if m == method {
			return true
		}
	}
	return false
}
