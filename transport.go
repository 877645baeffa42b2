// This file holds the transport layer: Client.Transport and
// Client.HTTPClient, which give SDKs built on net/http keys, journaling and
// retries, and attemptTransport, the RoundTripper under the retry engine
// that gives each attempt its own deadline, under the context attempts
// gives it.

package idem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemhq/idem/internal/key"
)

// Transport returns an http.RoundTripper that sends POST and PATCH
// requests, and any request already carrying the key header, through
// [Client.Do]: SDKs built on net/http get keys, journaling and retries
// without code changes. Other requests go straight to Options.Transport, as
// they are: idem adds no timeout to them (a long download or a stream is
// the caller's to bound).
//
// A final answer, or the last response of an operation that ran out of
// retries, budget or time (a 503, say), is returned as an *http.Response
// with a nil error, never both; Idempotent-Replayed tells a replay apart.
// So is the server's answer that the key was reused for a different
// request (Do's ErrKeyReused). The response's Request is a clone of the
// request with the key header set as it was sent, minted or not, so the
// caller can learn the operation's key:
// idem.ParseKey(resp.Request.Header.Get("Idempotency-Key")) (or the
// header Options.Header names). With Options.BodyKey the key is in the
// body, which the journal keeps; Request is then req as it was, so put the
// key in the body yourself (DeriveKey) when you need to know it.
// Any other failure returns the *Error, even if a status had arrived: a
// body over Options.MaxResponseBody, a context that ended while the body
// was read. The operation stays pending in the journal whenever Do would
// have returned an error.
//
// Do not put another retrying layer on top (an SDK's own retries, or
// go-retryablehttp): each of its retries is a new request to Transport,
// and without a key header a new operation under a new key. Turn its
// retries off, or set the key yourself (DeriveKey from your own IDs), so
// that its retries continue one operation. And keep requests whose bodies
// carry secrets (an OAuth token request) off this transport: the journal
// stores bodies as they are sent.
//
// Do does not follow redirects: an operation's redirect response is its
// answer. HTTPClient does not follow them for operations either. An
// http.Client of your own over Transport would, copying the key header to
// the new URL, where the journal refuses it (ErrKeyReused): the key is
// bound to the first URL.
func (c *Client) Transport() http.RoundTripper { return roundTripper{c} }

// HTTPClient returns an *http.Client whose transport is c.Transport(). It
// follows redirects of requests that go straight through (a GET, say), and
// returns those of operations to the caller.
func (c *Client) HTTPClient() *http.Client {
	return &http.Client{
		Transport: c.Transport(),
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if c.isOperation(via[0]) {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
}

type roundTripper struct{ c *Client }

// isOperation reports whether the RoundTripper sends req through Do: a
// POST or PATCH, or any request carrying the key header.
func (c *Client) isOperation(req *http.Request) bool {
	return req.Method == http.MethodPost || req.Method == http.MethodPatch ||
		c.opts.Header != "" && req.Header.Get(c.opts.Header) != ""
}

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	c := t.c
	if !c.isOperation(req) {
		return c.opts.Transport.RoundTrip(req) // not idem's: its own timeouts
	}
	resp, err := c.Do(req)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.StatusCode != 0 && lastResponseIsAnswer(err) && !e.partial {
			return httpResponse(c.sentRequest(req, e.Key), e.StatusCode, e.Header, e.whole), nil
		}
		return nil, err
	}
	if resp.Truncated {
		// Answered from the journal, which kept only part of the body:
		// passing it off as the whole would be wrong.
		e := (&Operation{Method: req.Method, u: req.URL, Key: resp.Key, secrets: c.secrets}).error(
			fmt.Errorf("%w: the journal kept %d bytes of this answer's body (MaxJournalBody)", ErrBodyTooLarge, len(resp.Body)), 0)
		e.StatusCode, e.Header, e.Body = resp.StatusCode, resp.Header, c.errorBody(resp.Body)
		return nil, e
	}
	return httpResponse(c.sentRequest(req, resp.Key), resp.StatusCode, resp.Header, resp.Body), nil
}

// sentRequest returns a clone of req carrying the key header as the
// operation sent it, for the response's Request field. With a body key it
// is a clone of req as it is.
func (c *Client) sentRequest(req *http.Request, k string) *http.Request {
	sent := req.Clone(req.Context())
	if c.opts.Header == "" {
		return sent
	}
	if c.opts.QuoteKey {
		k = key.Quote(k)
	}
	sent.Header.Set(c.opts.Header, k)
	return sent
}

// lastResponseIsAnswer reports whether an operation that ended in err
// ended on a whole response the caller may have: retries, budget or time
// ran out after a retryable status, the server said not to retry, or the
// server said the key was reused.
// A body over the limit, a cancelled context or a failed hook are errors,
// even when a status had arrived.
func lastResponseIsAnswer(err error) bool {
	return errors.Is(err, ErrRetriesExhausted) || errors.Is(err, ErrBudgetExhausted) ||
		errors.Is(err, ErrDeadline) || errors.Is(err, ErrKeyReused) || errors.Is(err, ErrServerSaidNoRetry)
}

func httpResponse(req *http.Request, status int, h http.Header, body []byte) *http.Response {
	if h == nil {
		h = make(http.Header)
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// attemptTransport bounds each attempt with its own deadline: the dial,
// writing the request, waiting for the headers and reading the body. The
// retry engine's requests carry the attempt's context (an attemptCtx, see
// attempts): RoundTrip starts its clock, and the call ends it once it has
// read the body (call.checkRetry). Any other request gets a
// context.WithTimeout that ends when its body is closed.
//
// It does not pass CloseIdleConnections on: retryablehttp calls it
// whenever a call gives up, and the pool is shared by every call of the
// Client (see the retry engine's departures, in send.go).
//
// A response that comes with an error (http.RoundTripper forbids it, and
// some transports do it all the same) is a transport error: its body is
// closed, so its connection is not leaked, and the response is dropped.
// net/http's Client, under the retry engine, would only log and ignore it.
type attemptTransport struct {
	rt      http.RoundTripper
	timeout time.Duration
}

func (t attemptTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	a, ok := r.Context().(*attemptCtx)
	if !ok {
		return t.roundTripWithTimeout(r)
	}
	a.begin(t.timeout)
	resp, err := t.rt.RoundTrip(r)
	if err != nil {
		closeBody(resp)
		a.end()
		return nil, err
	}
	return resp, nil
}

// roundTripWithTimeout is RoundTrip for a request that does not carry an
// attempt's context.
func (t attemptTransport) roundTripWithTimeout(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(r.Context(), t.timeout)
	resp, err := t.rt.RoundTrip(r.WithContext(ctx))
	if err != nil {
		closeBody(resp)
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

func closeBody(resp *http.Response) {
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
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

// attempts keeps time for the attempts of one call. Each attempt runs
// under an attemptCtx of its own: the call's context, with its values,
// cancelled when the call's context is, when the attempt has run its
// timeout, or when the call ends the attempt, whichever comes first. That
// is what context.WithTimeout would give; attempts give it for fewer
// allocations, a call's allocations being most of what idem adds to a
// request (BenchmarkPost):
//
//   - One timer serves the call, re-armed as each attempt begins, where
//     WithTimeout makes one for each attempt.
//   - The call's context is watched once for the call (and not at all
//     when it cannot be cancelled), not once for each attempt.
//   - A context derived from an attempt's, as net/http's Transport derives
//     one for every request, learns of its end through the attempt's
//     AfterFunc method, which the context package uses for any context
//     that has one, instead of a map of children.
//   - An attempt's client trace (whose WroteRequest counts net/http's
//     silent resends) is its context's value under httptrace's key, with
//     no context.WithValue of its own, unless the call's context carries
//     a trace already: then httptrace composes the two.
//   - The first attempt's context is part of the call. A retry's is made
//     when the retry is decided (call.nextAttempt), so that no context an
//     attempt ran under is used again: net/http may still hold one after
//     the attempt, its dial and write loops outliving RoundTrip.
//
// The timer and the watch cancel whichever attempt is current. A timer
// that fires late, for an attempt already over, finds the current
// attempt's deadline not reached, or no deadline yet, and leaves it be.
//
// Only the call's goroutine calls init, next, begin, end and close.
type attempts struct {
	parent  context.Context // the call's
	compose bool            // parent carries a trace of its own (or httptrace's key is unknown)

	cur     atomic.Pointer[attemptCtx] // the attempt running, or about to, or the last
	timer   *time.Timer
	unwatch func() bool // stops the watch on parent
	first   attemptCtx
}

// init readies the attempts of a call made under ctx, and returns the
// first attempt's context.
func (as *attempts) init(ctx context.Context) *attemptCtx {
	as.parent = ctx
	as.compose = traceKey == nil || httptrace.ContextClientTrace(ctx) != nil
	if ctx.Done() != nil {
		as.unwatch = context.AfterFunc(ctx, as.cancelled)
	}
	return as.current(&as.first)
}

// next returns a new attempt's context, the current one from now on.
func (as *attempts) next() *attemptCtx { return as.current(new(attemptCtx)) }

func (as *attempts) current(a *attemptCtx) *attemptCtx {
	a.as, a.parent = as, as.parent
	a.trace.WroteRequest = func(httptrace.WroteRequestInfo) { a.wrote.Add(1) }
	if as.compose {
		a.parent = httptrace.WithClientTrace(as.parent, &a.trace)
	}
	as.cur.Store(a)
	if err := as.parent.Err(); err != nil {
		a.cancel(err) // else the watch sees a as current when it fires
	}
	return a
}

// close ends the call's attempts: the timer is stopped, the watch too,
// and the current attempt's context is cancelled.
func (as *attempts) close() {
	if as.timer != nil {
		as.timer.Stop()
	}
	if as.unwatch != nil {
		as.unwatch()
	}
	if a := as.cur.Load(); a != nil {
		a.cancel(context.Canceled)
	}
}

// expire is the timer's: it cancels the current attempt if its deadline
// has passed.
func (as *attempts) expire() {
	if a := as.cur.Load(); a != nil && a.pastDeadline(time.Now()) {
		a.cancel(context.DeadlineExceeded)
	}
}

// cancelled is the watch's: the call's context is done.
func (as *attempts) cancelled() {
	if a := as.cur.Load(); a != nil {
		a.cancel(as.parent.Err())
	}
}

// traceKey is the key under which httptrace keeps a context's
// ClientTrace, learned by asking httptrace for the trace of a context
// that notes the key it is asked for, and checked by looking a trace up
// under it. It is nil if either failed (or the key could not be a
// context's): then every attempt's context derives from
// httptrace.WithClientTrace.
var traceKey = func() any {
	p := &keyProbe{Context: context.Background()}
	httptrace.ContextClientTrace(p)
	if p.key == nil || !reflect.TypeOf(p.key).Comparable() {
		return nil
	}
	t := new(httptrace.ClientTrace)
	if httptrace.ContextClientTrace(context.WithValue(context.Background(), p.key, t)) != t {
		return nil
	}
	return p.key
}()

type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Value(k any) any {
	p.key = k
	return nil
}

// An attemptCtx is the context.Context of one attempt (see attempts).
// Its Err is context.DeadlineExceeded when the attempt ran out of time,
// the call's context's Err when that ended first, and context.Canceled
// when the call ended the attempt. It is safe for concurrent use.
//
// Its client trace counts the attempt's writes: net/http's write loop
// may report a write after RoundTrip has returned, and the attempt's own
// counter keeps such a write from being counted in the next attempt.
type attemptCtx struct {
	as     *attempts
	parent context.Context // the call's, with trace composed if attempts.compose
	trace  httptrace.ClientTrace
	wrote  atomic.Int32 // requests written, as trace counts them

	mu       sync.Mutex
	deadline time.Time     // zero until the attempt begins
	done     chan struct{} // made by the first Done
	err      error
	funcs    []func()  // AfterFunc's, each nil once stopped; nil once cancelled
	buf      [1]func() // funcs' first: the one net/http's context registers
}

// begin starts the attempt's clock: its deadline is timeout from now.
func (a *attemptCtx) begin(timeout time.Duration) {
	a.mu.Lock()
	if a.deadline.IsZero() {
		a.deadline = time.Now().Add(timeout)
	}
	a.mu.Unlock()
	as := a.as
	if as.timer == nil {
		as.timer = time.AfterFunc(timeout, as.expire)
	} else {
		as.timer.Reset(timeout)
	}
}

// end ends the attempt, as a WithTimeout context's CancelFunc would: its
// clock stops and its context is cancelled.
func (a *attemptCtx) end() {
	if as := a.as; as.cur.Load() == a && as.timer != nil {
		as.timer.Stop()
	}
	a.cancel(context.Canceled)
}

func (a *attemptCtx) pastDeadline(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.deadline.IsZero() && !now.Before(a.deadline)
}

// cancel makes a done with err, unless it is done already, and runs the
// functions AfterFunc registered. Each cancels a context derived from a
// (the context package's, the only caller of AfterFunc): they run on
// this goroutine, once a's lock is released, as the context package
// cancels its own children.
func (a *attemptCtx) cancel(err error) {
	a.mu.Lock()
	if a.err != nil {
		a.mu.Unlock()
		return
	}
	a.err = err
	if a.done != nil {
		close(a.done)
	}
	funcs := a.funcs
	a.funcs = nil
	a.mu.Unlock()
	for _, f := range funcs {
		if f != nil {
			f()
		}
	}
}

// Deadline returns the attempt's deadline, or the call's context's if
// that is earlier; before the attempt begins, the call's context's.
func (a *attemptCtx) Deadline() (time.Time, bool) {
	d, ok := a.parent.Deadline()
	a.mu.Lock()
	own := a.deadline
	a.mu.Unlock()
	if own.IsZero() || ok && d.Before(own) {
		return d, ok
	}
	return own, true
}

func (a *attemptCtx) Done() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done == nil {
		if a.err != nil {
			return closedChan
		}
		a.done = make(chan struct{})
	}
	return a.done
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (a *attemptCtx) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// Value returns the attempt's client trace under httptrace's key, and the
// call's context's values under any other.
func (a *attemptCtx) Value(k any) any {
	if !a.as.compose && k == traceKey {
		return &a.trace
	}
	return a.parent.Value(k)
}

// AfterFunc arranges for f to run once a is done, and returns a function
// that stops it, reporting whether it did (context.AfterFunc's contract).
// The context package calls it to tie a context derived from a to a's
// end. f runs at once, on a goroutine of its own, if a is done already:
// the context package calls AfterFunc holding the derived context's lock,
// which f takes.
func (a *attemptCtx) AfterFunc(f func()) (stop func() bool) {
	a.mu.Lock()
	if a.err != nil {
		a.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	if a.funcs == nil {
		a.funcs = a.buf[:0]
	}
	i := len(a.funcs)
	a.funcs = append(a.funcs, f)
	a.mu.Unlock()
	return func() bool { return a.stop(i) }
}

func (a *attemptCtx) stop(i int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.funcs == nil || a.funcs[i] == nil {
		return false // run, or stopped before
	}
	a.funcs[i] = nil
	return true
}

func (a *attemptCtx) String() string { return "idem attempt context" }
