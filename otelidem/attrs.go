// This file holds the attributes the instruments carry, and the cache of
// the measurement options built from them, so a measurement with a set of
// attributes seen before allocates nothing.

package otelidem

import (
	"net/http"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// Attribute keys of idem's own, beside the semantic conventions' (http.*,
// db.*, error.type, server.address).
const (
	// ResultKey is the attribute key of how a request was answered:
	// server.Outcome's values ("executed", "replayed", ...).
	ResultKey = attribute.Key("idem.result")
	// TakeoverKey marks a claim span whose key was taken over from a
	// worker whose lease lapsed.
	TakeoverKey = attribute.Key("idem.takeover")
	// KeyKey is the attribute key of the idempotency key on spans, set
	// only with Options.KeyOnSpans.
	KeyKey = attribute.Key("idem.key")
	// OutcomeKey is the attribute key of how a client's call of an
	// operation ended: idem.Outcome's values ("completed",
	// "retries_exhausted", ...).
	OutcomeKey = attribute.Key("idem.outcome")
	// ResumedKey marks an operation's call that Resume made.
	ResumedKey = attribute.Key("idem.resumed")
	// AttemptsKey is the attribute key of the attempts an operation's call
	// made, on its span.
	AttemptsKey = attribute.Key("idem.attempts")
	// ReplayedKey marks an operation's call whose final answer was the
	// server's replay, received by that call (not read from the journal).
	ReplayedKey = attribute.Key("idem.replayed")
	// FromJournalKey marks an operation's call answered from the journal,
	// with no attempt.
	FromJournalKey = attribute.Key("idem.from_journal")
	// RetryReasonKey is the attribute key of why a retry was made:
	// ReasonStatus, ReasonTimeout or ReasonTransportError.
	RetryReasonKey = attribute.Key("idem.retry.reason")
	// RetryAfterKey marks a retry's wait that the server's Retry-After
	// chose (true) rather than the backoff (false).
	RetryAfterKey = attribute.Key("idem.retry_after")
)

// method returns m as http.request.method has it: one of the methods
// HTTP defines, or "_OTHER", so a client cannot mint attribute values.
func method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// options caches the measurement options (O is metric.AddOption or
// metric.RecordOption) for each attribute set, keyed by K, a comparable
// struct of the attributes' values. Every K it sees comes from a bounded
// set (results, configured methods, registered routes, store operations,
// error types, the hosts a client calls), so it grows to that set's size.
// It is safe for concurrent use.
type options[K comparable, O any] struct {
	mu sync.RWMutex
	m  map[K][]O
}

// get returns the options for k, built by build the first time.
func (c *options[K, O]) get(k K, build func(K) attribute.Set, wrap func(metric.MeasurementOption) O) []O {
	c.mu.RLock()
	opts, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return opts
	}
	opts = []O{wrap(metric.WithAttributeSet(build(k)))}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[K][]O)
	}
	if prev, ok := c.m[k]; ok {
		return prev
	}
	c.m[k] = opts
	return opts
}

func addOption(o metric.MeasurementOption) metric.AddOption       { return o }
func recordOption(o metric.MeasurementOption) metric.RecordOption { return o }

// errorAttrs returns attrs with error.type set to errType, if it is not
// empty.
func errorAttrs(attrs []attribute.KeyValue, errType string) []attribute.KeyValue {
	if errType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
	}
	return attrs
}
