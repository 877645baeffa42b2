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

// readResponse reads resp's body whole. A response that has no body
// whatever its Content-Length says (to HEAD, or 1xx, 204, 304) reads as
// empty.
func (c *Client) readResponse(resp *http.Response) ([]byte, error) {
	size := resp.ContentLength
	if !bodyAllowed(resp) {
		size = 0
	}
	return readAtMost(resp.Body, size, c.opts.MaxResponseBody)
}

// bodyAllowed reports whether resp may carry a body (RFC 9110, 6.4.1).
func bodyAllowed(resp *http.Response) bool {
	s := resp.StatusCode
	return !(resp.Request != nil && resp.Request.Method == http.MethodHead) &&
		s >= 200 && s != http.StatusNoContent && s != http.StatusNotModified
}

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
			e.StatusCode, e.Header, e.Body, e.whole = cl.status, cl.header, c.errorBody(cl.body), cl.body
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
	write := c.journal.update // lazy: if it is lost, the server replays the outcome
	if refused(op) {
		write = c.journal.updateNow // the server stores no refusal: lost, Resume would resend it
	}
	if err := write(op); err != nil && c.opts.Logger != nil {
		c.opts.Logger.Warn("idem: could not journal an outcome; the operation will be resumed and replayed",
			"key", op.Key, "error", err)
	}
}

// refused reports whether op's record is a refusal for want of credentials
// (401, 403, 407, not a replay): the server turned the request away before
// running it, so the operation's outcome is still unknown (an earlier
// attempt may have run). It is recorded as failed, so Resume leaves it
// alone, but a call with the same key continues it.
func refused(op *Operation) bool {
	if op.State != Failed || op.Result == nil || op.Result.Replayed {
		return false
	}
	s := op.Result.StatusCode
	return s == http.StatusUnauthorized || s == http.StatusForbidden || s == http.StatusProxyAuthRequired
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

// attemptTransport bounds each attempt with its own deadline: the dial,
// writing the request, waiting for the headers and reading the body (it
// ends when the body is closed). It does not expose CloseIdleConnections,
// so retryablehttp, which calls it when it gives up, cannot empty the
// connection pool.
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
