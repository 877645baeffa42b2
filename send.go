// This file holds the attempts of one call: send runs them on
// go-retryablehttp, with the retry rules of retry.go deciding after each
// one, until an answer or a reason to stop, and returns that end to
// Client.run, which alone journals it (client.go).

package idem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/idemhq/idem/internal/key"
)

// A call is one operation's attempts, from its first until an answer or a
// reason to stop. classify and next (retry.go) decide after each attempt;
// go-retryablehttp runs the loop: it makes the attempts, waits, and calls
// our hooks, set on a retryablehttp.Client that serves one call at a time
// (see hooks): CheckRetry (call.checkRetry, which asks next), Backoff
// (the wait next chose), RetryMax (Options.MaxAttempts less one),
// PrepareRetry (Options.PrepareRequest), ErrorHandler
// (PassthroughErrorHandler: call.end makes the error). Its logger is
// off; idem logs through Options.Logger. Each attempt runs under a
// context of its own that bounds it (see attempts, in transport.go).
//
// Five of idem's rules cannot be said in those hooks as retryablehttp
// means them. This is the one place that says where the adapter departs,
// and why:
//
//   - A response is an answer only once its whole body has arrived, and
//     the last response's body is kept for Error.Body. So checkRetry
//     reads the body, and a body cut off counts as a failed attempt
//     (TestDoBodyCutOffIsRetried, TestTransportPassesOnWholeBodies).
//     retryablehttp's ResponseHandler runs only after CheckRetry has
//     called a response final, and it drains a retried one's body away.
//   - No wait starts that would end after the context's deadline, and no
//     retry is sent that could reach the server after the key's retention
//     (TestNoWaitPastTheDeadline, TestRetriesStopAtTheKeysRetention). Both
//     need the wait before deciding, and Backoff cannot stop the loop; so
//     the wait is chosen in checkRetry, by next, and Backoff returns it.
//   - Attempts are counted as written to the wire: net/http resends a
//     request with an idempotency key once on its own when a reused
//     keep-alive connection turns out dead (TestDoCountsSilentResends).
//     Each attempt's WroteRequest trace counts them (see attemptCtx: a
//     write that ends after its attempt is not counted in the next), and
//     next stops at Options.MaxAttempts counted so; RetryMax, which
//     counts loop turns, never stops the loop first.
//   - A call that gives up must not close the connections other calls are
//     using: retryablehttp calls its http.Client's CloseIdleConnections
//     whenever it gives up, and the pool is the Client's, shared by every
//     call. attemptTransport does not pass that method on
//     (TestGivingUpKeepsThePool).
//   - The request's body is the call's, not retryablehttp's: it rewinds a
//     body it was given by making a reader and a wrapper for each
//     attempt, and its request wrapper and the body's closures cost
//     allocations of their own. The call gives retryablehttp a request
//     without a body of its own to rewind, sets the first attempt's body
//     itself, and a retry's when the retry is decided (nextAttempt), with
//     the request's GetBody for net/http's silent resends.
type call struct {
	c      *Client
	origin origin
	op     *Operation
	rpc    string    // op's gRPC method, for the Observer's events (set in Client.do)
	own    Operation // op, when the call made it (not a journaled one)
	resp   Response  // the answer, returned by pointer
	ctx    context.Context

	// The request retryablehttp sends, the first attempt's, the attempts'
	// contexts, and the first attempt's body (see newRequestBody).
	req     retryablehttp.Request
	first   http.Request
	timing  attempts
	reqBody bytes.Reader

	// With a journal, the key's lock, owned for the whole call, and
	// whether its gate is held: it is, but while the call waits between
	// attempts (see keyLocks).
	lock  keyLock
	gated bool

	// The request every attempt starts from, before PrepareRequest: each
	// attempt gets a copy of it, so that what the hook changed on one
	// attempt is not there on the next (see call.prepareRetry).
	header http.Header
	url    *url.URL

	writes   int32 // by the last attempt: 1, more if net/http resent it
	keyHdr   [1]string
	attempts int
	retries  int
	// The budget: the retry decided on and not sent yet, and what the
	// last retry sent cost.
	unsent   reservation
	lastCost int
	answered bool
	wait     time.Duration

	status   int // last response
	respHdr  http.Header
	body     []byte
	replayed bool  // the last response is a replay (see call.isReplayed)
	hint     *bool // the last response's retry hint (see retryHint)
	err      error // last transport error
	reason   error // why the loop stopped without a final answer
}

// retainedUntil returns the last instant an attempt of op may reach the
// server: the retention op was journaled with, or the client's current
// KeyRetention if that is shorter. It is zero for an operation that is not
// journaled (it has no creation time).
func (c *Client) retainedUntil(op *Operation) time.Time {
	if op.CreatedAt.IsZero() {
		return time.Time{}
	}
	until := op.CreatedAt.Add(c.opts.KeyRetention)
	if op.ExpiresAt.Before(until) {
		until = op.ExpiresAt
	}
	return until
}

// sent is how a call's attempts ended: the final answer, or, when resp is
// nil, the error that says why they stopped without one (err.Err is the
// reason: ErrExpired, ErrRetriesExhausted, ...). Client.run journals it.
type sent struct {
	resp *Response
	err  *Error
}

// send makes op's attempts until a final answer or a reason to stop, and
// returns which. It writes nothing to the journal.
func (c *Client) send(ctx context.Context, cl *call, op *Operation, header http.Header) sent {
	cl.op = op
	if until := c.retainedUntil(op); !until.IsZero() && tooLate(time.Now(), c.opts.AttemptTimeout, until) {
		cl.reason = ErrExpired
		return cl.end(nil, nil)
	}
	defer cl.timing.close()
	if err := c.newRequest(ctx, cl, op, header); err != nil {
		return sent{err: op.error(err, 0)}
	}
	h := hookPool.Get().(*hooks)
	h.cl, h.rc.HTTPClient, h.rc.RetryMax = cl, c.hc, c.opts.MaxAttempts-1
	resp, err := h.rc.Do(&cl.req)
	h.cl, h.rc.HTTPClient = nil, nil
	hookPool.Put(h)
	if resp != nil {
		resp.Body.Close()
	}
	cl.settleBudget()
	return cl.end(resp, err)
}

// hooks are retryablehttp's hooks for one call at a time: a
// retryablehttp.Client whose CheckRetry, Backoff and PrepareRetry are
// bound, once, to the methods of a hooks, which hand each call on to the
// call in cl. Binding the call's own methods cost three allocations a
// call. retryablehttp calls its hooks only within Do, so send puts a
// hooks back in the pool once Do has returned, cl cleared: nothing can
// reach it after that, unlike the attempts' traces, bodies and contexts,
// which net/http may still hold (those are never reused).
type hooks struct {
	cl *call
	rc retryablehttp.Client
}

var hookPool = sync.Pool{New: func() any {
	h := new(hooks)
	h.rc = retryablehttp.Client{
		CheckRetry:   h.checkRetry,
		Backoff:      h.backoff,
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
		PrepareRetry: h.prepareRetry,
	}
	return h
}}

func (h *hooks) checkRetry(_ context.Context, resp *http.Response, err error) (bool, error) {
	return h.cl.checkRetry(resp, err)
}

// backoff is retryablehttp's Backoff: the wait checkRetry chose.
func (h *hooks) backoff(time.Duration, time.Duration, int, *http.Response) time.Duration {
	return h.cl.wait
}

func (h *hooks) prepareRetry(r *http.Request) error { return h.cl.prepareRetry(r) }

// newRequestBody returns a reader of an attempt's body, the operation's
// bytes, which it never changes. Each attempt has one of its own: net/http
// may still be writing the last attempt's when the next one begins. It is
// an io.NopCloser over a *bytes.Reader, which net/http knows to be in
// memory: it writes the body with the headers, where for another reader
// it sends the headers first, in a write of their own.
func newRequestBody(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// getBody is the request's GetBody, with which net/http sends the body
// again on a fresh connection (a silent resend).
func (cl *call) getBody() (io.ReadCloser, error) { return newRequestBody(cl.op.Body), nil }

// nextAttempt gives the retry checkRetry decided on a context and a body
// of its own (see attempts and newRequestBody). It comes before the wait, so
// that retryablehttp's wait watches the retry's context, which ends only
// with the call's, not the last attempt's, which has ended.
func (cl *call) nextAttempt() {
	r := cl.req.Request.WithContext(cl.timing.next())
	if len(cl.op.Body) > 0 {
		r.Body = newRequestBody(cl.op.Body)
	}
	cl.req.Request = r
}

// newRequest builds the request every attempt of op sends, and applies
// PrepareRequest to the first attempt's.
func (c *Client) newRequest(ctx context.Context, cl *call, op *Operation, header http.Header) error {
	u := op.u
	if u == nil {
		var err error
		if u, err = url.Parse(op.URL); err != nil {
			return fmt.Errorf("idem: bad URL: %v", err)
		}
	}
	// A copy of the map, its values shared but capped: a transport that
	// appends to a value (which http.RoundTripper forbids, and some do)
	// copies it first instead of writing into the caller's array.
	// PrepareRequest is given a copy of its own (see call.prepare).
	h := maps.Clone(header)
	for k, vs := range h {
		h[k] = vs[:len(vs):len(vs)]
	}
	if h == nil {
		h = make(http.Header, 1)
	}
	if c.opts.Header != "" { // else the key is in the body (Options.BodyKey)
		cl.keyHdr[0] = op.Key
		if c.opts.QuoteKey {
			cl.keyHdr[0] = key.Quote(op.Key)
		}
		h[c.opts.Header] = cl.keyHdr[:]
	}
	cl.header, cl.url, cl.ctx = h, u, ctx
	cl.first = *(&http.Request{ // part of the call: no request of its own
		Method:     op.Method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     h,
		Host:       op.Host,
	}).WithContext(cl.timing.init(ctx))
	if len(op.Body) > 0 {
		cl.reqBody.Reset(op.Body)
		cl.first.Body, cl.first.GetBody, cl.first.ContentLength = io.NopCloser(&cl.reqBody), cl.getBody, int64(len(op.Body))
	}
	cl.req = retryablehttp.Request{Request: &cl.first}
	return cl.prepare(&cl.first)
}

// prepare readies an attempt's request: it starts from the request as
// newRequest built it (PrepareRequest may change the header, the URL and
// the Host, and neither the caller's URL nor the last attempt's changes
// may leak into this one), applies PrepareRequest, and checks
// Options.RequiredHeaders.
func (cl *call) prepare(r *http.Request) error {
	c := cl.c
	if c.prepare != nil {
		r.Header = make(http.Header, len(cl.header)+1)
		for k, vs := range cl.header {
			r.Header[k] = vs[:len(vs):len(vs)]
		}
		u := *cl.url
		r.URL, r.Host = &u, cl.op.Host
		if err := c.prepare(r); err != nil {
			return err
		}
	}
	for _, name := range c.opts.RequiredHeaders {
		if len(r.Header[name]) == 0 {
			return fmt.Errorf("%w: %s", ErrMissingHeader, name)
		}
	}
	return nil
}

// prepareRetry is retryablehttp's PrepareRetry, called before each retry
// once its wait is over: it takes the key's gate back, stops if the
// journal no longer holds the operation pending (see stillPending), and
// readies the request (see call.prepare).
func (cl *call) prepareRetry(r *http.Request) error {
	if err := cl.stillPending(); err != nil {
		return err
	}
	if err := cl.prepare(r); err != nil {
		return err
	}
	cl.lastCost = cl.unsent.Spend()
	return nil
}

// stillPending takes the key's gate back after a wait, and reports, for a
// journaled operation, whether the journal still holds it pending: Abandon
// may have come in the wait. If not, the error matches ErrAbandoned (or
// ErrExpired, ErrNoOperation), and no retry is sent.
func (cl *call) stillPending() error {
	if cl.lock == nil {
		return nil
	}
	cl.closeGate()
	op, err := cl.c.journal.get(cl.op.Key)
	switch {
	case err != nil:
		return err
	case op == nil:
		return &movedError{key: cl.op.Key, from: Pending, state: stateNone}
	case op.State != Pending:
		return &movedError{key: cl.op.Key, from: Pending, state: op.State}
	}
	return nil
}

// openGate lets the key's gate go, so that Abandon can come in while the
// call waits between attempts; closeGate takes it back. Both do nothing
// without a journal.
func (cl *call) openGate() {
	if cl.lock != nil && cl.gated {
		cl.gated = false
		cl.lock.open()
	}
}

func (cl *call) closeGate() {
	if cl.lock != nil && !cl.gated {
		cl.lock.close()
		cl.gated = true
	}
}

// checkRetry is retryablehttp's CheckRetry: called after every attempt, it
// reads the whole response body, ends the attempt, classifies it, asks
// next, and takes the budget's tokens for a retry.
func (cl *call) checkRetry(resp *http.Response, err error) (bool, error) {
	c, ctx := cl.c, cl.ctx
	// net/http resends a request carrying Idempotency-Key on its own when
	// a reused keep-alive connection turns out dead; count every write.
	a := cl.timing.cur.Load()
	cl.writes = max(1, a.wrote.Load())
	cl.attempts += int(cl.writes)
	cl.status, cl.respHdr, cl.body, cl.replayed, cl.hint = 0, nil, nil, false, nil
	if err == nil {
		cl.status, cl.respHdr = resp.StatusCode, resp.Header
		cl.body, err = c.readResponse(resp)
		resp.Body.Close()
		resp.Body = http.NoBody
		if err != nil && !errors.Is(err, ErrBodyTooLarge) {
			// A cut-off body is no response.
			resp, cl.status, cl.respHdr, cl.body = nil, 0, nil, nil
		}
	}
	a.end()
	cl.err = nil
	if !errors.Is(err, ErrBodyTooLarge) {
		cl.err = err
	}
	if resp != nil {
		cl.replayed = cl.isReplayed()
		cl.hint = retryHint(cl.respHdr, c.opts.RetryHints)
	}
	out := classify(resp, err, cl.replayed, cl.hint)
	s := retryState{
		outcome:        out,
		err:            err,
		ctxErr:         ctx.Err(),
		attempts:       cl.attempts,
		maxAttempts:    c.opts.MaxAttempts,
		maxRetryAfter:  c.opts.MaxRetryAfter,
		attemptTimeout: c.opts.AttemptTimeout,
	}
	if out == outRetryable || out == outFailed || out == outTimeout {
		// Only these can come to a retry, the one decision of next that
		// reads the time: a final answer reads no clock.
		s.now, s.retainUntil = time.Now(), c.retainedUntil(cl.op)
		s.backoff = Backoff(cl.retries+1, c.opts.BaseDelay, c.opts.MaxDelay)
		if resp != nil {
			s.retryAfter = resp.Header.Get("Retry-After")
		}
		s.deadline, _ = ctx.Deadline()
	}
	wait, stop := next(s)
	if stop == nil {
		r, ok := c.budget.reserve(out == outTimeout)
		if !ok {
			stop = ErrBudgetExhausted
			if o := c.opts.Observer; o != nil && o.BudgetExhausted != nil {
				info := BudgetInfo{Method: cl.op.Method, RPCMethod: cl.rpc, Attempt: cl.attempts}
				observe(func() { o.BudgetExhausted(ctx, info) })
			}
		} else {
			cl.unsent = r
		}
	}
	switch stop {
	case nil:
		cl.retries++
		cl.wait = wait
		cl.report(ctx, true)
		if o := c.opts.Observer; o != nil && o.Retry != nil {
			// next waits the server's Retry-After when it can read one.
			_, fromServer := ParseRetryAfter(s.retryAfter, s.now)
			info := RetryInfo{Method: cl.op.Method, RPCMethod: cl.rpc, Attempt: cl.attempts, StatusCode: cl.status, ErrorType: errorType(cl.err),
				Delay: wait, RetryAfter: fromServer}
			observe(func() { o.Retry(ctx, info) })
		}
		if l := c.opts.Logger; l != nil {
			l.Debug("idem: retrying", "key", cl.op.Key, "method", cl.op.Method, "url", cl.op.url(),
				"attempt", cl.attempts, "status", cl.status, "error", err, "wait", wait)
		}
		cl.nextAttempt()
		cl.openGate() // until the wait is over (see prepareRetry)
		return true, nil
	case errAnswered:
		cl.answered = true
		cl.report(ctx, false)
		return false, nil
	}
	cl.reason = stop
	cl.report(ctx, false)
	return false, stop
}

// isReplayed reports whether the last response is a replay: the server's
// Idempotent-Replayed: true, or what Options.IsReplayed recognises.
func (cl *call) isReplayed() bool {
	if isReplayed(cl.respHdr) {
		return true
	}
	f := cl.c.opts.IsReplayed
	return f != nil && f(&Response{StatusCode: cl.status, Header: cl.respHdr, Body: cl.body, Key: cl.op.Key})
}

// settleBudget gives the budget back its tokens once the loop ends: a
// retry that was paid for and never sent (the context ended during its
// wait, PrepareRequest failed, the operation was abandoned) is cancelled,
// an answer on the first attempt puts back SuccessRefund, and one after
// retries what its last retry took. Those are the budget's refunds: a
// retry takes its tokens only once next has allowed it.
func (cl *call) settleBudget() {
	if cl.unsent.b != nil {
		cl.unsent.Cancel()
		return
	}
	if !cl.answered {
		return
	}
	if cl.retries == 0 {
		cl.c.budget.refund(cl.c.opts.Budget.SuccessRefund)
	} else {
		cl.c.budget.refund(cl.lastCost)
	}
}

// report tells Options.OnAttempt and the Observer of the attempt that
// ended; retry says whether it is retried.
func (cl *call) report(ctx context.Context, retry bool) {
	if o := cl.c.opts.Observer; o != nil && o.Attempt != nil {
		info := AttemptInfo{Method: cl.op.Method, RPCMethod: cl.rpc, N: cl.attempts, Sent: int(cl.writes), StatusCode: cl.status, ErrorType: errorType(cl.err), Replayed: cl.replayed}
		observe(func() { o.Attempt(ctx, info) })
	}
	if f := cl.c.opts.OnAttempt; f != nil {
		a := Attempt{
			Key:        cl.op.Key,
			N:          cl.attempts,
			StatusCode: cl.status,
			Err:        cl.err,
			Replayed:   cl.replayed,
			RetryHint:  cl.hint,
			Retry:      retry,
		}
		if retry {
			a.Wait = cl.wait
		}
		f(a)
	}
}

// end turns the loop's end into a final answer, or the error that says
// why there is none.
func (cl *call) end(resp *http.Response, err error) sent {
	c, op := cl.c, cl.op
	cl.closeGate() // the loop may have ended in a wait
	switch {
	case cl.reason != nil:
	case err != nil:
		cl.reason = err // cancelled while waiting, or PrepareRequest failed
	case !cl.answered:
		cl.reason = ErrRetriesExhausted // the loop ended on its own count (RetryMax)
	}
	if cl.reason != nil {
		e := op.error(cl.reason, cl.attempts)
		e.Cause = cl.err
		if cl.status != 0 {
			e.StatusCode, e.Header, e.Body, e.whole = cl.status, cl.respHdr, c.errorBody(cl.body), cl.body
		}
		return sent{err: e}
	}
	cl.resp = Response{
		StatusCode: cl.status,
		Header:     cl.respHdr,
		Body:       cl.body,
		Key:        op.Key,
		Attempts:   cl.attempts,
		Replayed:   cl.replayed,
		RetryHint:  cl.hint,
	}
	return sent{resp: &cl.resp}
}
