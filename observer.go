// This file holds Observer and JournalObserver, the hooks through which a
// Client and a Journal report what they did (for metrics and traces), the
// events they carry, and the classification of outcomes and errors the
// events use.

package idem

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/idemhq/idem/internal/errtype"
)

// Observer receives events from a [Client] (through Options.Observer), to
// turn into metrics and traces; the otelidem package makes OpenTelemetry
// instruments and spans of them. It has the shape of the server package's
// Observer. Every field is optional: a nil hook, or a nil *Observer, costs
// nothing (no allocation, no clock reading).
//
// Events carry what a metric needs and nothing secret: never the key, a
// URL (the server's host name alone, ServerAddress, is no URL: it has no
// credentials, path or query), a header value, a body, or an error's
// text. Hooks are called
// synchronously, from the goroutine making the call (Resume's, for a
// resumed operation), possibly at the same time from several: they must
// be safe for concurrent use and fast. A hook that panics does not break
// the call: the panic is recovered and the event dropped. (The server
// package's Observer lets a panic go on, once its claim is ended; a call
// of the client has nothing to end, and an answer to lose.) A hook must
// not call Journal.Abandon for the operation it hears of (see there).
//
// An Observer must not be changed once New has it.
type Observer struct {
	// OperationStart is called when a call of Do, DoNamed or Resume
	// begins with an operation's key known, before the journal is read.
	// The context it returns is the one the operation's attempts are sent
	// with, and the one OperationEnd gets: a tracer starts a span there and
	// returns ctx with it. It must return ctx or a context descending from
	// it; a nil return means ctx.
	OperationStart func(ctx context.Context, info OperationStartInfo) context.Context

	// OperationEnd is called exactly once for each OperationStart, when
	// the call is about to return, with how it ended.
	OperationEnd func(ctx context.Context, info OperationEndInfo)

	// Attempt is called after each attempt, as Options.OnAttempt is.
	Attempt func(context.Context, AttemptInfo)

	// Retry is called for each retry scheduled, before its wait.
	Retry func(context.Context, RetryInfo)

	// BudgetExhausted is called when the retry budget refuses a retry
	// that was otherwise due; the call then ends with ErrBudgetExhausted.
	BudgetExhausted func(context.Context, BudgetInfo)
}

// Outcome is how an operation's call ended. Its values are lowercase
// words, fit for a metric attribute.
type Outcome string

// Outcomes of [Observer.OperationEnd].
const (
	// OutcomeCompleted: a final answer below 400, from the server or
	// from the journal.
	OutcomeCompleted Outcome = "completed"
	// OutcomeFailed: a final answer of 400 or more (a refusal included),
	// from the server or from the journal.
	OutcomeFailed Outcome = "failed"
	// OutcomeKeyReused: the key was used for a different request
	// (ErrKeyReused).
	OutcomeKeyReused Outcome = "key_reused"
	// OutcomeRetriesExhausted: every attempt was made without a final
	// answer (ErrRetriesExhausted); the operation stays pending.
	OutcomeRetriesExhausted Outcome = "retries_exhausted"
	// OutcomeBudgetExhausted: the retry budget refused a retry
	// (ErrBudgetExhausted); the operation stays pending.
	OutcomeBudgetExhausted Outcome = "budget_exhausted"
	// OutcomeExpired: the operation outlived the server's key retention
	// (ErrExpired).
	OutcomeExpired Outcome = "expired"
	// OutcomeAbandoned: the operation was abandoned (ErrAbandoned).
	OutcomeAbandoned Outcome = "abandoned"
	// OutcomeCanceled: the call's context was cancelled; the operation
	// stays pending if it was journaled.
	OutcomeCanceled Outcome = "canceled"
	// OutcomeTimeout: the call's deadline passed, or was too near for
	// another attempt; the operation stays pending if it was journaled.
	OutcomeTimeout Outcome = "timeout"
	// OutcomeError: any other error (the journal failed, PrepareRequest
	// failed, the operation is gone from the journal).
	OutcomeError Outcome = "error"
)

// OperationStartInfo describes a call that begins, for
// [Observer.OperationStart].
type OperationStartInfo struct {
	// Method is the request's method.
	Method string
	// RPCMethod is, for a gRPC call made through grpcidem (a request of
	// URL scheme "grpc"), its full method name without the leading slash
	// ("package.Service/Method", OpenTelemetry's rpc.method); "" for an
	// HTTP request.
	RPCMethod string
	// ServerAddress is the host name of the request's URL, without port,
	// user or path (OpenTelemetry's server.address): a host, not a URL,
	// so it carries none of the URL's credentials, path or query.
	ServerAddress string
	// Resumed reports that Resume makes the call.
	Resumed bool
}

// OperationEndInfo describes a call that ends, for
// [Observer.OperationEnd].
type OperationEndInfo struct {
	// Method is the request's method.
	Method string
	// RPCMethod is the gRPC call's method, as
	// OperationStartInfo.RPCMethod.
	RPCMethod string
	// RPCStatusCode is, for a gRPC call (RPCMethod set), the final
	// answer's (or the last response's) gRPC status code, its
	// Grpc-Status; -1 if there was none. It is 0 for an HTTP request.
	RPCStatusCode int
	// ServerAddress is the host name of the request's URL, as
	// OperationStartInfo.ServerAddress.
	ServerAddress string
	// Resumed reports that Resume made the call.
	Resumed bool
	// Outcome is how the call ended.
	Outcome Outcome
	// StatusCode is the final answer's status, or the last response's if
	// the call ended without a final answer; 0 if there was none.
	StatusCode int
	// Replayed reports that the final answer was the server's replay (for
	// an answer from the journal: that the answer the journal recorded
	// was).
	Replayed bool
	// FromJournal reports that the final answer was read from the
	// journal, with no attempt: a Response with FromJournal set, or the
	// server's refusal of a reused key that the journal recorded.
	FromJournal bool
	// Attempts counts the attempts the call made (0 for an answer from
	// the journal), resends by net/http included (see AttemptInfo.Sent).
	Attempts int
	// Duration is how long the call took, from OperationStart.
	Duration time.Duration
}

// AttemptInfo describes one finished attempt, for [Observer.Attempt].
type AttemptInfo struct {
	// Method is the request's method.
	Method string
	// RPCMethod is the gRPC call's method, as
	// OperationStartInfo.RPCMethod: a gRPC attempt is counted under it,
	// not under Method (which grpcidem's Transport sets to POST).
	RPCMethod string
	// N counts the call's attempts so far, resends by net/http included.
	N int
	// Sent is how many times this attempt's request was written: 1, or
	// more when net/http sent it again on its own over a fresh connection
	// (a reused keep-alive connection turned out dead). N grew by Sent;
	// an attempts counter adds Sent.
	Sent int
	// StatusCode is the response's status, 0 if there was none.
	StatusCode int
	// ErrorType is empty if a response came. Otherwise it names the class
	// of the transport error, never its text: "timeout" (a deadline
	// passed), "canceled" (the context was cancelled), else the Go type of
	// the outermost error in its chain that is more than a wrapper (such
	// as "*net.OpError"), or "_OTHER". It is OpenTelemetry's error.type.
	ErrorType string
	// Replayed reports that the response is the server's replay.
	Replayed bool
}

// RetryInfo describes a retry scheduled, for [Observer.Retry]: why, by
// the attempt before it, and how long it waits.
type RetryInfo struct {
	// Method is the request's method.
	Method string
	// RPCMethod is the gRPC call's method, as
	// OperationStartInfo.RPCMethod.
	RPCMethod string
	// Attempt is the number of the attempt that is retried (AttemptInfo.N).
	Attempt int
	// StatusCode is that attempt's status (the reason to retry), 0 if it
	// had none.
	StatusCode int
	// ErrorType names that attempt's transport error, as
	// AttemptInfo.ErrorType; empty if it had a response.
	ErrorType string
	// Delay is the wait before the retry.
	Delay time.Duration
	// RetryAfter reports that the server chose Delay: it is that
	// attempt's Retry-After (clamped to Options.MaxRetryAfter), not the
	// client's backoff.
	RetryAfter bool
}

// BudgetInfo describes a retry the budget refused, for
// [Observer.BudgetExhausted].
type BudgetInfo struct {
	// Method is the request's method.
	Method string
	// RPCMethod is the gRPC call's method, as
	// OperationStartInfo.RPCMethod.
	RPCMethod string
	// Attempt is the number of the attempt whose retry was refused.
	Attempt int
}

// JournalObserver receives events from a [Journal] (through
// JournalOptions.Observer). As with Observer, every field is optional, a
// nil *JournalObserver costs nothing, events carry nothing secret, and a
// hook that panics has its panic recovered and its event dropped. Hooks
// are called from the journal's committer goroutine, one at a time: a
// slow hook holds up every write. A JournalObserver must not be changed
// once OpenJournal has it.
type JournalObserver struct {
	// Commit is called after each commit of the journal's committer (one
	// bbolt transaction, one fsync), with its writes and duration, and the
	// number of pending operations the journal holds after it.
	Commit func(CommitInfo)
}

// CommitInfo describes one commit, for [JournalObserver.Commit].
type CommitInfo struct {
	// Writes is how many writes shared the commit (its batch size).
	Writes int
	// Duration is how long the commit took, fsync included.
	Duration time.Duration
	// Failed reports that the commit failed (each write was then tried
	// again alone; those tries are not reported apart).
	Failed bool
	// Pending is the number of pending operations the journal holds
	// after the commit, as its pending index counts them: a gauge.
	Pending int
}

// observe runs fn, recovering a panic of it: an observer's panic must not
// break a call.
func observe(fn func()) {
	defer func() { _ = recover() }()
	fn()
}

// start reports a call of op that begins and returns the context its
// attempts are sent with, and the time it began (zero if no one observes
// its end). rpc is op's gRPC method (Operation.rpcMethod), worked out
// once for the call's events.
func (o *Observer) start(ctx context.Context, op *Operation, rpc string, resumed bool) (context.Context, time.Time) {
	if o == nil {
		return ctx, time.Time{}
	}
	if o.OperationStart != nil {
		info := OperationStartInfo{Method: op.Method, RPCMethod: rpc, ServerAddress: op.host(), Resumed: resumed}
		observe(func() {
			if c := o.OperationStart(ctx, info); c != nil {
				ctx = c
			}
		})
	}
	if o.OperationEnd == nil {
		return ctx, time.Time{}
	}
	return ctx, time.Now()
}

// end reports a call of op that began at began (from start) and returns
// resp and err; rpc is as for start.
func (o *Observer) end(ctx context.Context, op *Operation, rpc string, resumed bool, began time.Time, resp *Response, err error) {
	if o == nil || o.OperationEnd == nil {
		return
	}
	info := OperationEndInfo{Method: op.Method, RPCMethod: rpc, ServerAddress: op.host(),
		Resumed: resumed, Duration: time.Since(began)}
	var e *Error
	switch {
	case resp != nil:
		info.Outcome, info.StatusCode, info.Attempts = OutcomeCompleted, resp.StatusCode, resp.Attempts
		info.Replayed, info.FromJournal = resp.Replayed, resp.FromJournal
		if resp.StatusCode >= http.StatusBadRequest {
			info.Outcome = OutcomeFailed
		}
	case errors.As(err, &e):
		info.Outcome, info.StatusCode, info.Attempts = outcomeOf(err), e.StatusCode, e.Attempts
		// A refusal of a reused key with no attempt made is the journal's
		// record of the server's (a request that differs from the
		// journaled one is refused with no status).
		info.FromJournal = info.Outcome == OutcomeKeyReused && e.StatusCode != 0 && e.Attempts == 0
	default:
		info.Outcome = outcomeOf(err)
	}
	if info.RPCMethod != "" {
		info.RPCStatusCode = -1
		var h http.Header
		if resp != nil {
			h = resp.Header
		} else if e != nil {
			h = e.Header
		}
		if code, err := strconv.ParseUint(h.Get("Grpc-Status"), 10, 16); err == nil {
			info.RPCStatusCode = int(code)
		}
	}
	observe(func() { o.OperationEnd(ctx, info) })
}

// host returns the host name of op's URL, without port, for
// ServerAddress: the live request's, or for a resumed operation the
// journaled URL's; "" if it has none. For a gRPC call, it is the host of
// its target (op.Host, as given to grpc.NewClient: "dns:///host:port",
// "host:port").
func (op *Operation) host() string {
	if op.isRPC() {
		return targetHost(op.Host)
	}
	if op.u != nil {
		return op.u.Hostname()
	}
	u, err := url.Parse(op.URL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// targetHost returns the host of a gRPC target, as grpc.NewClient takes
// it: "dns:///host:port", "dns:host:port", "host:port", "[::1]:443"; for
// a Unix socket ("unix:///run/pay.sock", "unix:rel.sock",
// "unix-abstract:name") its path or name.
func targetHost(t string) string {
	scheme, rest, ok := strings.Cut(t, ":")
	switch {
	case ok && (scheme == "unix" || scheme == "unix-abstract"):
		if strings.HasPrefix(rest, "//") {
			rest = rest[2:] // unix://[authority]/path: the path, absolute
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				rest = rest[i:]
			}
		}
		return rest
	case ok && !strings.ContainsAny(scheme, "[]./") && !isPort(rest):
		// scheme:[//authority/]endpoint
		t = rest
		if strings.HasPrefix(t, "//") {
			t = t[2:]
			if i := strings.IndexByte(t, '/'); i >= 0 {
				t = t[i+1:]
			}
		}
	}
	if h, _, err := net.SplitHostPort(t); err == nil {
		return h
	}
	return strings.Trim(t, "[]")
}

// isPort reports whether s is all digits: "host:443" has no scheme.
func isPort(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// rpcScheme is the URL scheme of the requests grpcidem makes for gRPC
// calls.
const rpcScheme = "grpc"

// isRPC reports whether op is a gRPC call made through grpcidem.
func (op *Operation) isRPC() bool {
	if op.u != nil {
		return op.u.Scheme == rpcScheme
	}
	return strings.HasPrefix(op.URL, rpcScheme+":")
}

// rpcMethod returns a gRPC call's full method name without its leading
// slash, "" for an HTTP request. A resumed operation's URL is parsed for
// it: Client.do calls it once per call, and the call's events read
// call.rpc.
func (op *Operation) rpcMethod() string {
	switch {
	case !op.isRPC():
		return ""
	case op.u != nil:
		return strings.TrimPrefix(op.u.Path, "/")
	}
	u, err := url.Parse(op.URL)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.Path, "/")
}

// outcomeOf classifies the error a call ended with.
func outcomeOf(err error) Outcome {
	switch {
	case errors.Is(err, ErrKeyReused):
		return OutcomeKeyReused
	case errors.Is(err, ErrRetriesExhausted):
		return OutcomeRetriesExhausted
	case errors.Is(err, ErrBudgetExhausted):
		return OutcomeBudgetExhausted
	case errors.Is(err, ErrExpired):
		return OutcomeExpired
	case errors.Is(err, ErrAbandoned):
		return OutcomeAbandoned
	case errors.Is(err, context.Canceled):
		return OutcomeCanceled
	case errors.Is(err, context.DeadlineExceeded): // ErrDeadline among them
		return OutcomeTimeout
	}
	return OutcomeError
}

// errorType names the class of a transport error for
// AttemptInfo.ErrorType (see there), or returns "" for a nil err. It
// reads no error's text.
func errorType(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return errtype.Name(err)
}
