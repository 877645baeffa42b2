// This file holds ServerOptions, the server interceptor's configuration,
// and serverConfig, the validated form it runs with.

package grpcidem

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/idemhq/idem/server"
)

// DefaultHeader is the metadata key that carries the idempotency key on
// both halves, unless ServerOptions.Header or ClientOptions.Header names
// another. gRPC metadata keys are lowercase.
const DefaultHeader = "idempotency-key"

// ReplayedHeader is set to "true" in the response header metadata of
// every replayed answer, as the HTTP middleware sets Idempotent-Replayed.
const ReplayedHeader = "idempotent-replayed"

// ServerOptions configures [UnaryServerInterceptor]. The zero value of
// every field means its documented default, but a zero ServerOptions is
// not valid on its own: either Scope or SingleTenant must be set, as with
// server.Options.
type ServerOptions struct {
	// Scope names the client a call belongs to (a tenant, account or API
	// credential, typically from what an authentication interceptor in
	// front put in the context), so the same key from two clients names
	// two operations. An error, an empty scope or one that is not valid
	// UTF-8 text is answered Unauthenticated; the error is logged, never
	// sent. Required unless SingleTenant is set; setting both is an error.
	Scope func(context.Context) (string, error)

	// SingleTenant declares that every call belongs to one client, so keys
	// need no scope (the scope is ""). Default false.
	SingleTenant bool

	// Header is the request metadata key carrying the idempotency key.
	// Default "idempotency-key". It must be a valid lowercase metadata key
	// for text (not ending in "-bin", not starting with "grpc-").
	Header string

	// KeyField, if set, reads the key from a string field of the request
	// message instead of the metadata, as AIP-155's request_id: a field
	// name, or a dotted path of singular message fields ending in a string
	// field ("meta.request_id"). An empty string is a missing key. The
	// fingerprint is taken over the message with that field cleared, so
	// the key is not part of the request it names. A request message
	// with no such string field is answered Internal and logged: it is
	// the server's configuration that is wrong, for that method (narrow
	// Methods to the methods whose requests carry the field). Setting
	// both Header and KeyField is an error. Default "": the key is in the
	// metadata.
	KeyField string

	// Methods reports whether a unary method (by its full name,
	// "/package.Service/Method") is protected. Calls to other methods pass
	// through untouched, key or not. Default nil: every unary method the
	// interceptor sees except those of gRPC's own services (package
	// "grpc." and below: health checks, reflection), which carry no keys.
	Methods func(fullMethod string) bool

	// Optional lets a call to a protected method that carries no key
	// pass through unprotected (AIP-155 makes request IDs optional),
	// instead of being answered InvalidArgument. Default false: the key is
	// required.
	Optional bool

	// Lease, Retention, Wait, StartTimeout, WorkTimeout and Shutdown are
	// server.RunOptions' (see there): how long a running call holds its
	// key before a retry may take it over (default 30 s), how long an
	// outcome is kept for replay (default 24 h), how long a repeat waits
	// for a call in flight before it is answered Aborted (default 0: at
	// once), how long the work may wait to start (default Lease/3), how
	// long it may run (default 2 minutes), and the channel whose closing
	// cancels running work (default nil).
	Lease        time.Duration
	Retention    time.Duration
	Wait         time.Duration
	StartTimeout time.Duration
	WorkTimeout  time.Duration
	Shutdown     <-chan struct{}

	// StoreServerErrors records a handler's Unknown, Internal and DataLoss
	// statuses and replays them, as server.Options.StoreServerErrors
	// records 5xx, instead of releasing the key so a retry runs again.
	// Unavailable, DeadlineExceeded, ResourceExhausted, Aborted and
	// Canceled are always released: they say the work was not done.
	// Default false.
	StoreServerErrors bool

	// Logger receives store failures, configuration errors found per call
	// and lost leases. Default nil: silent.
	Logger *slog.Logger

	// Observer receives the events of server.Observer: one Request event
	// per protected call (Method empty, Route the gRPC full method name),
	// claims, lease renewals and store calls. Default nil: nothing is
	// reported, at no cost.
	Observer *server.Observer
}

// serverConfig is ServerOptions validated, with defaults applied.
type serverConfig struct {
	scope             func(context.Context) (string, error) // nil: SingleTenant
	header            string
	field             *fieldPath // nil: the key is in the metadata
	methods           func(string) bool
	optional          bool
	storeServerErrors bool
	log               *slog.Logger
	obs               *server.Observer
	run               server.RunOptions
}

// config validates o and applies the defaults.
func (o ServerOptions) config() (serverConfig, error) {
	c := serverConfig{
		scope:             o.Scope,
		header:            o.Header,
		methods:           o.Methods,
		optional:          o.Optional,
		storeServerErrors: o.StoreServerErrors,
		log:               o.Logger,
		obs:               observerFor(o.Observer),
	}
	switch {
	case o.Scope == nil && !o.SingleTenant:
		return c, fmt.Errorf("grpcidem: ServerOptions needs a Scope function, or SingleTenant for a service with one client")
	case o.Scope != nil && o.SingleTenant:
		return c, fmt.Errorf("grpcidem: ServerOptions sets both Scope and SingleTenant; keys are either scoped or not")
	case o.Lease < 0 || o.Retention < 0 || o.Wait < 0 || o.StartTimeout < 0 || o.WorkTimeout < 0:
		return c, fmt.Errorf("grpcidem: ServerOptions has a negative Lease, Retention, Wait, StartTimeout or WorkTimeout")
	case o.Header != "" && o.KeyField != "":
		return c, fmt.Errorf("grpcidem: ServerOptions sets both Header and KeyField; the key is in one place")
	}
	if o.KeyField != "" {
		p, err := parseFieldPath(o.KeyField)
		if err != nil {
			return c, fmt.Errorf("grpcidem: ServerOptions.KeyField: %w", err)
		}
		c.field = p
	}
	if c.methods == nil {
		c.methods = notGRPCOwn
	}
	if c.header == "" {
		c.header = DefaultHeader
	}
	if err := checkHeader(c.header); err != nil {
		return c, fmt.Errorf("grpcidem: ServerOptions.Header: %w", err)
	}
	c.run = server.RunOptions{
		Lease:        o.Lease,
		Retention:    o.Retention,
		Wait:         o.Wait,
		StartTimeout: o.StartTimeout,
		WorkTimeout:  o.WorkTimeout,
		Shutdown:     o.Shutdown,
		Logger:       o.Logger,
		Observer:     c.obs,
	}
	return c, nil
}

// notGRPCOwn reports whether fullMethod is not one of gRPC's own services
// (grpc.health.v1.Health, grpc.reflection.v1.ServerReflection, ...).
func notGRPCOwn(fullMethod string) bool {
	return !strings.HasPrefix(fullMethod, "/grpc.")
}

// checkHeader reports whether h can name the text metadata that carries a
// key: lowercase letters, digits, '-', '_' and '.', not reserved by gRPC
// ("grpc-"), not binary ("-bin").
func checkHeader(h string) error {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("%q is not a lowercase metadata key", h)
		}
	}
	switch {
	case strings.HasPrefix(h, "grpc-"):
		return fmt.Errorf("%q is reserved by gRPC", h)
	case strings.HasSuffix(h, "-bin"):
		return fmt.Errorf("%q names binary metadata; a key is text", h)
	}
	return nil
}
