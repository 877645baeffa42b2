// This file holds the client interceptor's retry decisions: which answers
// are retried, how long to wait, and the retry budget.

package grpcidem

import (
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemhq/idem"
)

// verdict is what the client does after a failed attempt.
type verdict uint8

const (
	final  verdict = iota // the server's answer: return it as it is
	retry                 // send again with the same key and bytes
	reused                // the server says the key was used with another request
)

// classify decides on an attempt that failed with st, as the retry rules
// of the package documentation (# Retries) say: Unavailable, Aborted and
// ResourceExhausted are retried, and so is DeadlineExceeded while the
// call's own context is alive (the attempt's deadline passed, not the
// call's); every other code is the answer.
func classify(st *status.Status) verdict {
	switch st.Code() {
	case codes.Unavailable, codes.Aborted, codes.ResourceExhausted, codes.DeadlineExceeded:
		return retry
	case codes.FailedPrecondition:
		if reasonOf(st) == ReasonKeyReused {
			return reused
		}
	}
	return final
}

// reasonOf returns the reason of st's ErrorInfo in Domain, or "".
func reasonOf(st *status.Status) string {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == Domain {
			return info.GetReason()
		}
	}
	return ""
}

// hint returns the delay st's google.rpc.RetryInfo asks for, clamped to
// [0, limit], and whether it has one.
func hint(st *status.Status, limit time.Duration) (time.Duration, bool) {
	for _, d := range st.Details() {
		info, ok := d.(*errdetails.RetryInfo)
		if !ok || info.GetRetryDelay() == nil {
			continue
		}
		delay := info.GetRetryDelay().AsDuration() // saturates on overflow
		return min(max(delay, 0), limit), true
	}
	return 0, false
}

// delay is how long to wait before retry n (1 before the second attempt)
// after st: the server's RetryInfo, clamped to maxHint and never jittered
// shorter, or idem.Backoff(n, base, maxDelay).
func delay(st *status.Status, n int, base, maxDelay, maxHint time.Duration) time.Duration {
	if d, ok := hint(st, maxHint); ok {
		return d
	}
	return idem.Backoff(n, base, maxDelay)
}

// budget is the interceptor's retry budget, a token bucket with the
// rules and defaults of idem.BudgetOptions. Safe for concurrent use.
type budget struct {
	opts   idem.BudgetOptions
	mu     sync.Mutex
	tokens int
}

func newBudget(o idem.BudgetOptions) *budget {
	if o.Capacity == 0 {
		o.Capacity = 500
	}
	if o.RetryCost <= 0 {
		o.RetryCost = 5
	}
	if o.TimeoutCost <= 0 {
		o.TimeoutCost = 10
	}
	if o.SuccessRefund <= 0 {
		o.SuccessRefund = 1
	}
	return &budget{opts: o, tokens: o.Capacity}
}

// take removes the cost of one retry (after a timeout, if timeout) and
// reports whether the bucket could pay it.
func (b *budget) take(timeout bool) (cost int, ok bool) {
	if b.opts.Capacity < 0 {
		return 0, true
	}
	cost = b.opts.RetryCost
	if timeout {
		cost = b.opts.TimeoutCost
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tokens < cost {
		return 0, false
	}
	b.tokens -= cost
	return cost, true
}

// refund puts n tokens back, up to the capacity.
func (b *budget) refund(n int) {
	if b.opts.Capacity < 0 || n <= 0 {
		return
	}
	b.mu.Lock()
	b.tokens += min(n, b.opts.Capacity-b.tokens)
	b.mu.Unlock()
}
