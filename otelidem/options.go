// This file holds Options, shared by the observers of both halves, and
// the names under which they make their instruments and spans.

package otelidem

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of the meters and tracers the
// observers make: the package's import path.
const ScopeName = "github.com/idemhq/idem/otelidem"

// Options configures an observer. The zero value means the defaults.
type Options struct {
	// MeterProvider makes the instruments. Default: the global one
	// (otel.GetMeterProvider), which forwards to whatever provider is
	// installed later.
	MeterProvider metric.MeterProvider

	// TracerProvider makes the spans. Default: the global one
	// (otel.GetTracerProvider). A no-op provider
	// (go.opentelemetry.io/otel/trace/noop's) turns spans off, and the
	// observer then starts none at all.
	TracerProvider trace.TracerProvider

	// KeyOnSpans records each request's idempotency key on its span, as
	// the attribute idem.key. A key names one operation of one client, so
	// it can find that operation's traces; it may also be a secret of a
	// kind (one who knows it can replay the outcome, within its scope),
	// and traces often travel further than logs. Default false: no key is
	// recorded anywhere. Keys are never metric attributes.
	KeyOnSpans bool
}

// meter returns the meter of o's provider.
func (o Options) meter() metric.Meter {
	mp := o.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	return mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
}

// tracer returns the tracer of o's provider, or nil if it is a no-op
// provider: starting its spans would only cost a context each.
func (o Options) tracer() trace.Tracer {
	tp := o.TracerProvider
	switch tp.(type) {
	case nil:
		tp = otel.GetTracerProvider()
	case noop.TracerProvider, *noop.TracerProvider:
		return nil
	}
	return tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))
}
