// This file holds NewServerObserver: the server package's events as
// OpenTelemetry instruments, and a span around each claimed request.

package otelidem

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemhq/idem/server"
)

// Names of the server's instruments and span.
const (
	ServerRequests         = "idem.server.requests"
	ServerClaimsActive     = "idem.server.claims.active"
	ServerTakeovers        = "idem.server.takeovers"
	ServerLeaseRenewals    = "idem.server.lease.renewals"
	StoreOperationDuration = "idem.store.operation.duration"
	ServerClaimSpan        = "idem.claim"
)

// storeBuckets are the bounds, in seconds, of the store operations'
// histogram: from 100 µs (an in-memory store) to 10 s (a store past its
// lease), about three to a decade.
var storeBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// serverObserver turns server events into measurements and spans.
type serverObserver struct {
	requests   metric.Int64Counter
	active     metric.Int64UpDownCounter
	takeovers  metric.Int64Counter
	renewals   metric.Int64Counter
	storeTime  metric.Float64Histogram
	tracer     trace.Tracer
	keyOnSpans bool

	requestOpts options[requestAttrs, metric.AddOption]
	renewOpts   options[string, metric.AddOption]
	storeOpts   options[storeAttrs, metric.RecordOption]
}

type requestAttrs struct{ result, method, route, rpc string }

type storeAttrs struct{ system, op, errType string }

// spanStart are the options of every claim span.
var spanStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}

// NewServerObserver returns a [server.Observer] that records, through
// opts' providers, the server instruments in the package's table and a
// span named "idem.claim" around each claimed request's work, a child of
// the span in the request's context (such as otelhttp's). Set it as
// server.Options.Observer (and server.RunOptions.Observer): one observer
// may serve several middlewares and RunOnce calls at once.
//
// It returns an error if the meter refuses an instrument. The observer is
// safe for concurrent use.
func NewServerObserver(opts Options) (*server.Observer, error) {
	m := opts.meter()
	o := &serverObserver{tracer: opts.tracer(), keyOnSpans: opts.KeyOnSpans}
	var err error
	if o.requests, err = m.Int64Counter(ServerRequests, metric.WithUnit("{request}"),
		metric.WithDescription("Requests with an idempotency key the middleware answered, and RunOnce calls, by how they were answered (idem.result).")); err != nil {
		return nil, err
	}
	if o.active, err = m.Int64UpDownCounter(ServerClaimsActive, metric.WithUnit("{claim}"),
		metric.WithDescription("Claimed keys whose work is running.")); err != nil {
		return nil, err
	}
	if o.takeovers, err = m.Int64Counter(ServerTakeovers, metric.WithUnit("{claim}"),
		metric.WithDescription("Keys claimed from a worker whose lease lapsed.")); err != nil {
		return nil, err
	}
	if o.renewals, err = m.Int64Counter(ServerLeaseRenewals, metric.WithUnit("{renewal}"),
		metric.WithDescription("Lease renewals asked of the store; error.type is set on those that failed.")); err != nil {
		return nil, err
	}
	if o.storeTime, err = m.Float64Histogram(StoreOperationDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of the idempotency store's operations, by db.operation.name."),
		metric.WithExplicitBucketBoundaries(storeBuckets...)); err != nil {
		return nil, err
	}
	return &server.Observer{
		Request:    o.request,
		ClaimStart: o.claimStart,
		ClaimEnd:   o.claimEnd,
		Renewal:    o.renewal,
		StoreOp:    o.storeOp,
		IncludeKey: opts.KeyOnSpans,
	}, nil
}

func (o *serverObserver) request(ctx context.Context, r server.RequestInfo) {
	k := requestAttrs{result: string(r.Outcome), route: r.Route}
	switch {
	case r.RPCMethod != "":
		k.route, k.rpc = "", r.RPCMethod // a gRPC call: no HTTP route or method
	case r.Method != "":
		k.method = method(r.Method)
	}
	o.requests.Add(ctx, 1, o.requestOpts.get(k, requestSet, addOption)...)
}

func requestSet(k requestAttrs) attribute.Set {
	attrs := []attribute.KeyValue{ResultKey.String(k.result)}
	if k.rpc != "" {
		attrs = append(attrs, semconv.RPCSystemNameGRPC, semconv.RPCMethodKey.String(k.rpc))
	}
	if k.method != "" {
		attrs = append(attrs, semconv.HTTPRequestMethodKey.String(k.method))
	}
	if k.route != "" {
		attrs = append(attrs, semconv.HTTPRouteKey.String(k.route))
	}
	return attribute.NewSet(attrs...)
}

func (o *serverObserver) claimStart(ctx context.Context, c server.ClaimStartInfo) context.Context {
	o.active.Add(ctx, 1)
	if c.TakenOver {
		o.takeovers.Add(ctx, 1)
	}
	if o.tracer == nil {
		return ctx
	}
	ctx, span := o.tracer.Start(ctx, ServerClaimSpan, spanStart...)
	if span.IsRecording() {
		span.SetAttributes(TakeoverKey.Bool(c.TakenOver))
		if o.keyOnSpans && c.Key != "" {
			span.SetAttributes(KeyKey.String(c.Key))
		}
	}
	return ctx
}

func (o *serverObserver) claimEnd(ctx context.Context, c server.ClaimEndInfo) {
	o.active.Add(ctx, -1)
	if o.tracer == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	if span.IsRecording() {
		span.SetAttributes(ResultKey.String(string(c.Outcome)))
		if failed(c.Outcome) {
			span.SetAttributes(semconv.ErrorTypeKey.String(string(c.Outcome)))
			span.SetStatus(codes.Error, string(c.Outcome))
		}
	}
	span.End()
}

// failed reports whether a claimed request answered res failed on the
// server's side: its span is marked an error. A released answer (the
// handler's own 5xx) is marked by the HTTP span around it, if at all.
func failed(res server.Outcome) bool {
	switch res {
	case server.OutcomeHandlerFailed, server.OutcomeLeaseLost, server.OutcomeStoreUnavailable,
		server.OutcomeStoreFull, server.OutcomeOverloaded:
		return true
	}
	return false
}

func (o *serverObserver) renewal(ctx context.Context, r server.RenewalInfo) {
	if r.ErrorType == "" {
		o.renewals.Add(ctx, 1)
		return
	}
	o.renewals.Add(ctx, 1, o.renewOpts.get(r.ErrorType, renewalSet, addOption)...)
}

func renewalSet(errType string) attribute.Set {
	return attribute.NewSet(errorAttrs(nil, errType)...)
}

func (o *serverObserver) storeOp(ctx context.Context, s server.StoreOpInfo) {
	k := storeAttrs{system: s.System, op: s.Op, errType: s.ErrorType}
	o.storeTime.Record(ctx, s.Duration.Seconds(), o.storeOpts.get(k, storeSet, recordOption)...)
}

func storeSet(k storeAttrs) attribute.Set {
	attrs := []attribute.KeyValue{semconv.DBOperationNameKey.String(k.op)}
	if k.system != "" {
		attrs = append(attrs, semconv.DBSystemNameKey.String(k.system))
	}
	return attribute.NewSet(errorAttrs(attrs, k.errType)...)
}
