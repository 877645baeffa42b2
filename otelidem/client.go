// This file holds NewClientObserver and NewJournalObserver: the client's
// and its journal's events as OpenTelemetry instruments, and a span
// around each operation's call.

package otelidem

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemhq/idem"
)

// Names of the client's and the journal's instruments, and of the
// client's span.
const (
	ClientOperationDuration      = "idem.client.operation.duration"
	ClientAttempts               = "idem.client.attempts"
	ClientRetries                = "idem.client.retries"
	ClientRetryDelay             = "idem.client.retry.delay"
	ClientBudgetExhausted        = "idem.client.budget.exhausted"
	ClientOperationsPending      = "idem.client.operations.pending"
	ClientJournalCommitDuration  = "idem.client.journal.commit.duration"
	ClientJournalCommitBatchSize = "idem.client.journal.commit.batch_size"
	ClientOperationSpan          = "idem.operation"
)

// Reasons of a retry, the values of RetryReasonKey.
const (
	// ReasonStatus: the attempt was answered with a status worth
	// another attempt (a 503, a 409 of a request still running, a status
	// the server hinted to retry).
	ReasonStatus = "status"
	// ReasonTimeout: the attempt's deadline passed without an answer
	// (idem.AttemptInfo.ErrorType "timeout").
	ReasonTimeout = "timeout"
	// ReasonTransportError: any other transport error, net/http's own
	// resends of a request on a dead keep-alive connection included.
	ReasonTransportError = "transport_error"
)

// operationBuckets are the bounds, in seconds, of the operations' and
// the retry delays' histograms: from 1 ms (one answer on loopback) to
// 5 min (a call retried through a long outage), about three to a decade.
var operationBuckets = []float64{
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
	1, 2.5, 5, 10, 25, 50, 100, 300,
}

// attemptBuckets are the bounds of the attempts per operation's
// histogram: one bucket each up to the default MaxAttempts (5), then
// sparser.
var attemptBuckets = []float64{1, 2, 3, 4, 5, 6, 8, 10, 16, 32, 64}

// batchBuckets are the bounds of the commit batch sizes' histogram.
var batchBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}

// clientObserver turns client events into measurements and spans.
type clientObserver struct {
	duration metric.Float64Histogram
	attempts metric.Int64Histogram
	retries  metric.Int64Counter
	delay    metric.Float64Histogram
	budget   metric.Int64Counter
	tracer   trace.Tracer

	endOpts   options[endAttrs, metric.RecordOption]
	retryOpts options[retryAttrs, metric.AddOption]
	delayOpts options[delayAttrs, metric.RecordOption]
	methodAdd options[callAttrs, metric.AddOption]
}

// callAttrs name what was called: an HTTP request's method, or a gRPC
// call's full method name (rpc set), which then stands in its place.
type callAttrs struct {
	method, rpc string
}

// attrs appends the attributes that name the call: http.request.method,
// or rpc.system.name "grpc" and rpc.method.
func (c callAttrs) attrs(to []attribute.KeyValue) []attribute.KeyValue {
	if c.rpc != "" {
		return append(to, semconv.RPCSystemNameGRPC, semconv.RPCMethodKey.String(c.rpc))
	}
	return append(to, semconv.HTTPRequestMethodKey.String(c.method))
}

func callOf(m, rpc string) callAttrs {
	if rpc != "" {
		return callAttrs{rpc: rpc}
	}
	return callAttrs{method: method(m)}
}

type endAttrs struct {
	call                           callAttrs
	outcome, host                  string
	resumed, replayed, fromJournal bool
	rpcCode                        int // the gRPC code of a call, -1 if none
}

type retryAttrs struct {
	call            callAttrs
	reason, errType string
	status          int
}

type delayAttrs struct {
	call       callAttrs
	retryAfter bool
}

// NewClientObserver returns an [idem.Observer] that records, through
// opts' providers, the client instruments in the package's table and a
// span named "idem.operation" around each operation's call, a child of
// the span in the request's context; the attempts are sent in the span's
// context, so an instrumented transport's spans (otelhttp's) nest in it.
// Set it as idem.Options.Observer; one observer may serve several
// Clients. The client's events carry no key, so neither do its spans,
// whatever opts.KeyOnSpans says.
//
// It returns an error if the meter refuses an instrument. The observer is
// safe for concurrent use.
func NewClientObserver(opts Options) (*idem.Observer, error) {
	m := opts.meter()
	o := &clientObserver{tracer: opts.tracer()}
	var err error
	if o.duration, err = m.Float64Histogram(ClientOperationDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of the client's calls of an operation, start to final answer or giving up, by how they ended (idem.outcome), "+
			"whether the answer was the server's replay (idem.replayed) or read from the journal (idem.from_journal), and the server's host (server.address)."),
		metric.WithExplicitBucketBoundaries(operationBuckets...)); err != nil {
		return nil, err
	}
	if o.attempts, err = m.Int64Histogram(ClientAttempts, metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts per call of an operation that made any, each time the request was written counted (net/http's own resends included), "+
			"with the attributes of idem.client.operation.duration. Its sum less its count is the sum of idem.client.retries."),
		metric.WithExplicitBucketBoundaries(attemptBuckets...)); err != nil {
		return nil, err
	}
	if o.retries, err = m.Int64Counter(ClientRetries, metric.WithUnit("{retry}"),
		metric.WithDescription("Retries, by reason (idem.retry.reason: status, timeout, transport_error) and the status (http.response.status_code) or transport error (error.type) retried; "+
			"a request net/http sent again on its own is a transport_error retry without error.type."),
	); err != nil {
		return nil, err
	}
	if o.delay, err = m.Float64Histogram(ClientRetryDelay, metric.WithUnit("s"),
		metric.WithDescription("The wait before each retry, and whether the server's Retry-After chose it (idem.retry_after) rather than the backoff."),
		metric.WithExplicitBucketBoundaries(operationBuckets...)); err != nil {
		return nil, err
	}
	if o.budget, err = m.Int64Counter(ClientBudgetExhausted, metric.WithUnit("{retry}"),
		metric.WithDescription("Retries the client's retry budget refused.")); err != nil {
		return nil, err
	}
	return &idem.Observer{
		OperationStart:  o.start,
		OperationEnd:    o.end,
		Attempt:         o.attempt,
		Retry:           o.retry,
		BudgetExhausted: o.budgetExhausted,
	}, nil
}

func (o *clientObserver) start(ctx context.Context, s idem.OperationStartInfo) context.Context {
	if o.tracer == nil {
		return ctx
	}
	ctx, span := o.tracer.Start(ctx, ClientOperationSpan, spanStart...)
	if span.IsRecording() {
		span.SetAttributes(callOf(s.Method, s.RPCMethod).attrs([]attribute.KeyValue{ResumedKey.Bool(s.Resumed)})...)
		if s.ServerAddress != "" {
			span.SetAttributes(semconv.ServerAddress(s.ServerAddress))
		}
	}
	return ctx
}

func (o *clientObserver) end(ctx context.Context, e idem.OperationEndInfo) {
	k := endAttrs{call: callOf(e.Method, e.RPCMethod), outcome: string(e.Outcome), host: e.ServerAddress,
		resumed: e.Resumed, replayed: e.Replayed && !e.FromJournal, fromJournal: e.FromJournal, rpcCode: -1}
	if e.RPCMethod != "" {
		k.rpcCode = e.RPCStatusCode
	}
	opts := o.endOpts.get(k, endSet, recordOption)
	o.duration.Record(ctx, e.Duration.Seconds(), opts...)
	if e.Attempts > 0 {
		o.attempts.Record(ctx, int64(e.Attempts), opts...)
	}
	if o.tracer == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	if span.IsRecording() {
		span.SetAttributes(OutcomeKey.String(string(e.Outcome)), AttemptsKey.Int(e.Attempts))
		switch {
		case k.rpcCode >= 0:
			span.SetAttributes(semconv.RPCResponseStatusCodeKey.String(grpcCodeName(k.rpcCode)))
		case e.StatusCode != 0 && e.RPCMethod == "":
			span.SetAttributes(semconv.HTTPResponseStatusCodeKey.Int(e.StatusCode))
		}
		if k.replayed {
			span.SetAttributes(ReplayedKey.Bool(true))
		}
		if e.FromJournal {
			span.SetAttributes(FromJournalKey.Bool(true))
		}
		if clientFailed(e.Outcome) {
			span.SetAttributes(semconv.ErrorTypeKey.String(string(e.Outcome)))
			span.SetStatus(codes.Error, string(e.Outcome))
		}
	}
	span.End()
}

// clientFailed reports whether a call that ended with out failed: it
// ended without the server's final answer. A final 4xx is the server's
// answer, marked by the HTTP spans, if at all.
func clientFailed(out idem.Outcome) bool {
	return out != idem.OutcomeCompleted && out != idem.OutcomeFailed
}

func endSet(k endAttrs) attribute.Set {
	attrs := k.call.attrs([]attribute.KeyValue{OutcomeKey.String(k.outcome),
		ResumedKey.Bool(k.resumed), ReplayedKey.Bool(k.replayed), FromJournalKey.Bool(k.fromJournal)})
	if k.rpcCode >= 0 {
		attrs = append(attrs, semconv.RPCResponseStatusCodeKey.String(grpcCodeName(k.rpcCode)))
	}
	if k.host != "" {
		attrs = append(attrs, semconv.ServerAddress(k.host))
	}
	return attribute.NewSet(attrs...)
}

// attempt counts net/http's own resends within an attempt as retries:
// each is an attempt beyond the operation's first, as idem's retries are,
// so that retries add up to attempts less operations. idem's retries are
// counted by retry. A gRPC call's resends are counted under its
// rpc.method, as its other retries are.
func (o *clientObserver) attempt(ctx context.Context, a idem.AttemptInfo) {
	if a.Sent <= 1 {
		return
	}
	k := retryAttrs{call: callOf(a.Method, a.RPCMethod), reason: ReasonTransportError}
	o.retries.Add(ctx, int64(a.Sent-1), o.retryOpts.get(k, retrySet, addOption)...)
}

func (o *clientObserver) retry(ctx context.Context, r idem.RetryInfo) {
	k := retryAttrs{call: callOf(r.Method, r.RPCMethod), reason: retryReason(r), status: r.StatusCode, errType: r.ErrorType}
	if r.RPCMethod != "" {
		k.status = 0 // the HTTP status grpcidem's Transport stands a code in for is no answer's
	}
	o.retries.Add(ctx, 1, o.retryOpts.get(k, retrySet, addOption)...)
	d := delayAttrs{call: k.call, retryAfter: r.RetryAfter}
	o.delay.Record(ctx, r.Delay.Seconds(), o.delayOpts.get(d, delaySet, recordOption)...)
}

// retryReason returns the idem.retry.reason of r.
func retryReason(r idem.RetryInfo) string {
	switch r.ErrorType {
	case "":
		return ReasonStatus
	case "timeout":
		return ReasonTimeout
	}
	return ReasonTransportError
}

func retrySet(k retryAttrs) attribute.Set {
	attrs := k.call.attrs([]attribute.KeyValue{RetryReasonKey.String(k.reason)})
	if k.status != 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCodeKey.Int(k.status))
	}
	return attribute.NewSet(errorAttrs(attrs, k.errType)...)
}

func delaySet(k delayAttrs) attribute.Set {
	return attribute.NewSet(k.call.attrs([]attribute.KeyValue{RetryAfterKey.Bool(k.retryAfter)})...)
}

func methodSet(c callAttrs) attribute.Set {
	return attribute.NewSet(c.attrs(nil)...)
}

// grpcCodes are the names of gRPC's status codes, as rpc.response.status_code
// takes them.
var grpcCodes = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// grpcCodeName returns code's name, or the code in decimal for one gRPC
// does not define.
func grpcCodeName(code int) string {
	if code >= 0 && code < len(grpcCodes) {
		return grpcCodes[code]
	}
	return strconv.Itoa(code)
}

func (o *clientObserver) budgetExhausted(ctx context.Context, b idem.BudgetInfo) {
	o.budget.Add(ctx, 1, o.methodAdd.get(callOf(b.Method, b.RPCMethod), methodSet, addOption)...)
}

// journalObserver turns journal events into measurements.
type journalObserver struct {
	duration metric.Float64Histogram
	batch    metric.Int64Histogram
	pending  metric.Int64Gauge
	failed   []metric.RecordOption
}

// NewJournalObserver returns an [idem.JournalObserver] that records,
// through opts' providers, the journal instruments in the package's
// table: each commit's duration and batch size, and the pending
// operations after it. Set it as idem.JournalOptions.Observer. It makes
// no spans: a commit serves many operations.
//
// It returns an error if the meter refuses an instrument. The observer is
// safe for concurrent use.
func NewJournalObserver(opts Options) (*idem.JournalObserver, error) {
	m := opts.meter()
	o := &journalObserver{
		failed: []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(semconv.ErrorTypeKey.String("_OTHER")))},
	}
	var err error
	if o.duration, err = m.Float64Histogram(ClientJournalCommitDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of the journal's commits, fsync included; error.type is set on those that failed."),
		metric.WithExplicitBucketBoundaries(storeBuckets...)); err != nil {
		return nil, err
	}
	if o.batch, err = m.Int64Histogram(ClientJournalCommitBatchSize, metric.WithUnit("{write}"),
		metric.WithDescription("Writes that shared one journal commit."),
		metric.WithExplicitBucketBoundaries(batchBuckets...)); err != nil {
		return nil, err
	}
	if o.pending, err = m.Int64Gauge(ClientOperationsPending, metric.WithUnit("{operation}"),
		metric.WithDescription("Operations the journal holds pending (journaled, no final answer yet), as of its last commit: a gauge read from the journal, "+
			"so it is right after a restart, where a sum kept from zero would not count what the journal already held.")); err != nil {
		return nil, err
	}
	return &idem.JournalObserver{Commit: o.commit}, nil
}

func (o *journalObserver) commit(c idem.CommitInfo) {
	ctx := context.Background()
	if c.Failed {
		o.duration.Record(ctx, c.Duration.Seconds(), o.failed...)
	} else {
		o.duration.Record(ctx, c.Duration.Seconds())
	}
	o.batch.Record(ctx, int64(c.Writes))
	o.pending.Record(ctx, int64(c.Pending))
}
