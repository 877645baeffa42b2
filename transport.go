package idem

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/idemhq/idem/internal/key"
)

// call is the state of one operation's attempts. retryablehttp runs the
// loop; call makes every decision in it, and does the waiting between
// attempts, so that the policy lives here and retryablehttp stays an
// implementation detail.
type call struct {
	c    *Client
	op   *Operation
	own  Operation // op, when the call made it (not a journaled one)
	resp Response  // the answer, returned by pointer

	trace    httptrace.ClientTrace
	wrote    atomic.Int32 // requests written during the current attempt
	keyHdr   [1]string
	attempts int
	retries  int
	lastCost int
	wait     time.Duration

	status int // last response
	header http.Header
	body   []byte
	err    error // last transport error
	reason error // why the loop stopped without a final answer
}

type callKey struct{}

// newRetrier returns the retryablehttp client shared by all calls of c. Its
// hooks find the call through the request's context.
func (c *Client) newRetrier() *retryablehttp.Client {
	return &retryablehttp.Client{
		HTTPClient:   c.hc,
		RetryMax:     math.MaxInt32, // checkRetry counts attempts itself
		CheckRetry:   checkRetry,
		Backoff:      func(time.Duration, time.Duration, int, *http.Response) time.Duration { return 0 },
		ErrorHandler: passThrough,
		PrepareRetry: c.prepare,
	}
}

// send makes op's attempts until a final answer or a reason to stop.
func (c *Client) send(ctx context.Context, cl *call, op *Operation, header http.Header) (*Response, error) {
	if cl == nil {
		cl = &call{c: c}
	}
	cl.op = op
	cl.trace.WroteRequest = func(httptrace.WroteRequestInfo) { cl.wrote.Add(1) }
	ctx = context.WithValue(httptrace.WithClientTrace(ctx, &cl.trace), callKey{}, cl)
	u := op.u
	if u != nil && c.prepare != nil {
		cp := *u // PrepareRequest may change it; the caller's stays as it was
		u = &cp
	} else if u == nil {
		var err error
		if u, err = url.Parse(op.URL); err != nil {
			return nil, op.error(fmt.Errorf("idem: bad URL: %v", err), 0)
		}
	}
	h := make(http.Header, len(header)+1)
	for k, vs := range header {
		h[k] = vs[:len(vs):len(vs)] // an append in PrepareRequest copies
	}
	cl.keyHdr[0] = op.Key
	if c.opts.QuoteKey {
		cl.keyHdr[0] = key.Quote(op.Key)
	}
	h[c.opts.Header] = cl.keyHdr[:]
	hreq := (&http.Request{
		Method:     op.Method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     h,
		Host:       op.Host,
	}).WithContext(ctx)
	req, err := retryablehttp.FromRequest(hreq)
	if err == nil && len(op.Body) > 0 {
		err = req.SetBody(op.Body)
	}
	if err != nil {
		return nil, op.error(fmt.Errorf("idem: bad request: %v", err), 0)
	}
	if c.prepare != nil {
		if err := c.prepare(req.Request); err != nil {
			return nil, op.error(err, 0)
		}
	}
	resp, err := c.retrier.Do(req)
	if resp != nil {
		resp.Body.Close()
	}
	return cl.finish(resp, err)
}

// readResponse reads resp's body whole. Where the attempt timeout is the
// transport's ResponseHeaderTimeout, which ends with the headers, a timer
// bounds the body's reading too: when it fires it closes the body, and
// the attempt fails with a timeout.
func (c *Client) readResponse(resp *http.Response) ([]byte, error) {
	if c.bodyTimeout <= 0 {
		return readAtMost(resp.Body, resp.ContentLength, c.opts.MaxResponseBody)
	}
	bt := bodyTimers.Get().(*bodyTimer)
	bt.arm(resp.Body, c.bodyTimeout)
	b, err := readAtMost(resp.Body, resp.ContentLength, c.opts.MaxResponseBody)
	fired, stopped := bt.disarm()
	if stopped {
		// The timer's function will not run for this arming: safe to
		// reuse. Otherwise it may still be on its way, and would close
		// the next user's body; that timer is dropped.
		bodyTimers.Put(bt)
	}
	if fired && err != nil { // a body read whole just in time stands
		return nil, bodyTimeoutError{c.bodyTimeout}
	}
	return b, err
}

// bodyTimer closes a response body if it is not read in time. Timers are
// pooled, so bounding a body costs no allocation.
type bodyTimer struct {
	t     *time.Timer
	mu    sync.Mutex
	body  io.Closer // the body being read; nil when disarmed
	fired bool
}

var bodyTimers = sync.Pool{New: func() any {
	bt := new(bodyTimer)
	bt.t = time.AfterFunc(time.Hour, bt.fire)
	bt.t.Stop()
	return bt
}}

func (bt *bodyTimer) fire() {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	if bt.body != nil { // not disarmed meanwhile
		bt.body.Close()
		bt.fired = true
	}
}

func (bt *bodyTimer) arm(body io.Closer, d time.Duration) {
	bt.mu.Lock()
	bt.body, bt.fired = body, false
	bt.mu.Unlock()
	bt.t.Reset(d)
}

// disarm stops the timer. It reports whether the timer closed the body,
// and whether it stopped the timer before its function started: if not,
// the function may still run, late, and finds nothing to close.
func (bt *bodyTimer) disarm() (fired, stopped bool) {
	stopped = bt.t.Stop()
	bt.mu.Lock()
	defer bt.mu.Unlock()
	bt.body = nil
	return bt.fired, stopped
}

// bodyTimeoutError is a response body that did not arrive within the
// attempt timeout. It is a net.Error whose Timeout is true.
type bodyTimeoutError struct{ d time.Duration }

func (e bodyTimeoutError) Error() string {
	return fmt.Sprintf("idem: response body not read within the attempt timeout (%v)", e.d)
}
func (bodyTimeoutError) Timeout() bool   { return true }
func (bodyTimeoutError) Temporary() bool { return true }

func passThrough(resp *http.Response, err error, _ int) (*http.Response, error) { return resp, err }

// checkRetry is called after every attempt. It reads the whole response
// body (so a body cut off by a broken connection counts as a failed
// attempt), decides whether to retry, and if so waits before saying yes.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	cl := ctx.Value(callKey{}).(*call)
	c := cl.c
	// net/http resends a request carrying Idempotency-Key on its own when
	// a reused keep-alive connection turns out dead; count every write.
	cl.attempts += max(1, int(cl.wrote.Swap(0)))
	cl.err = nil
	if err == nil {
		cl.status, cl.header = resp.StatusCode, resp.Header
		cl.body, err = c.readResponse(resp)
		resp.Body.Close() // also ends the attempt's timeout
		resp.Body = http.NoBody
		if errors.Is(err, ErrBodyTooLarge) {
			return cl.stop(ErrBodyTooLarge)
		}
	}
	cl.err = err
	if err != nil { // no response, or a cut-off body, which is none
		cl.status, cl.header, cl.body = 0, nil, nil
	}
	if err == nil && (isReplayed(resp.Header) || !isRetryableStatus(resp.StatusCode)) {
		cl.report(false) // a final answer, even if ctx ended meanwhile
		return false, nil
	}
	if ctx.Err() != nil {
		return cl.stop(ctx.Err())
	}
	timeout := false
	if err != nil {
		if !retryableError(err) {
			return cl.stop(err)
		}
		timeout = isTimeout(err)
	}
	if cl.attempts >= c.opts.MaxAttempts {
		return cl.stop(ErrRetriesExhausted)
	}
	cost, ok := c.budget.take(timeout)
	if !ok {
		return cl.stop(ErrBudgetExhausted)
	}
	now := time.Now()
	wait := retryWait(cl.retries+1, resp, &c.opts, now)
	if dl, ok := ctx.Deadline(); ok && dl.Sub(now) < wait {
		c.budget.refund(cost)
		return cl.stop(ErrDeadline)
	}
	if !cl.op.CreatedAt.IsZero() && c.pastRetention(cl.op, now.Add(wait+c.opts.AttemptTimeout)) {
		// The server may have forgotten the key by the time this retry
		// arrives (within an attempt timeout of being sent), and would run
		// the operation again.
		c.budget.refund(cost)
		return cl.stop(ErrExpired)
	}
	cl.lastCost, cl.wait = cost, wait
	cl.retries++
	cl.report(true)
	if l := c.opts.Logger; l != nil {
		l.Debug("idem: retrying", "key", cl.op.Key, "method", cl.op.Method, "url", cl.op.url(),
			"attempt", cl.attempts, "status", cl.status, "error", err, "wait", wait)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true, nil
	case <-ctx.Done():
		return cl.stop(ctx.Err())
	}
}

func (cl *call) stop(reason error) (bool, error) {
	cl.reason = reason
	cl.report(false)
	return false, reason
}

func (cl *call) report(retry bool) {
	if f := cl.c.opts.OnAttempt; f != nil {
		f(Attempt{
			Key:        cl.op.Key,
			N:          cl.attempts,
			StatusCode: cl.status,
			Err:        cl.err,
			Replayed:   cl.status != 0 && isReplayed(cl.header),
			Retry:      retry,
			Wait:       cl.wait,
		})
	}
}

// finish turns the loop's end into the caller's answer and journals a final
// response.
func (cl *call) finish(resp *http.Response, err error) (*Response, error) {
	c, op := cl.c, cl.op
	if cl.reason == nil && err != nil {
		cl.reason = err // cancelled while waiting, or PrepareRequest failed
	}
	if cl.reason != nil {
		if errors.Is(cl.reason, ErrExpired) && c.journal != nil {
			c.expire(op)
		}
		e := op.error(cl.reason, cl.attempts)
		e.Cause = cl.err
		if cl.status != 0 {
			e.StatusCode, e.Header, e.Body = cl.status, cl.header, c.errorBody(cl.body)
		}
		return nil, e
	}
	if cl.retries == 0 {
		c.budget.refund(c.opts.Budget.SuccessRefund)
	} else {
		c.budget.refund(cl.lastCost)
	}
	replayed := isReplayed(resp.Header)
	if c.journal != nil {
		c.record(op, cl, replayed)
	}
	cl.resp = Response{
		StatusCode: cl.status,
		Header:     cl.header,
		Body:       cl.body,
		Key:        op.Key,
		Attempts:   cl.attempts,
		Replayed:   replayed,
	}
	return c.answer(op, &cl.resp)
}

// record writes the final answer to the journal. The write is lazy: if it
// is lost in a crash the operation is resumed and the server replays it.
func (c *Client) record(op *Operation, cl *call, replayed bool) {
	body, truncated := cl.body, false
	if len(body) > c.opts.MaxJournalBody {
		body, truncated = body[:c.opts.MaxJournalBody], true
	}
	body = bytes.Clone(body) // the caller owns cl.body and may change it
	h := cl.header.Clone()
	delete(h, "Set-Cookie")
	op.State = Failed
	if cl.status < 400 {
		op.State = Completed
	}
	op.UpdatedAt = time.Now()
	op.Attempts = cl.attempts
	op.Result = &Result{StatusCode: cl.status, Header: h, Body: body, Truncated: truncated, Replayed: replayed}
	if err := c.journal.update(op); err != nil && c.opts.Logger != nil {
		c.opts.Logger.Warn("idem: could not journal an outcome; the operation will be resumed and replayed",
			"key", op.Key, "error", err)
	}
}

// retryableError reports whether a transport error may go away on another
// attempt. Certificate failures and malformed requests will not.
func retryableError(err error) bool {
	var (
		unknownCA *x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
	)
	if errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify) {
		return false
	}
	msg := err.Error()
	return !strings.Contains(msg, "unsupported protocol scheme") &&
		!strings.Contains(msg, "invalid header") &&
		!strings.Contains(msg, "stopped after")
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// withAttemptTimeout bounds each attempt's wait for its response headers.
// An *http.Transport is cloned with ResponseHeaderTimeout set, which costs
// nothing per request, and bodyTimeout, for the body, is d; any other
// RoundTripper gets a per-attempt context, which covers the body too.
// Neither exposes CloseIdleConnections, so retryablehttp, which calls it
// when it gives up, cannot empty the connection pool.
func withAttemptTimeout(rt http.RoundTripper, d time.Duration) (_ http.RoundTripper, bodyTimeout time.Duration) {
	if t, ok := rt.(*http.Transport); ok {
		t = t.Clone()
		if t.ResponseHeaderTimeout == 0 || t.ResponseHeaderTimeout > d {
			t.ResponseHeaderTimeout = d
		}
		return roundTripOnly{t}, d
	}
	return attemptTransport{rt, d}, 0
}

type roundTripOnly struct{ rt http.RoundTripper }

func (t roundTripOnly) RoundTrip(r *http.Request) (*http.Response, error) { return t.rt.RoundTrip(r) }

// attemptTransport bounds each attempt with its own deadline, which ends
// when the response body is closed.
type attemptTransport struct {
	rt      http.RoundTripper
	timeout time.Duration
}

func (t attemptTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(r.Context(), t.timeout)
	resp, err := t.rt.RoundTrip(r.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
