// This file holds the transport layer: Client.Transport and
// Client.HTTPClient, which give SDKs built on net/http keys, journaling and
// retries, and attemptTransport, the RoundTripper under the retry engine
// that gives each attempt its own deadline.

package idem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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
// writing the request, waiting for the headers and reading the body (it
// ends when the body is closed). It does not pass CloseIdleConnections on:
// retryablehttp calls it whenever a call gives up, and the pool is shared
// by every call of the Client (see the retry engine's departures, in
// retry.go).
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
	ctx, cancel := context.WithTimeout(r.Context(), t.timeout)
	resp, err := t.rt.RoundTrip(r.WithContext(ctx))
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
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
